// The console's scoreboard arithmetic (Sources/RecordServer/Console/scoreboard.js) against the
// cases in Fixtures/scoreboard-cases.json, which ScorebookTests.ConsoleScoreboardAgreementTests
// checks the CLI's own code against: both must compute what is written there.
// Run: node --test Tests/ConsoleScripts/scoreboard.test.js
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const vm = require('node:vm');

const root = path.join(__dirname, '..', '..');

const source = fs.readFileSync(path.join(root, 'Sources/RecordServer/Console/scoreboard.js'), 'utf8');

// The script as the browser runs it, a classic script (here in this realm, so its arrays compare
// with the test's).
vm.runInThisContext(source, { filename: 'scoreboard.js' });
const { Scoreboard } = globalThis;
const cases = JSON.parse(fs.readFileSync(path.join(root, 'Fixtures/scoreboard-cases.json'), 'utf8'));

test('the script needs nothing of the page and leaves one name behind, Scoreboard', () => {
  const context = vm.createContext({});
  vm.runInContext(source, context);
  assert.deepEqual(Object.keys(context), ['Scoreboard']);
});

test('numbers are written as a person writes them, as the CLI prints them', () => {
  assert.ok(cases.numbers.length > 0);
  for (const { value, text } of cases.numbers) assert.equal(Scoreboard.formatNumber(value), text, `${value}`);
  assert.equal(Scoreboard.formatNumber(0.1 + 0.2), '0.3');
});

test('win rates and averages are written as scorebook standings writes them', () => {
  assert.ok(cases.standingsFormats.length > 0);
  for (const format of cases.standingsFormats) {
    assert.equal(Scoreboard.winRateText(format.winRate), format.winRateText, `${format.winRate}`);
    assert.equal(Scoreboard.averageText(format.averageScore), format.averageText, `${format.averageScore}`);
  }
});

test('each match ranks its players with ties, low-score-wins games and a winner only when finished', () => {
  const book = Scoreboard.compute(cases.book.records);
  const expected = cases.book.matches;
  assert.deepEqual(book.matches.map((match) => match.record.recordName).sort(), Object.keys(expected).sort());
  for (const match of book.matches) {
    const want = expected[match.record.recordName];
    const rows = match.result.rows.map((row) => ({
      rank: row.rank, player: row.player, person: row.person, name: row.name, total: Scoreboard.formatNumber(row.total),
    }));
    assert.deepEqual(rows, want.rows, match.record.recordName);
    assert.equal(match.result.winner, want.winner, match.record.recordName);
  }
  // Newest first: the match being played is the one people look for.
  const starts = book.matches.map((match) => match.startDate);
  assert.deepEqual(starts, starts.slice().sort((a, b) => b - a));
});

test('standings count finished matches only, best first, names compared without case', () => {
  const book = Scoreboard.compute(cases.book.records);
  const rows = book.standings.map((row) => ({
    person: row.person, name: row.name, played: row.played, won: row.won,
    winRate: Scoreboard.winRateText(row.winRate), averageScore: Scoreboard.averageText(row.averageScore),
  }));
  assert.deepEqual(rows, cases.book.standings);
});

test('rounds put each round in a row, scores without a round last, players in seat order', () => {
  const book = Scoreboard.compute(cases.book.records);
  const tie = book.matches.find((match) => match.record.recordName === 'match-tie');
  assert.deepEqual(tie.rounds.columns.map((column) => column.name), ['Ann Lee', 'Bob', 'cy']);
  assert.deepEqual(tie.rounds.rows.map((row) => row.round), [1, 2, 3, null]);
  assert.deepEqual([...tie.rounds.rows[1].values.entries()], [['player-tie-ann', 6.5], ['player-tie-bob', 4]]);
  assert.deepEqual([...tie.rounds.rows[3].values.entries()], [['player-tie-cy', 12]]);
});

test('records that reference nothing, or something absent, neither throw nor count', () => {
  const records = [
    ...cases.book.records,
    { recordName: 'player-orphan', recordType: 'Player', fields: { seat: { value: 1, type: 'INT64' } } },
    { recordName: 'score-orphan', recordType: 'Score', fields: { player: { value: { recordName: 'player-gone' }, type: 'REFERENCE' }, value: { value: 99, type: 'DOUBLE' } } },
    { recordName: 'match-of-nothing', recordType: 'Match', fields: { startDate: { value: 1, type: 'TIMESTAMP' } } },
  ];
  const book = Scoreboard.compute(records);
  assert.equal(book.matches.length, Object.keys(cases.book.matches).length);
  assert.deepEqual(book.standings.map((row) => row.person), cases.book.standings.map((row) => row.person));
});
