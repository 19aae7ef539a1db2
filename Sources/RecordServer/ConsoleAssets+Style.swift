extension ConsoleAssets {
    /// The console's style sheet.
    static let style = #"""
:root {
  --ink: #1d2430;
  --muted: #667085;
  --line: #e3e7ee;
  --paper: #ffffff;
  --ground: #f4f6fa;
  --accent: #2f5bd3;
  --good: #1f7a4d;
  --warn: #a15c00;
  --bad: #b42318;
  color-scheme: light;
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif;
  color: var(--ink);
  background: var(--ground);
}
* { box-sizing: border-box; }
[hidden] { display: none !important; }
body { margin: 0; }
code { font: 0.85em ui-monospace, "DejaVu Sans Mono", monospace; }
h1, h2, h3, h4 { margin: 0; line-height: 1.2; }
.muted { color: var(--muted); }
.small { font-size: 0.85em; }
button {
  font: inherit; border: 1px solid var(--line); background: var(--paper); color: var(--ink);
  border-radius: 6px; padding: 0.3em 0.8em; cursor: pointer;
}
button:hover { border-color: var(--accent); }
button:focus-visible, input:focus-visible, select:focus-visible, summary:focus-visible { outline: 2px solid var(--accent); outline-offset: 2px; }

.bar {
  display: flex; align-items: center; justify-content: space-between; gap: 1em;
  padding: 0.7em 1.4em; background: #17202f; color: #fff;
}
.bar h1 { font-size: 1.15em; letter-spacing: 0.01em; }
.bar .subtle { font-weight: 400; opacity: 0.7; }
.session { display: flex; align-items: center; gap: 0.8em; font-size: 0.9em; }
.session .user { opacity: 0.8; font-family: ui-monospace, monospace; font-size: 0.85em; max-width: 22em; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.session button { background: transparent; color: #fff; border-color: rgba(255, 255, 255, 0.35); }
.live-status { border-radius: 999px; padding: 0.15em 0.7em; font-weight: 600; font-size: 0.85em; background: #3a4457; }
.live-status::before { content: "●"; margin-right: 0.4em; }
.live-status[data-state="live"] { background: #1c5c3c; }
.live-status[data-state="live"]::before { color: #5ee39a; }
.live-status[data-state="reconnecting"] { background: #7a4200; }
.live-status[data-state="reconnecting"]::before { color: #ffb74d; }

.signin { display: flex; justify-content: center; padding: 4em 1em; }
.signin form {
  width: min(30em, 100%); background: var(--paper); border: 1px solid var(--line); border-radius: 12px;
  padding: 1.6em 1.8em; display: flex; flex-direction: column; gap: 0.5em; box-shadow: 0 6px 24px rgba(23, 32, 47, 0.06);
}
.signin p { margin: 0 0 0.4em; color: var(--muted); }
.signin input, .signin select { font: inherit; padding: 0.45em 0.6em; border: 1px solid var(--line); border-radius: 6px; width: 100%; }
.signin .advanced { color: var(--muted); font-size: 0.9em; }
.signin .advanced[open] { display: flex; flex-direction: column; gap: 0.4em; }
.signin button[type="submit"] { margin-top: 0.6em; background: var(--accent); color: #fff; border-color: var(--accent); padding: 0.5em; }
.error { color: var(--bad); background: #fdecea; border: 1px solid #f5c2bd; border-radius: 6px; padding: 0.5em 0.7em; margin: 0.4em 0 0; }

.console { display: grid; grid-template-columns: 15em minmax(0, 1fr); min-height: calc(100vh - 3em); }
.books { border-right: 1px solid var(--line); background: var(--paper); padding: 1.2em 0.8em; }
.books h2 { font-size: 0.8em; text-transform: uppercase; letter-spacing: 0.08em; color: var(--muted); margin: 0 0.5em 0.6em; }
.book-list { list-style: none; margin: 0; padding: 0; display: flex; flex-direction: column; gap: 0.2em; }
.book-list .empty { color: var(--muted); padding: 0.5em; font-size: 0.9em; }
.book-link { width: 100%; text-align: left; border: 1px solid transparent; display: flex; flex-direction: column; gap: 0.15em; padding: 0.5em 0.6em; }
.book-link[aria-current="page"] { background: #eaf0ff; border-color: #c9d6fb; }
.book-title { font-weight: 600; overflow-wrap: anywhere; }
.book-meta { display: flex; gap: 0.5em; align-items: center; font-size: 0.8em; color: var(--muted); }
.role { display: inline-block; font-size: 0.78em; font-weight: 600; border-radius: 4px; padding: 0.05em 0.45em; background: #eef1f6; color: var(--ink); }
.role-owner { background: #e6f4ec; color: var(--good); }
.role-read-write { background: #eaf0ff; color: var(--accent); }
.role-read-only { background: #fff4e0; color: var(--warn); }

.content { padding: 1.2em 1.6em 3em; min-width: 0; }
.notes { display: flex; flex-direction: column; gap: 0.4em; margin-bottom: 0.8em; }
.note { display: flex; justify-content: space-between; align-items: center; gap: 1em; padding: 0.5em 0.8em; border-radius: 8px; background: #fff8e6; border: 1px solid #f3d9a4; }
.note.deleted { background: #fdecea; border-color: #f5c2bd; }
.note .dismiss { border: none; background: transparent; font-size: 1.1em; line-height: 1; padding: 0 0.3em; }

.book-head { margin-bottom: 1em; }
.book-head h2 { font-size: 1.5em; overflow-wrap: anywhere; }
.book-facts, .participants { margin: 0.3em 0 0; color: var(--muted); font-size: 0.9em; }
.book-grid { display: grid; grid-template-columns: minmax(0, 5fr) minmax(0, 4fr); gap: 1.2em; align-items: start; }
@media (max-width: 60em) { .book-grid { grid-template-columns: minmax(0, 1fr); } .console { grid-template-columns: minmax(0, 1fr); } .books { border-right: none; border-bottom: 1px solid var(--line); } }
section > h3 { font-size: 1em; margin: 0 0 0.6em; }
.column-main, .column-side { display: flex; flex-direction: column; gap: 1.2em; min-width: 0; }
.column-side > section, .match, .records {
  background: var(--paper); border: 1px solid var(--line); border-radius: 10px; padding: 1em 1.1em;
}
.matches { display: flex; flex-direction: column; gap: 0.9em; }
.matches > h3 { margin-bottom: 0; }
.match.playing { border-left: 4px solid var(--accent); }
.match.finished { border-left: 4px solid var(--good); }
.match-head { display: flex; justify-content: space-between; align-items: baseline; gap: 1em; }
.match-head h4 { font-size: 1.15em; overflow-wrap: anywhere; }
.status { font-size: 0.8em; font-weight: 600; color: var(--muted); text-transform: uppercase; letter-spacing: 0.05em; }
.match.playing .status { color: var(--accent); }
.match.finished .status { color: var(--good); }
.when, .match-notes, .location, .changed { margin: 0.25em 0; color: var(--muted); font-size: 0.88em; overflow-wrap: anywhere; }
.winner { font-weight: 600; margin: 0.5em 0; }

table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 0.35em 0.5em; border-bottom: 1px solid var(--line); vertical-align: middle; overflow-wrap: anywhere; }
th { font-size: 0.75em; letter-spacing: 0.06em; color: var(--muted); font-weight: 600; white-space: nowrap; }
.number { text-align: right; font-variant-numeric: tabular-nums; }
.scoreboard { margin-top: 0.6em; }
.scoreboard td.rank { width: 3.5em; font-weight: 600; }
.scoreboard td.total { font-weight: 600; font-size: 1.05em; }
.scoreboard tr.winner-row td { background: #f0faf4; }
.scoreboard tr.winner-row td.rank::after { content: " ★"; color: #d19a00; }
td.player .who { display: inline-flex; align-items: center; gap: 0.5em; }
.rounds { font-size: 0.9em; margin-top: 0.4em; }
.rounds .total-row td { font-weight: 700; border-top: 2px solid var(--line); }

details > summary { cursor: pointer; color: var(--accent); font-size: 0.88em; margin-top: 0.4em; }
.raw-group .raw-record { margin-top: 0.6em; }
.raw-name { margin: 0 0 0.2em; font-size: 0.85em; overflow-wrap: anywhere; }
.raw-fields { font-size: 0.8em; background: #fafbfd; }
.raw-fields th { font-size: 1em; letter-spacing: 0; width: 9em; color: var(--ink); }
.raw-fields td.type { color: var(--muted); width: 7em; font-family: ui-monospace, monospace; font-size: 0.9em; }
.raw-fields td.value { font-family: ui-monospace, monospace; }
.raw-fields tr.system th, .raw-fields tr.system td { color: var(--muted); }

.avatar { display: inline-flex; align-items: center; justify-content: center; border-radius: 50%; flex: none; object-fit: cover; background: #dbe4ff; color: #233b8a; font-weight: 700; }
.avatar.small { width: 1.8em; height: 1.8em; font-size: 0.75em; }
.avatar.large { width: 2.6em; height: 2.6em; font-size: 0.95em; }
.people-list, .games-list { list-style: none; margin: 0; padding: 0; display: flex; flex-direction: column; gap: 0.6em; }
.person { display: flex; gap: 0.7em; align-items: flex-start; }
.person-text { display: flex; flex-direction: column; min-width: 0; }
.person .name, .game .name { font-weight: 600; overflow-wrap: anywhere; }
.person .email { color: var(--muted); font-size: 0.88em; }
.person .changed, .game .changed { margin: 0; font-size: 0.8em; }
.photos { display: flex; flex-wrap: wrap; gap: 0.6em; margin: 0.6em 0; }
.photo { margin: 0; width: 9em; }
.photo img, .photo .no-photo { width: 9em; height: 6.5em; object-fit: cover; border-radius: 6px; border: 1px solid var(--line); display: flex; align-items: center; justify-content: center; color: var(--muted); font-size: 0.8em; background: var(--ground); }
.photo figcaption { font-size: 0.75em; color: var(--muted); }
.records { margin-top: 1.2em; }
"""#
}
