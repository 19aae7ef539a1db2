/// The console's files (CONTRACT §7), compiled into the daemon as text: nothing to find on disk
/// at run time and no build step. `Console` serves them; the page's `{{SCRIPT}}` and `{{STYLE}}`
/// become the versioned URLs of the other two.
enum ConsoleAssets {
    /// The page: markup only. Its script and style sheet are separate files, so the
    /// Content-Security-Policy needs no inline script or style.
    static let page = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Scorebook console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="{{STYLE}}">
<script src="{{SCRIPT}}" defer></script>
</head>
<body>
<header class="bar">
  <h1>Scorebook <span class="subtle">console</span></h1>
  <div id="session" class="session" hidden>
    <span id="live-status" class="live-status" data-state="connecting">connecting…</span>
    <span id="user" class="user"></span>
    <button id="sign-out" type="button">Sign out</button>
  </div>
</header>
<main>
  <section id="signin" class="signin">
    <form id="signin-form" method="post" autocomplete="off">
      <h2>Sign in</h2>
      <p>Paste a user token (from <code>scorebookd user create</code> or <code>scorebookd user token</code>).
        It is kept in this browser tab only, and forgotten when you sign out or close the tab.</p>
      <label for="token">Token</label>
      <input id="token" name="token" type="password" spellcheck="false" autocomplete="off">
      <details class="advanced">
        <summary>Container and environment</summary>
        <label for="container">Container</label>
        <input id="container" name="container" value="iCloud.scorebook" spellcheck="false">
        <label for="environment">Environment</label>
        <select id="environment" name="environment">
          <option value="production" selected>production</option>
          <option value="development">development</option>
        </select>
      </details>
      <button id="signin-button" type="submit">Sign in</button>
      <p id="signin-error" class="error" role="alert" hidden></p>
    </form>
  </section>
  <section id="console" class="console" hidden>
    <nav class="books" aria-label="Books">
      <h2>Books</h2>
      <ul id="book-list" class="book-list"></ul>
      <p id="shared-note" class="muted small"></p>
    </nav>
    <div class="content">
      <div id="notes" class="notes" aria-live="polite"></div>
      <div id="book" class="book"></div>
    </div>
  </section>
</main>
</body>
</html>
"""#
}
