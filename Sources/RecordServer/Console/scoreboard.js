// The console's scoreboard arithmetic: match results, rounds and standings computed from a book's
// records exactly as the scorebook CLI computes them (MatchResult, MatchRounds, Standings and
// NumberText in Sources/Scorebook). The daemon stores records and knows nothing of games, so the
// page computes these itself; this file holds all of it, as pure functions of the records, so
// that it is tested on its own (Tests/ConsoleScripts, with node) against the same cases the
// CLI's code is tested on (Fixtures/scoreboard-cases.json).
//
// A classic script, no module: the daemon serves it in front of console.js as one file, and it
// leaves one name behind, `Scoreboard`.
'use strict';

var Scoreboard = (() => {
  // MARK: Reading records (as changes/zone answers them)

  function field(record, name) {
    const entry = record && record.fields && record.fields[name];
    return entry ? entry.value : undefined;
  }

  /// A REFERENCE field's record name (or a bare string).
  function reference(record, name) {
    const value = field(record, name);
    if (value && typeof value === 'object' && typeof value.recordName === 'string') return value.recordName;
    return typeof value === 'string' ? value : undefined;
  }

  function numberField(record, name) {
    const value = field(record, name);
    return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
  }

  function stringField(record, name) {
    const value = field(record, name);
    return typeof value === 'string' ? value : undefined;
  }

  /// A person's "First Last", or the first name alone (as the CLI writes it).
  function personName(person) {
    const first = stringField(person, 'firstName') || '';
    const last = stringField(person, 'lastName');
    return last ? `${first} ${last}` : first;
  }

  // MARK: Numbers as a person writes them (the CLI's NumberText)

  /// The value rounded to 12 significant digits, where sums of decimal scores collect their
  /// binary noise.
  function rounded(value) {
    if (!Number.isFinite(value) || value === 0) return value;
    return Number(value.toPrecision(12));
  }

  /// A number as the CLI prints it: `42`, `0.3` for 0.1 + 0.2, `2.5`, `1e-07`.
  function formatNumber(value) {
    const number = rounded(value);
    if (Math.round(number) === number && Math.abs(number) < 1e15) return String(number === 0 ? 0 : number);
    if (!Number.isFinite(number)) return Number.isNaN(number) ? 'nan' : number > 0 ? 'inf' : '-inf';
    // Swift's shortest form: exponent notation below 1e-4 and from 1e16, with two exponent digits.
    const [mantissa, exponentText] = number.toExponential().split('e');
    const exponent = Number(exponentText);
    if (exponent < -4 || exponent >= 16) {
      return `${mantissa}e${exponent < 0 ? '-' : '+'}${String(Math.abs(exponent)).padStart(2, '0')}`;
    }
    return String(number);
  }

  /// Swift's `rounded()`: halves away from zero.
  const roundHalfAway = (value) => Math.sign(value) * Math.round(Math.abs(value));

  /// A win rate as `scorebook standings` prints it: `67%`.
  const winRateText = (winRate) => `${roundHalfAway(winRate * 100)}%`;

  /// An average score as `scorebook standings` prints it: two decimals at most, `-` for none.
  const averageText = (average) => (average === null ? '-' : formatNumber(roundHalfAway(average * 100) / 100));

  // MARK: The scorebook

  /// MatchResult.compute: totals, ranks (equal totals share a rank: 1, 1, 3) and the winner, who
  /// exists only once the match is finished and nobody shares the best total.
  function matchResult(finished, lowScoreWins, players, names, scores) {
    const totals = new Map();
    for (const score of scores) {
      const player = reference(score, 'player');
      totals.set(player, (totals.get(player) || 0) + (numberField(score, 'value') || 0));
    }
    const better = (a, b) => (lowScoreWins ? a < b : a > b);
    const rows = players.map((player) => ({
      player: player.recordName, person: reference(player, 'person'), name: names.get(reference(player, 'person')),
      seat: numberField(player, 'seat') || 0, total: totals.get(player.recordName) || 0, rank: 0,
    }));
    for (const row of rows) row.rank = 1 + rows.filter((other) => better(other.total, row.total)).length;
    rows.sort((a, b) => a.rank - b.rank || a.seat - b.seat || (a.player < b.player ? -1 : a.player > b.player ? 1 : 0));
    const leaders = rows.filter((row) => row.rank === 1);
    return { rows, winner: finished && leaders.length === 1 ? leaders[0].person : null };
  }

  /// MatchRounds.compute: one row per round (no round last), one column per player in seat order.
  function matchRounds(players, names, scores) {
    const columns = players.slice().sort((a, b) => (numberField(a, 'seat') || 0) - (numberField(b, 'seat') || 0)
      || (a.recordName < b.recordName ? -1 : 1)).map((p) => ({ player: p.recordName, name: names.get(reference(p, 'person')) }));
    const byRound = new Map();
    for (const score of scores) {
      const round = numberField(score, 'round');
      const key = round === undefined ? null : round;
      if (!byRound.has(key)) byRound.set(key, new Map());
      const values = byRound.get(key);
      const player = reference(score, 'player');
      values.set(player, (values.get(player) || 0) + (numberField(score, 'value') || 0));
    }
    const rounds = [...byRound.keys()].sort((a, b) => (a === null ? 1 : 0) - (b === null ? 1 : 0) || (a || 0) - (b || 0));
    return { columns, rows: rounds.map((round) => ({ round, values: byRound.get(round) })) };
  }

  /// Standings.compute: finished matches only; played, won, win rate, average total; best first.
  function standings(people, matches) {
    const rows = people.map((person) => {
      let played = 0;
      let won = 0;
      const totals = [];
      for (const match of matches) {
        if (!match.finished) continue;
        const row = match.result.rows.find((r) => r.person === person.recordName);
        if (!row) continue;
        played += 1;
        totals.push(row.total);
        if (match.result.winner === person.recordName) won += 1;
      }
      return {
        person: person.recordName, record: person, name: personName(person), played, won,
        winRate: played > 0 ? won / played : 0,
        averageScore: totals.length ? totals.reduce((a, b) => a + b, 0) / totals.length : null,
      };
    });
    rows.sort((a, b) => {
      if (a.won !== b.won) return b.won - a.won;
      if (a.winRate !== b.winRate) return b.winRate - a.winRate;
      if (a.played !== b.played) return b.played - a.played;
      const left = a.name.toLowerCase();
      const right = b.name.toLowerCase();
      if (left !== right) return left < right ? -1 : 1;
      return a.person < b.person ? -1 : a.person > b.person ? 1 : 0;
    });
    return rows;
  }

  /// People, games, matches (with results, rounds, pictures and place; newest first) and
  /// standings of a book's records.
  function compute(records) {
    const byType = {};
    for (const record of records) (byType[record.recordType] = byType[record.recordType] || []).push(record);
    const all = (type) => byType[type] || [];
    const people = all('Person');
    const games = all('Game');
    const personByName = new Map(people.map((p) => [p.recordName, p]));
    const gameByName = new Map(games.map((g) => [g.recordName, g]));
    const players = all('Player').filter((p) => reference(p, 'match') && reference(p, 'person'));
    const scores = all('Score').filter((s) => reference(s, 'player'));
    const group = (list, name) => {
      const map = new Map();
      for (const record of list) {
        const key = reference(record, name);
        if (!map.has(key)) map.set(key, []);
        map.get(key).push(record);
      }
      return map;
    };
    const playersByMatch = group(players, 'match');
    const scoresByPlayer = group(scores, 'player');
    const imagesByMatch = group(all('MatchImage').filter((r) => reference(r, 'match')), 'match');
    const locationsByMatch = group(all('MatchLocation').filter((r) => reference(r, 'match')), 'match');
    const matches = all('Match').filter((m) => reference(m, 'game')).map((match) => {
      const game = gameByName.get(reference(match, 'game'));
      const lowScoreWins = game ? (numberField(game, 'lowScoreWins') || 0) !== 0 : false;
      const seated = playersByMatch.get(match.recordName) || [];
      const matchScores = seated.flatMap((player) => scoresByPlayer.get(player.recordName) || []);
      const startDate = numberField(match, 'startDate') ?? numberField(match, 'modificationDate');
      const endDate = numberField(match, 'endDate');
      const finished = endDate !== undefined;
      const names = new Map(seated.map((p) => {
        const person = personByName.get(reference(p, 'person'));
        return [reference(p, 'person'), person ? personName(person) : reference(p, 'person')];
      }));
      const result = matchResult(finished, lowScoreWins, seated, names, matchScores);
      // The newest place wins should sync have brought two.
      const locations = (locationsByMatch.get(match.recordName) || []).slice().sort((a, b) => {
        const left = numberField(a, 'modificationDate') || 0;
        const right = numberField(b, 'modificationDate') || 0;
        return left !== right ? right - left : (a.recordName < b.recordName ? 1 : -1);
      });
      return {
        record: match, game, gameName: game ? stringField(game, 'name') || '' : reference(match, 'game'),
        startDate, endDate, finished, result, players: seated, scores: matchScores,
        rounds: matchRounds(seated, names, matchScores), images: imagesByMatch.get(match.recordName) || [],
        location: locations[0],
      };
    });
    // Newest first: the match being played is the one people look for.
    matches.sort((a, b) => (b.startDate || 0) - (a.startDate || 0) || (a.record.recordName < b.record.recordName ? 1 : -1));
    return { people, games, matches, personByName, standings: standings(people, matches) };
  }

  return Object.freeze({
    field, reference, numberField, stringField, personName,
    rounded, formatNumber, roundHalfAway, winRateText, averageText,
    matchResult, matchRounds, standings, compute,
  });
})();
