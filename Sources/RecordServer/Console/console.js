// The Scorebook console: an ordinary client of scorebookd's public API, run in
// the browser. Every request carries `Authorization: Bearer TOKEN`; the token lives in this
// tab's sessionStorage only and never in a URL sent anywhere (the sign-in page's return in the same
// window brings it in the fragment, which is removed at once). Everything from the store is put into the page
// as text (textContent), never as markup.
'use strict';

(() => {
  const KEYS = {
    token: 'scorebook.console.token',
    container: 'scorebook.console.container',
    environment: 'scorebook.console.environment',
    channel: 'scorebook.console.channel',
    book: 'scorebook.console.book',
    invitation: 'scorebook.console.invitation',
  };
  /// The console's own database subscription: one per user, shared by every open console.
  const SUBSCRIPTION_ID = 'scorebook-console';
  const RETRY_FIRST_MS = 250;
  const RETRY_MAX_MS = 2000;
  /// The daemon writes to a stream at least every 10 s (a heartbeat when idle); a stream silent for this long is dead.
  const STREAM_SILENCE_MS = 35000;
  const MAX_NOTES = 8;
  const SHARED_RECHECK_MS = 60000;
  /// How often shared books are listed again: the daemon notifies a participant of every change
  /// in a shared zone but not of its own removal (its notifications stop with its access).
  const SHARED_POLL_MS = 2000;

  const state = {
    session: null, // {token, container, environment, me}
    generation: 0, // bumped at each sign-in and sign-out: late answers of an old session are dropped
    books: new Map(), // key -> book
    openKey: null,
    shared: { available: false, reason: '', checkedAt: 0 },
    detailsOpen: new Map(), // details key -> open
    refreshing: false,
    refreshAgain: false,
    listedOnce: false, // the books were listed at least once in this session
    stream: null, // AbortController of the live event stream
    liveState: 'connecting',
    invitations: [], // the caller's pending invitations, as invitations/list answers them
    invitationsListed: false,
    names: new Map(), // userRecordName -> the user's name: people show by name, never by record name
    namesAsked: new Set(), // record names already looked up (found or not)
  };

  class APIError extends Error {
    constructor(status, code, reason) {
      super(reason || code || `HTTP ${status}`);
      this.status = status;
      this.code = code || '';
    }
  }

  /// The daemon could not be reached (down, restarting, or a proxy saying so).
  class Offline extends Error {}

  // MARK: Small helpers

  const $ = (id) => document.getElementById(id);

  /// An element with attributes and children; strings become text nodes, never markup.
  function el(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name === 'class') node.className = value;
      else if (name === 'text') node.textContent = value;
      else if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
      else node.setAttribute(name, value === true ? '' : String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  // Records and numbers are read and written as the CLI does it, by scoreboard.js (served in front of this file).
  const { field, reference, numberField, stringField, personName, formatNumber, winRateText, averageText } = Scoreboard;

  function initials(person) {
    const name = person ? personName(person) : '';
    // The first letter or digit of the first two words that have one.
    const letters = name.split(/\s+/).map((word) => (word.match(/[\p{L}\p{N}]/u) || [''])[0]).filter(Boolean);
    return letters.slice(0, 2).join('').toUpperCase() || '?';
  }

  const pad = (number) => String(number).padStart(2, '0');

  /// Milliseconds since 1970 as local time with its offset, `2026-11-24 17:12:05 +01:00`.
  function localTime(milliseconds) {
    if (typeof milliseconds !== 'number' || !Number.isFinite(milliseconds)) return '-';
    const date = new Date(milliseconds);
    const offset = -date.getTimezoneOffset();
    const sign = offset >= 0 ? '+' : '-';
    return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} `
      + `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())} `
      + `${sign}${pad(Math.floor(Math.abs(offset) / 60))}:${pad(Math.abs(offset) % 60)}`;
  }

  /// A downloadURL served by this daemon, as a URL of this page's origin (the policy allows
  /// pictures from here only); nil for anything that is not http(s).
  function sameOriginURL(url) {
    try {
      const parsed = new URL(url, window.location.href);
      if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return null;
      return parsed.origin === window.location.origin ? parsed.href : window.location.origin + parsed.pathname + parsed.search;
    } catch (error) {
      return null;
    }
  }

  // MARK: The API

  function apiPath(session, database, operation) {
    return `/database/1/${encodeURIComponent(session.container)}/${encodeURIComponent(session.environment)}/${database}/${operation}`;
  }

  /// POSTs a JSON body to an operation; answers the JSON, or throws APIError / Offline.
  async function call(session, database, operation, body) {
    let response;
    try {
      response = await fetch(apiPath(session, database, operation), {
        method: 'POST',
        headers: { Authorization: `Bearer ${session.token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify(body || {}),
        cache: 'no-store',
        credentials: 'omit',
      });
    } catch (error) {
      throw new Offline('cannot reach scorebookd');
    }
    if (response.status === 502 || response.status === 504) throw new Offline(`the daemon is away (HTTP ${response.status})`);
    let json = null;
    try {
      json = await response.json();
    } catch (error) {
      throw new APIError(response.status, 'BAD_ANSWER', `the daemon answered HTTP ${response.status} without JSON`);
    }
    if (!response.ok) {
      if (response.status === 503) throw new Offline((json && json.reason) || 'the daemon is busy');
      throw new APIError(response.status, json && json.serverErrorCode, json && json.reason);
    }
    return json;
  }

  // MARK: Signing in and out

  function signInMessage(error) {
    if (error instanceof Offline) return `Cannot reach scorebookd at ${window.location.origin}. Is it running?`;
    if (error.code === 'AUTHENTICATION_FAILED') {
      return 'This token was not accepted: it is unknown or has been revoked. Check it and try again.';
    }
    if (error.code === 'AUTHENTICATION_REQUIRED') return 'Enter a token.';
    if (error.code === 'THROTTLED') return 'Too many requests; wait a moment and try again.';
    return `Sign-in failed: ${error.message}`;
  }

  function showSignInError(message) {
    const box = $('signin-error');
    box.textContent = message || '';
    box.hidden = !message;
  }

  async function signIn(token, container, environment, restoring) {
    if (!token) {
      showSignInError('Enter a token.');
      return;
    }
    if (!/^[A-Za-z0-9._-]{1,255}$/.test(container)) {
      showSignInError('The container is 1 to 255 letters, digits, dots, dashes or underscores.');
      return;
    }
    const session = { token, container, environment, me: null };
    const generation = ++state.generation;
    showSignInError('');
    $('signin-button').disabled = true;
    try {
      session.me = (await call(session, 'private', 'users/current', {})).userRecordName;
    } catch (error) {
      if (generation !== state.generation) return;
      $('signin-button').disabled = false;
      if (restoring && error instanceof Offline) {
        // A reload while the daemon is away: keep the tab's token and try again.
        showSignInError(`${signInMessage(error)} Retrying…`);
        setTimeout(() => {
          if (generation === state.generation) signIn(token, container, environment, true);
        }, RETRY_MAX_MS);
        return;
      }
      if (restoring) clearStoredSession();
      showSignInError(signInMessage(error));
      return;
    }
    if (generation !== state.generation) return;
    $('signin-button').disabled = false;
    sessionStorage.setItem(KEYS.token, token);
    sessionStorage.setItem(KEYS.container, container);
    sessionStorage.setItem(KEYS.environment, environment);
    state.session = session;
    state.books = new Map();
    state.listedOnce = false;
    state.shared = { available: false, reason: '', checkedAt: 0 };
    state.openKey = sessionStorage.getItem(KEYS.book);
    state.invitations = [];
    state.invitationsListed = false;
    state.names = new Map();
    state.namesAsked = new Set();
    $('token').value = '';
    $('signin').hidden = true;
    $('console').hidden = false;
    $('session').hidden = false;
    $('user').textContent = '';
    $('user').title = `${container} (${environment})`;
    renderInvitations();
    renderBook();
    setLive('connecting');
    try {
      await learnNames(session, generation, [session.me]);
      showUser();
      // The channel and subscription come first, so nothing committed after the first load is missed.
      await ensureChannel(session, generation);
      await loadBooks(generation);
    } catch (error) {
      if (generation !== state.generation) return;
      reportFailure(error);
    }
    if (generation === state.generation) {
      runStream(session, generation);
      watchSharedBooks(generation);
    }
  }

  /// While shared books are listed and the stream is live, lists the books again every
  /// SHARED_POLL_MS, so a book whose owner removed this user goes (with its note) without a
  /// notification; a refresh asks only for what changed since the last one.
  async function watchSharedBooks(generation) {
    while (generation === state.generation) {
      await sleep(SHARED_POLL_MS);
      if (generation !== state.generation) return;
      const anyShared = [...state.books.values()].some((book) => book.database === 'shared');
      if (anyShared && state.liveState === 'live') scheduleRefresh();
      // Nobody is notified of being invited: the list is asked for again.
      else if (state.liveState === 'live') loadInvitations(generation).catch(() => {});
    }
  }

  function clearStoredSession() {
    for (const key of Object.values(KEYS)) sessionStorage.removeItem(key);
  }

  function signOut(message) {
    state.generation += 1;
    if (state.stream) state.stream.abort();
    state.stream = null;
    state.session = null;
    state.books = new Map();
    state.openKey = null;
    state.listedOnce = false;
    state.detailsOpen = new Map();
    state.invitations = [];
    state.invitationsListed = false;
    clearStoredSession();
    $('book-list').replaceChildren();
    delete $('book-list').dataset.drawn;
    $('book').replaceChildren();
    delete $('book').dataset.drawn;
    $('notes').replaceChildren();
    $('shared-note').textContent = '';
    $('invitation-list').replaceChildren();
    $('invitations').hidden = true;
    $('user').textContent = '';
    $('session').hidden = true;
    $('console').hidden = true;
    $('signin').hidden = false;
    $('signin-button').disabled = false;
    document.title = 'Scorebook console';
    showSignInError(message || '');
    $('token').focus();
  }

  // MARK: Live updates

  function setLive(liveState, detail) {
    state.liveState = liveState;
    const badge = $('live-status');
    badge.dataset.state = liveState;
    badge.textContent = { connecting: 'connecting…', live: 'live', reconnecting: 'reconnecting…' }[liveState] || liveState;
    badge.title = detail || (liveState === 'live' ? 'Changes appear as they are saved' : 'The daemon cannot be reached; retrying');
  }

  /// This tab's notification channel (kept for the tab, so a reload resumes where it was) and the
  /// console's database subscription, which makes every change of the user's books notify it.
  async function ensureChannel(session, generation) {
    let channel = null;
    try {
      channel = JSON.parse(sessionStorage.getItem(KEYS.channel) || 'null');
    } catch (error) {
      channel = null;
    }
    if (!channel || channel.user !== session.me || channel.container !== session.container
      || channel.environment !== session.environment) {
      const created = await call(session, 'tokens', 'create', { apnsEnvironment: 'development' });
      // The courier URL's path on this origin: the page may only talk to its own daemon.
      const url = new URL(created.webcourierURL, window.location.href);
      channel = { user: session.me, container: session.container, environment: session.environment, path: url.pathname, cursor: null };
    }
    const subscription = { subscriptionID: SUBSCRIPTION_ID, subscriptionType: 'database' };
    await call(session, 'private', 'subscriptions/modify', { operations: [{ operationType: 'create', subscription }] });
    try {
      await call(session, 'shared', 'subscriptions/modify', { operations: [{ operationType: 'create', subscription }] });
    } catch (error) {
      if (error instanceof Offline) throw error; // a daemon without a shared database: private books only
    }
    if (generation === state.generation) sessionStorage.setItem(KEYS.channel, JSON.stringify(channel));
    return channel;
  }

  function storedChannel() {
    try {
      return JSON.parse(sessionStorage.getItem(KEYS.channel) || 'null');
    } catch (error) {
      return null;
    }
  }

  /// Reads the courier's event stream with fetch (an EventSource cannot send the Authorization
  /// header), resuming from the last event's id; reconnects with back-off while the daemon is
  /// away, and catches up on every (re)connection.
  async function runStream(session, generation) {
    let delay = RETRY_FIRST_MS;
    while (generation === state.generation) {
      const controller = new AbortController();
      state.stream = controller;
      let silence = null;
      const heard = () => {
        clearTimeout(silence);
        silence = setTimeout(() => controller.abort(), STREAM_SILENCE_MS);
      };
      try {
        const channel = storedChannel() || (await ensureChannel(session, generation));
        const headers = { Authorization: `Bearer ${session.token}`, Accept: 'text/event-stream' };
        if (channel.cursor) headers['Last-Event-ID'] = channel.cursor;
        heard();
        let response;
        try {
          response = await fetch(channel.path, { headers, signal: controller.signal, cache: 'no-store', credentials: 'omit' });
        } catch (error) {
          throw new Offline('the event stream is closed');
        }
        if (generation !== state.generation) return;
        if (response.status === 401) {
          signOut('Your token is no longer accepted (it was revoked?). Sign in again.');
          return;
        }
        if (response.status === 403 || response.status === 404) {
          // The channel is gone (another data directory, say): make a new one.
          sessionStorage.removeItem(KEYS.channel);
          throw new APIError(response.status, 'NOT_FOUND', 'the notification channel is gone');
        }
        if (response.status >= 500 || response.status === 429) throw new Offline(`HTTP ${response.status}`);
        if (!response.ok || !response.body) throw new APIError(response.status, 'BAD_ANSWER', `event stream answered HTTP ${response.status}`);
        setLive('live');
        delay = RETRY_FIRST_MS;
        scheduleRefresh(); // whatever changed while the stream was not open
        await readEvents(response.body, heard, (id) => {
          if (generation !== state.generation) return;
          if (id) {
            const current = storedChannel();
            if (current) {
              current.cursor = id;
              sessionStorage.setItem(KEYS.channel, JSON.stringify(current));
            }
          }
          scheduleRefresh();
        });
      } catch (error) {
        if (generation !== state.generation) return;
        if (error instanceof APIError && error.code === 'AUTHENTICATION_FAILED') {
          signOut('Your token is no longer accepted (it was revoked?). Sign in again.');
          return;
        }
        if (!(error instanceof Offline) && !(error instanceof APIError) && error.name !== 'AbortError' && !(error instanceof TypeError)) {
          console.warn('event stream:', error);
        }
      } finally {
        clearTimeout(silence);
      }
      if (generation !== state.generation) return;
      setLive('reconnecting');
      await sleep(delay + Math.random() * delay * 0.5);
      delay = Math.min(delay * 2, RETRY_MAX_MS);
    }
  }

  /// Server-Sent Events from a byte stream: calls `onEvent(id)` for each event with data.
  async function readEvents(body, onBytes, onEvent) {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    let id = null;
    let data = [];
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      onBytes();
      buffer += decoder.decode(value, { stream: true });
      let newline;
      while ((newline = buffer.search(/\r\n|\r|\n/)) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + (buffer.startsWith('\r\n', newline) ? 2 : 1));
        if (line === '') {
          if (data.length) onEvent(id, data.join('\n'));
          data = [];
          continue;
        }
        if (line.startsWith(':')) continue; // heartbeat
        const colon = line.indexOf(':');
        const name = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? '' : line.slice(colon + 1);
        if (value.startsWith(' ')) value = value.slice(1);
        if (name === 'data') data.push(value);
        else if (name === 'id') id = value;
      }
    }
  }

  /// Coalesces refreshes: one runs at a time, and one more follows if asked meanwhile.
  function scheduleRefresh() {
    if (state.refreshing) {
      state.refreshAgain = true;
      return;
    }
    state.refreshing = true;
    const generation = state.generation;
    (async () => {
      try {
        do {
          state.refreshAgain = false;
          await loadBooks(generation);
        } while (state.refreshAgain && generation === state.generation);
      } catch (error) {
        if (generation === state.generation) reportFailure(error);
      } finally {
        state.refreshing = false;
      }
    })();
  }

  function reportFailure(error) {
    if (error instanceof Offline) {
      setLive('reconnecting');
      // The stream reconnects and refreshes once the daemon answers again.
      if (state.stream) state.stream.abort();
      return;
    }
    if (error instanceof APIError && error.code === 'AUTHENTICATION_FAILED') {
      signOut('Your token is no longer accepted (it was revoked?). Sign in again.');
      return;
    }
    addNote(`Could not load: ${error.message}`, 'error');
  }

  // MARK: Books

  function newBook(database, zoneID) {
    // `version` counts the changes applied, so the view is drawn again only when something changed.
    return { key: bookKey(database, zoneID), database, zoneID, records: new Map(), syncToken: null, loaded: false, share: undefined, version: 0 };
  }

  function bookKey(database, zoneID) {
    return database === 'private' ? `private/${zoneID.zoneName}` : `shared/${zoneID.ownerRecordName}/${zoneID.zoneName}`;
  }

  function bookTitle(book) {
    const title = book.share ? stringField(book.share, 'cloudkit.title') : undefined;
    return title || book.zoneID.zoneName;
  }

  /// Who a user is, by name: you, a participant of the book's share, or a user looked up by
  /// record name (`learnNames`); never the `_…` record name itself.
  function userLabel(book, userRecordName) {
    if (!userRecordName) return 'unknown';
    if (state.session && userRecordName === state.session.me) return 'you';
    const share = book && book.share;
    const everyone = share ? [share.owner, ...(share.participants || [])].filter(Boolean) : [];
    for (const participant of everyone) {
      const identity = participant.userIdentity || participant;
      if (identity.userRecordName === userRecordName && identityName(identity)) return identityName(identity);
    }
    return state.names.get(userRecordName) || 'someone';
  }

  /// A CloudKit user identity's name: its name components, else its email; else what the page
  /// learnt of its record name, never the record name itself.
  function identityName(identity) {
    if (!identity) return '';
    const components = identity.nameComponents || {};
    const name = [components.givenName, components.familyName].filter(Boolean).join(' ');
    return name || (identity.lookupInfo && identity.lookupInfo.emailAddress) || state.names.get(identity.userRecordName) || '';
  }

  /// Looks up by record name the users not yet known by name (`public/users/discover`), so the
  /// page can name them; each is asked once a session.
  async function learnNames(session, generation, recordNames) {
    const unknown = [...new Set(recordNames)].filter((name) => typeof name === 'string' && name && !state.names.has(name)
      && !state.namesAsked.has(name));
    if (!unknown.length) return false;
    for (const name of unknown) state.namesAsked.add(name);
    let users = [];
    try {
      users = (await call(session, 'public', 'users/discover', { lookupInfos: unknown.map((userRecordName) => ({ userRecordName })) })).users || [];
    } catch (error) {
      if (error instanceof Offline) throw error;
      return false; // unnamed people show as "someone"
    }
    if (generation !== state.generation) return false;
    let learnt = false;
    for (const user of users) {
      const components = (user && user.nameComponents) || {};
      const name = [components.givenName, components.familyName].filter(Boolean).join(' ');
      if (user && user.userRecordName && name) {
        state.names.set(user.userRecordName, name);
        learnt = true;
      }
    }
    return learnt;
  }

  /// The signed-in user's name in the bar.
  function showUser() {
    const session = state.session;
    if (!session) return;
    $('user').textContent = state.names.get(session.me) || 'signed in';
  }

  /// The record names of the people a book's page may name: its owner and who wrote its records.
  function peopleOf(book) {
    const names = [book.zoneID.ownerRecordName];
    for (const record of book.records.values()) {
      names.push((record.created || {}).userRecordName, (record.modified || {}).userRecordName);
    }
    return names.filter(Boolean);
  }

  /// owner, read-write or read-only: the zone's owner against users/current, else the caller's
  /// permission in the zone's share.
  function bookRole(book) {
    const me = state.session && state.session.me;
    if (book.database === 'private' || book.zoneID.ownerRecordName === me) return 'owner';
    const share = book.share;
    let participant = share && share.currentUserParticipant;
    if (!participant && share) {
      participant = (share.participants || []).find((p) => p.userIdentity && p.userIdentity.userRecordName === me);
    }
    if (participant && participant.type === 'OWNER') return 'owner';
    if (participant && participant.permission === 'READ_WRITE') return 'read-write';
    if (participant && participant.permission === 'READ_ONLY') return 'read-only';
    return 'shared';
  }

  function ownerLabel(book) {
    if (book.database === 'private') return 'you';
    const share = book.share;
    const owner = share && ((share.owner && (share.owner.userIdentity || share.owner))
      || ((share.participants || []).find((p) => p.type === 'OWNER') || {}).userIdentity);
    return identityName(owner) || state.names.get(book.zoneID.ownerRecordName) || 'someone';
  }

  async function loadShare(session, book) {
    try {
      const answer = await call(session, book.database, 'records/lookup', {
        zoneID: book.zoneID, records: [{ recordName: 'cloudkit.zoneshare' }],
      });
      const entry = answer.records && answer.records[0];
      book.share = entry && !entry.serverErrorCode ? entry : null;
    } catch (error) {
      if (error instanceof Offline) throw error;
      book.share = null;
    }
  }

  /// Lists the books (zones of the private database and, when the daemon serves it, the
  /// shared one), notes the ones that went away, and brings the open book up to date.
  async function loadBooks(generation) {
    const session = state.session;
    if (!session || generation !== state.generation) return;
    const privateZones = (await call(session, 'private', 'zones/list', {})).zones || [];
    let sharedZones = [];
    // A daemon without a shared database is asked again once a minute, not at every change.
    const askShared = state.shared.available || !state.shared.checkedAt || Date.now() - state.shared.checkedAt > SHARED_RECHECK_MS;
    if (askShared) {
      try {
        sharedZones = (await call(session, 'shared', 'zones/list', {})).zones || [];
        state.shared = { available: true, reason: '', checkedAt: Date.now() };
      } catch (error) {
        if (error instanceof Offline) throw error;
        state.shared = { available: false, reason: error.message, checkedAt: Date.now() };
      }
    } else {
      sharedZones = null; // unknown: keep the shared books listed as they are
    }
    if (generation !== state.generation) return;
    const listed = new Map();
    for (const zone of privateZones) {
      if (zone.serverErrorCode || !zone.zoneID || zone.zoneID.zoneName === '_defaultZone') continue;
      listed.set(bookKey('private', zone.zoneID), ['private', zone.zoneID]);
    }
    for (const zone of sharedZones || []) {
      if (zone.serverErrorCode || !zone.zoneID) continue;
      listed.set(bookKey('shared', zone.zoneID), ['shared', zone.zoneID]);
    }
    if (sharedZones === null) {
      for (const book of state.books.values()) if (book.database === 'shared') listed.set(book.key, ['shared', book.zoneID]);
    }
    const hadBooks = state.books.size > 0 || state.listedOnce;
    for (const [key, book] of [...state.books]) {
      if (listed.has(key)) continue;
      state.books.delete(key);
      if (hadBooks) addNote(goneNote(book), 'deleted');
      if (state.openKey === key) state.openKey = null;
    }
    for (const [key, [database, zoneID]] of listed) {
      if (!state.books.has(key)) state.books.set(key, newBook(database, zoneID));
    }
    state.listedOnce = true;
    const unknownShares = [...state.books.values()].filter((book) => book.share === undefined);
    await Promise.all(unknownShares.map((book) => loadShare(session, book)));
    if (generation !== state.generation) return;
    await loadInvitations(generation);
    if (generation !== state.generation) return;
    if (!state.openKey || !state.books.has(state.openKey)) state.openKey = defaultBookKey();
    renderBookList();
    const book = state.books.get(state.openKey);
    if (book) {
      await fetchChanges(session, book, generation);
      if (generation !== state.generation) return;
    }
    const people = [...state.books.values()].map((each) => each.zoneID.ownerRecordName);
    if (await learnNames(session, generation, book ? people.concat(peopleOf(book)) : people) && book) book.version += 1;
    if (generation !== state.generation) return;
    renderBookList();
    renderBook();
  }

  // MARK: Invitations

  /// The invitation a share link brought this tab to (`#invitation=…`), until it is answered.
  function linkedInvitation() {
    return sessionStorage.getItem(KEYS.invitation);
  }

  /// Lists the caller's pending invitations (`shared/invitations/list`) and draws them.
  async function loadInvitations(generation) {
    const session = state.session;
    if (!session || generation !== state.generation) return;
    let invitations;
    try {
      invitations = (await call(session, 'shared', 'invitations/list', {})).invitations || [];
    } catch (error) {
      if (error instanceof Offline) throw error;
      return; // a daemon without a shared database has no invitations
    }
    if (generation !== state.generation) return;
    state.invitations = invitations.filter((invitation) => invitation && typeof invitation.shortGUID === 'string');
    for (const invitation of state.invitations) {
      const owner = invitation.owner || {};
      if (owner.userRecordName && owner.name) state.names.set(owner.userRecordName, owner.name);
    }
    const linked = linkedInvitation();
    if (linked && !state.invitationsListed && !state.invitations.some((invitation) => invitation.shortGUID === linked)) {
      sessionStorage.removeItem(KEYS.invitation);
      addNote('The invitation from your link is not pending for this account: it was answered already, or it is for someone else.', '');
    }
    state.invitationsListed = true;
    renderInvitations();
  }

  function roleOf(permission) {
    return permission === 'READ_WRITE' ? 'read-write' : 'read-only';
  }

  function invitationTitle(invitation) {
    return invitation.title || (invitation.zoneID && invitation.zoneID.zoneName) || 'a book';
  }

  function renderInvitations() {
    const list = $('invitation-list');
    const linked = linkedInvitation();
    const drawn = JSON.stringify([state.generation, linked, state.invitations.map((i) => [i.shortGUID, invitationTitle(i), i.permission,
      (i.owner || {}).name])]);
    $('invitations').hidden = !state.invitations.length;
    if (list.dataset.drawn === drawn) return;
    list.dataset.drawn = drawn;
    list.replaceChildren(...state.invitations.map((invitation) => {
      const role = roleOf(invitation.permission);
      const owner = (invitation.owner && invitation.owner.name) || state.names.get((invitation.owner || {}).userRecordName) || 'someone';
      return el('li', { class: `invitation${invitation.shortGUID === linked ? ' linked' : ''}`, 'data-invitation': invitation.shortGUID },
        el('span', { class: 'invitation-title', text: invitationTitle(invitation) }),
        el('span', { class: 'book-meta' },
          el('span', { class: `role role-${role}`, text: role }),
          el('span', { class: 'invitation-owner', text: `from ${owner}` })),
        el('span', { class: 'invitation-actions' },
          el('button', { type: 'button', class: 'accept', onclick: () => answerInvitation(invitation, true) }, 'Accept'),
          el('button', { type: 'button', class: 'decline', onclick: () => answerInvitation(invitation, false) }, 'Decline')));
    }));
    const focused = linked && list.querySelector(`[data-invitation="${CSS.escape(linked)}"]`);
    if (focused) {
      focused.scrollIntoView({ block: 'nearest' });
      focused.querySelector('button.accept').focus();
    }
  }

  /// Accept (`public/records/accept`: the book joins the shared ones, and opens) or decline
  /// (`shared/invitations/decline`).
  async function answerInvitation(invitation, accept) {
    const session = state.session;
    const generation = state.generation;
    if (!session) return;
    const guid = invitation.shortGUID;
    const body = { shortGUIDs: [{ value: guid }] };
    let result;
    try {
      const answer = accept ? await call(session, 'public', 'records/accept', body) : await call(session, 'shared', 'invitations/decline', body);
      result = (answer.results || [])[0] || {};
    } catch (error) {
      if (generation === state.generation) reportFailure(error);
      return;
    }
    if (generation !== state.generation) return;
    if (result.serverErrorCode) {
      addNote(`Could not ${accept ? 'accept' : 'decline'} “${invitationTitle(invitation)}”: ${result.reason || result.serverErrorCode}`, 'error');
    } else if (accept) {
      addNote(`You joined “${invitationTitle(invitation)}”`, '');
      const zoneID = result.zoneID || invitation.zoneID;
      if (zoneID && zoneID.ownerRecordName) {
        state.openKey = bookKey('shared', zoneID);
        sessionStorage.setItem(KEYS.book, state.openKey);
      }
    } else {
      addNote(`You declined “${invitationTitle(invitation)}”`, '');
    }
    if (linkedInvitation() === guid) sessionStorage.removeItem(KEYS.invitation);
    state.invitations = state.invitations.filter((each) => each.shortGUID !== guid);
    renderInvitations();
    scheduleRefresh();
  }

  /// What a book that left the list became: a participant cannot tell a removal from a deletion.
  function goneNote(book) {
    return book.database === 'shared'
      ? `Book “${bookTitle(book)}” is no longer shared with you (or was deleted)` : `Book “${bookTitle(book)}” was deleted`;
  }

  function defaultBookKey() {
    if (state.books.has('private/ScorebookData')) return 'private/ScorebookData';
    const first = sortedBooks()[0];
    return first ? first.key : null;
  }

  function sortedBooks() {
    return [...state.books.values()].sort((a, b) => {
      if (a.database !== b.database) return a.database === 'private' ? -1 : 1;
      return bookTitle(a).localeCompare(bookTitle(b)) || a.key.localeCompare(b.key);
    });
  }

  async function openBook(key) {
    if (!state.books.has(key)) return;
    state.openKey = key;
    sessionStorage.setItem(KEYS.book, key);
    renderBookList();
    renderBook();
    const generation = state.generation;
    try {
      await fetchChanges(state.session, state.books.get(key), generation);
    } catch (error) {
      if (generation === state.generation) reportFailure(error);
    }
    if (generation === state.generation) renderBook();
  }

  /// Follows changes/zone from the book's sync token until nothing more is coming; deletions
  /// of records the page showed leave a note.
  async function fetchChanges(session, book, generation) {
    const firstLoad = !book.loaded;
    const removed = new Map();
    for (let page = 0; page < 100000; page += 1) {
      const zone = { zoneID: book.zoneID };
      if (book.syncToken) zone.syncToken = book.syncToken;
      let entry;
      try {
        const answer = await call(session, book.database, 'changes/zone', { zones: [zone] });
        entry = (answer.zones || [])[0];
      } catch (error) {
        if (error instanceof APIError) entry = { serverErrorCode: error.code, reason: error.message };
        else throw error;
      }
      if (generation !== state.generation) return;
      if (!entry) throw new APIError(200, 'BAD_ANSWER', 'changes/zone answered no zone');
      if (entry.serverErrorCode === 'CHANGE_TOKEN_EXPIRED') {
        book.syncToken = null; // start again from the beginning
        book.records = new Map();
        book.version += 1;
        continue;
      }
      if (entry.serverErrorCode === 'ZONE_NOT_FOUND') {
        state.books.delete(book.key);
        if (state.openKey === book.key) state.openKey = null;
        addNote(goneNote(book), 'deleted');
        return;
      }
      if (entry.serverErrorCode) throw new APIError(200, entry.serverErrorCode, entry.reason);
      for (const record of entry.records || []) {
        if (!record || typeof record.recordName !== 'string') continue;
        if (record.deleted) {
          const shown = book.records.get(record.recordName);
          if (shown) removed.set(record.recordName, shown);
          continue;
        }
        if (record.serverErrorCode) continue;
        removed.delete(record.recordName);
        book.version += 1;
        if (record.recordType === 'cloudkit.share') {
          book.share = record;
          continue;
        }
        book.records.set(record.recordName, record);
      }
      book.syncToken = entry.syncToken || book.syncToken;
      if (!entry.moreComing) break;
    }
    if (removed.size && !firstLoad) noteDeletions(book, removed);
    for (const name of removed.keys()) book.records.delete(name);
    if (removed.size || !book.loaded) book.version += 1;
    book.loaded = true;
  }

  // MARK: Notes

  function addNote(text, kind) {
    const notes = $('notes');
    const note = el('div', { class: `note ${kind || ''}`, role: 'status' },
      el('span', { class: 'note-text', text }),
      el('button', { type: 'button', class: 'dismiss', 'aria-label': 'Dismiss', title: 'Dismiss', onclick: () => note.remove() }, '×'));
    notes.prepend(note);
    while (notes.children.length > MAX_NOTES) notes.lastElementChild.remove();
  }

  /// The references through which a record depends on another (deleting the target deletes the record).
  const dependencyFields = { Match: ['game'], Player: ['match', 'person'], Score: ['player'], MatchImage: ['match'], MatchLocation: ['match'] };

  /// One note per deleted record that did not go only because something it depended on went
  /// (a deleted game's matches, players and scores are counted in the game's note).
  function noteDeletions(book, removed) {
    const dependsOnRemoved = (record) => (dependencyFields[record.recordType] || []).some((name) => removed.has(reference(record, name)));
    const root = (record) => {
      let current = record;
      for (let step = 0; step < 10; step += 1) {
        const parent = (dependencyFields[current.recordType] || []).map((name) => removed.get(reference(current, name))).find(Boolean);
        if (!parent) return current;
        current = parent;
      }
      return current;
    };
    const dependents = new Map();
    for (const record of removed.values()) {
      if (!dependsOnRemoved(record)) continue;
      const top = root(record).recordName;
      dependents.set(top, (dependents.get(top) || 0) + 1);
    }
    for (const record of removed.values()) {
      if (dependsOnRemoved(record)) continue;
      const count = dependents.get(record.recordName) || 0;
      const more = count ? ` (and ${count} record${count === 1 ? '' : 's'} that depended on it)` : '';
      addNote(`${describe(book, record)} was deleted${more}`, 'deleted');
    }
  }

  /// A record as a note names it: `Game “Catan”`, `Person “Ann Lee”`, `Match of Catan (…)`.
  function describe(book, record) {
    const get = (name) => book.records.get(name);
    switch (record.recordType) {
      case 'Person': return `Person “${personName(record)}”`;
      case 'Game': return `Game “${stringField(record, 'name') || record.recordName}”`;
      case 'Match': {
        const game = get(reference(record, 'game'));
        const start = numberField(record, 'startDate');
        return `Match of ${game ? stringField(game, 'name') : 'a game'}${start !== undefined ? ` started ${localTime(start)}` : ''}`;
      }
      case 'Player': {
        const person = get(reference(record, 'person'));
        return `Player ${person ? `“${personName(person)}”` : record.recordName}`;
      }
      case 'Score': {
        const player = get(reference(record, 'player'));
        const person = player && get(reference(player, 'person'));
        const round = numberField(record, 'round');
        return `Score ${formatNumber(numberField(record, 'value') || 0)}${person ? ` of ${personName(person)}` : ''}`
          + `${round !== undefined ? ` in round ${round}` : ''}`;
      }
      case 'MatchImage': return 'A match photo';
      case 'MatchLocation': return `Location “${stringField(record, 'name') || 'unnamed place'}”`;
      default: return `${record.recordType} ${record.recordName}`;
    }
  }

  // MARK: Rendering

  function renderBookList() {
    const list = $('book-list');
    const books = sortedBooks();
    const drawn = JSON.stringify([state.generation, state.openKey, state.listedOnce, state.shared.available,
      books.map((book) => [book.key, bookTitle(book), bookRole(book), ownerLabel(book), sharedWith(book).length])]);
    if (list.dataset.drawn === drawn) return;
    list.dataset.drawn = drawn;
    list.replaceChildren(...books.map((book) => {
      const role = bookRole(book);
      return el('li', { 'data-book': book.key },
        el('button', {
          type: 'button', class: 'book-link', 'aria-current': book.key === state.openKey ? 'page' : null,
          onclick: () => openBook(book.key),
        },
        el('span', { class: 'book-title', text: bookTitle(book) }),
        el('span', { class: 'book-meta' },
          el('span', { class: `role role-${role}`, text: role }),
          book.database === 'shared' || sharedWith(book).length ? el('span', { class: 'shared-mark', text: 'shared' }) : null,
          book.database === 'shared' ? el('span', { class: 'book-owner', text: `by ${ownerLabel(book)}` }) : null)));
    }));
    if (!books.length && state.listedOnce) {
      list.replaceChildren(el('li', { class: 'empty', text: 'No books yet. Keep score with the scorebook CLI and sync.' }));
    }
    $('shared-note').textContent = state.shared.available || !state.listedOnce
      ? '' : `Shared books are not available from this daemon (${state.shared.reason}).`;
  }

  function details(key, summary, openByDefault, fill, className) {
    const open = state.detailsOpen.has(key) ? state.detailsOpen.get(key) : openByDefault;
    const node = el('details', { class: className || null, 'data-key': key }, el('summary', null, summary));
    let filled = false;
    const fillOnce = () => {
      if (filled) return;
      filled = true;
      node.append(...[fill()].flat());
    };
    node.open = open;
    if (open) fillOnce();
    node.addEventListener('toggle', () => {
      state.detailsOpen.set(key, node.open);
      if (node.open) fillOnce();
    });
    return node;
  }

  function avatar(person, size) {
    const asset = person ? field(person, 'avatar') : undefined;
    const url = asset && typeof asset === 'object' && typeof asset.downloadURL === 'string' ? sameOriginURL(asset.downloadURL) : null;
    if (url) return el('img', { class: `avatar ${size}`, src: url, alt: '', loading: 'lazy' });
    return el('span', { class: `avatar initials ${size}`, 'aria-hidden': 'true', text: initials(person) });
  }

  function changedLine(book, record) {
    const modified = record.modified || {};
    return el('p', { class: 'changed' },
      `changed by ${userLabel(book, modified.userRecordName)}, ${localTime(modified.timestamp)}`);
  }

  function renderBook() {
    const article = $('book');
    const book = state.books.get(state.openKey);
    if (!state.session) {
      article.replaceChildren();
      delete article.dataset.drawn;
      return;
    }
    if (!book) {
      delete article.dataset.drawn;
      article.replaceChildren(el('p', { class: 'muted', text: state.listedOnce ? 'No book to show.' : 'Loading…' }));
      document.title = 'Scorebook console';
      return;
    }
    document.title = `${bookTitle(book)} — Scorebook console`;
    const drawn = `${state.generation}|${book.key}|${book.version}|${book.loaded}|${state.session.me}`;
    if (article.dataset.drawn === drawn) return; // nothing changed: keep the page (and what is open or selected) as it is
    article.dataset.drawn = drawn;
    if (!book.loaded) {
      article.replaceChildren(el('h2', { text: bookTitle(book) }), el('p', { class: 'muted', text: 'Loading…' }));
      return;
    }
    const data = Scoreboard.compute(book.records.values());
    article.replaceChildren(
      renderBookHead(book),
      el('div', { class: 'book-grid' },
        el('div', { class: 'column-main' }, renderMatches(book, data)),
        el('div', { class: 'column-side' }, renderStandings(book, data), renderPeople(book, data), renderGames(book, data))),
      renderAllRecords(book));
  }

  /// The people a book's share names besides its owner, by name (the daemon lists them in an
  /// order of its own, their ids).
  function sharedWith(book) {
    const share = book.share;
    return share ? (share.participants || []).filter((p) => p.type !== 'OWNER')
      .sort((a, b) => (identityName(a.userIdentity) || '').localeCompare(identityName(b.userIdentity) || '')) : [];
  }

  /// How a participant stands: invited, accepted, or declined (a participant the owner removed
  /// leaves the share, so a removed one is one who turned the invitation down).
  function acceptanceText(status) {
    if (!status) return '';
    return `, ${{ PENDING: 'invited', INVITED: 'invited', REMOVED: 'declined' }[status] || status.toLowerCase()}`;
  }

  function renderBookHead(book) {
    const role = bookRole(book);
    const participants = sharedWith(book);
    return el('header', { class: 'book-head' },
      el('h2', { id: 'book-title', text: bookTitle(book) }),
      el('p', { class: 'book-facts' },
        el('span', { class: `role role-${role}`, text: role }),
        ` owner: ${ownerLabel(book)} · zone ${book.zoneID.zoneName} · ${book.records.size} record${book.records.size === 1 ? '' : 's'}`),
      participants.length
        ? el('p', { class: 'participants' }, 'Shared with: ', participants.map((p, index) => [
          index ? ', ' : '',
          el('span', { class: 'participant' }, identityName(p.userIdentity) || 'someone',
            ` (${(p.permission || '').toLowerCase().replace('_', '-')}${acceptanceText(p.acceptanceStatus)})`),
        ]))
        : null);
  }

  function renderMatches(book, data) {
    const section = el('section', { id: 'matches', class: 'matches' }, el('h3', { text: `Matches (${data.matches.length})` }));
    if (!data.matches.length) section.append(el('p', { class: 'muted', text: 'No matches yet.' }));
    for (const match of data.matches) section.append(renderMatch(book, data, match));
    return section;
  }

  function renderMatch(book, data, match) {
    const record = match.record;
    const result = match.result;
    const winnerRow = result.winner ? result.rows.find((row) => row.person === result.winner) : null;
    const winnerText = winnerRow ? `winner: ${winnerRow.name}` : match.finished ? 'winner: none (tied)' : 'winner: none yet (in progress)';
    const notes = stringField(record, 'notes');
    const place = match.location;
    let placeText = null;
    if (place) {
      const where = field(place, 'location');
      placeText = stringField(place, 'name') || 'unnamed place';
      if (where && typeof where.latitude === 'number' && typeof where.longitude === 'number') {
        placeText += ` (${where.latitude}, ${where.longitude})`;
      }
    }
    const scoreboard = el('table', { class: 'scoreboard' },
      el('thead', null, el('tr', null, el('th', { text: 'RANK' }), el('th', { text: 'PLAYER' }), el('th', { class: 'number', text: 'TOTAL' }))),
      el('tbody', null, result.rows.map((row) => el('tr', { 'data-player': row.player, class: row.person === result.winner ? 'winner-row' : null },
        el('td', { class: 'rank', text: String(row.rank) }),
        el('td', { class: 'player' }, el('span', { class: 'who' }, avatar(data.personByName.get(row.person), 'small'), el('span', { class: 'name', text: row.name }))),
        el('td', { class: 'total number', text: formatNumber(row.total) })))));
    const related = [record, ...match.players, ...match.scores, ...match.images, ...(match.location ? [match.location] : [])];
    return el('article', { class: `match ${match.finished ? 'finished' : 'playing'}`, 'data-record': record.recordName },
      el('header', { class: 'match-head' },
        el('h4', { class: 'game-name', text: match.gameName }),
        el('span', { class: 'status', text: match.finished ? 'finished' : 'in progress' })),
      el('p', { class: 'when', text: `started ${localTime(match.startDate)}${match.finished ? `, finished ${localTime(match.endDate)}` : ', in progress'}` }),
      notes ? el('p', { class: 'match-notes', text: `notes: ${notes}` }) : null,
      placeText ? el('p', { class: 'location', text: `location: ${placeText}` }) : null,
      scoreboard,
      el('p', { class: 'winner', text: winnerText }),
      match.rounds.rows.length ? details(`rounds:${record.recordName}`, 'Rounds', true, () => renderRounds(match)) : null,
      match.images.length ? renderPhotos(book, match.images) : null,
      changedLine(book, record),
      details(`records:${record.recordName}`, `Records of this match (${related.length})`, false,
        () => related.map((r) => rawRecord(book, r)), 'raw-group'));
  }

  function renderRounds(match) {
    const totals = new Map(match.result.rows.map((row) => [row.player, row.total]));
    const columns = match.rounds.columns;
    return el('table', { class: 'rounds' },
      el('thead', null, el('tr', null, el('th', { text: 'ROUND' }), columns.map((c) => el('th', { class: 'number', text: c.name })))),
      el('tbody', null,
        match.rounds.rows.map((row) => el('tr', null,
          el('td', { text: row.round === null ? '-' : String(row.round) }),
          columns.map((c) => el('td', { class: 'number', text: row.values.has(c.player) ? formatNumber(row.values.get(c.player)) : '' })))),
        el('tr', { class: 'total-row' }, el('td', { text: 'TOTAL' }),
          columns.map((c) => el('td', { class: 'number', text: formatNumber(totals.get(c.player) || 0) })))));
  }

  function renderPhotos(book, images) {
    return el('div', { class: 'photos' }, images.map((image) => {
      const asset = field(image, 'image');
      const url = asset && typeof asset === 'object' && typeof asset.downloadURL === 'string' ? sameOriginURL(asset.downloadURL) : null;
      const modified = image.modified || {};
      const caption = `added by ${userLabel(book, (image.created || modified).userRecordName)}`;
      return el('figure', { class: 'photo', 'data-record': image.recordName },
        url ? el('img', { src: url, alt: 'match photo', loading: 'lazy' }) : el('span', { class: 'no-photo', text: 'photo not downloadable' }),
        el('figcaption', { text: caption }));
    }));
  }

  function renderStandings(book, data) {
    const section = el('section', { id: 'standings', class: 'standings' }, el('h3', { text: 'Standings' }));
    if (!data.standings.length) {
      section.append(el('p', { class: 'muted', text: 'Nobody has played yet.' }));
      return section;
    }
    section.append(el('table', { class: 'standings-table' },
      el('thead', null, el('tr', null, ['PERSON', 'PLAYED', 'WON', 'WIN RATE', 'AVERAGE SCORE'].map((h, i) => el('th', { class: i ? 'number' : null, text: h })))),
      el('tbody', null, data.standings.map((row) => el('tr', { 'data-person': row.person },
        el('td', { class: 'player' }, el('span', { class: 'who' }, avatar(row.record, 'small'), el('span', { class: 'name', text: row.name }))),
        el('td', { class: 'number', text: String(row.played) }),
        el('td', { class: 'number', text: String(row.won) }),
        el('td', { class: 'number', text: winRateText(row.winRate) }),
        el('td', { class: 'number', text: averageText(row.averageScore) }))))));
    section.append(el('p', { class: 'muted small', text: 'Finished matches only.' }));
    return section;
  }

  function renderPeople(book, data) {
    const people = data.people.slice().sort((a, b) => personName(a).localeCompare(personName(b)) || (a.recordName < b.recordName ? -1 : 1));
    const section = el('section', { id: 'people', class: 'people' }, el('h3', { text: `People (${people.length})` }));
    if (!people.length) section.append(el('p', { class: 'muted', text: 'Nobody yet.' }));
    section.append(el('ul', { class: 'people-list' }, people.map((person) => el('li', { class: 'person', 'data-record': person.recordName },
      avatar(person, 'large'),
      el('div', { class: 'person-text' },
        el('span', { class: 'name', text: personName(person) }),
        stringField(person, 'emailAddress') ? el('span', { class: 'email', text: stringField(person, 'emailAddress') }) : null,
        changedLine(book, person),
        details(`raw:${person.recordName}`, 'Fields', false, () => rawRecord(book, person, true), 'raw-inline'))))));
    return section;
  }

  function renderGames(book, data) {
    const games = data.games.slice().sort((a, b) => (stringField(a, 'name') || '').localeCompare(stringField(b, 'name') || ''));
    const section = el('section', { id: 'games', class: 'games' }, el('h3', { text: `Games (${games.length})` }));
    if (!games.length) section.append(el('p', { class: 'muted', text: 'No games yet.' }));
    section.append(el('ul', { class: 'games-list' }, games.map((game) => {
      const count = data.matches.filter((m) => m.game === game).length;
      return el('li', { class: 'game', 'data-record': game.recordName },
        el('span', { class: 'name', text: stringField(game, 'name') || game.recordName }),
        el('span', { class: 'muted', text: ` · ${(numberField(game, 'lowScoreWins') || 0) !== 0 ? 'low score wins' : 'high score wins'} · ${count} match${count === 1 ? '' : 'es'}` }),
        changedLine(book, game),
        details(`raw:${game.recordName}`, 'Fields', false, () => rawRecord(book, game, true), 'raw-inline'));
    })));
    return section;
  }

  function renderAllRecords(book) {
    const records = [...book.records.values()].sort((a, b) => (a.recordType < b.recordType ? -1 : a.recordType > b.recordType ? 1 : 0)
      || (a.recordName < b.recordName ? -1 : 1));
    return el('section', { id: 'records', class: 'records' },
      details(`all-records:${book.key}`, `All records (${records.length})`, false, () => records.map((r) => rawRecord(book, r)), 'raw-group'));
  }

  /// A field's value as text: references by name, timestamps as local time, assets by URL.
  function fieldText(entry) {
    const value = entry.value;
    switch (entry.type) {
      case 'REFERENCE': return value && value.recordName ? `→ ${value.recordName}${value.action ? ` (${value.action})` : ''}` : JSON.stringify(value);
      case 'TIMESTAMP': return `${localTime(value)} (${value})`;
      case 'DOUBLE': return typeof value === 'number' ? formatNumber(value) : JSON.stringify(value);
      case 'ASSETID': return value && value.downloadURL ? `${value.downloadURL} (${value.size} bytes)` : JSON.stringify(value);
      case 'LOCATION': return value ? `${value.latitude}, ${value.longitude}` : JSON.stringify(value);
      case 'STRING': return typeof value === 'string' ? value : JSON.stringify(value);
      default: return typeof value === 'string' ? value : JSON.stringify(value);
    }
  }

  /// Every field of a record with its type, and who created and last changed it, when.
  function rawRecord(book, record, bare) {
    const fields = Object.entries(record.fields || {}).sort(([a], [b]) => (a < b ? -1 : 1));
    const stamp = (info) => (info ? `${userLabel(book, info.userRecordName)}, ${localTime(info.timestamp)}`
      + `${info.deviceID ? `, device ${info.deviceID}` : ''}` : '-');
    const table = el('table', { class: 'raw-fields' },
      el('tbody', null,
        fields.map(([name, entry]) => el('tr', null,
          el('th', { text: name }), el('td', { class: 'type', text: (entry && entry.type) || '' }), el('td', { class: 'value', text: fieldText(entry || {}) }))),
        el('tr', { class: 'system' }, el('th', { text: 'created' }), el('td'), el('td', { text: stamp(record.created) })),
        el('tr', { class: 'system' }, el('th', { text: 'modified' }), el('td'), el('td', { text: stamp(record.modified) })),
        el('tr', { class: 'system' }, el('th', { text: 'change tag' }), el('td'), el('td', { text: record.recordChangeTag || '-' }))));
    if (bare) return table;
    return el('div', { class: 'raw-record', 'data-record': record.recordName },
      el('p', { class: 'raw-name' }, el('strong', { text: record.recordType }), ' ', el('code', { text: record.recordName })),
      table);
  }

  // MARK: Start

  // The daemon's sign-in page in a popup, or in this window when popups are blocked.
  function openPasswordSignIn() {
    const url = '/signin?container=' + encodeURIComponent($('container').value.trim()) +
      '&origin=' + encodeURIComponent(window.location.origin);
    const popup = window.open(url, 'scorebook-signin', 'popup,width=440,height=560');
    if (!popup) window.location.assign(url);
  }

  function start() {
    $('signin-form').addEventListener('submit', (event) => {
      event.preventDefault();
      signIn($('token').value.trim(), $('container').value.trim(), $('environment').value, false);
    });
    $('sign-out').addEventListener('click', () => signOut(''));
    $('signin-password').addEventListener('click', openPasswordSignIn);
    // The daemon's sign-in page posts the new token to this page's origin only.
    window.addEventListener('message', (event) => {
      if (event.origin !== window.location.origin || !event.data || typeof event.data.ckSession !== 'string') return;
      signIn(event.data.ckSession, $('container').value.trim(), $('environment').value, false);
    });
    // Without a popup, the sign-in page comes back with the token in the fragment (never sent
    // to a server); it is taken out of the address and the history at once.
    const returned = /^#ckSession=([0-9a-f]+)$/.exec(window.location.hash);
    if (returned) history.replaceState(null, '', window.location.pathname);
    // From a share page: the invitation to show once signed in, kept for the tab (the password
    // sign-in without a popup leaves this page and comes back).
    const invited = /^#invitation=([A-Za-z0-9_-]{1,200})$/.exec(window.location.hash);
    if (invited) {
      sessionStorage.setItem(KEYS.invitation, invited[1]);
      history.replaceState(null, '', window.location.pathname);
    }
    const token = returned ? returned[1] : sessionStorage.getItem(KEYS.token);
    const container = sessionStorage.getItem(KEYS.container);
    const environment = sessionStorage.getItem(KEYS.environment);
    if (container) $('container').value = container;
    if (environment) $('environment').value = environment;
    if (token) signIn(token, container || $('container').value, environment || $('environment').value, true);
    else $('token').focus();
  }

  // Exposed for the browser tests and the console of the browser: read-only views of the state.
  window.scorebookConsole = {
    formatNumber,
    get liveState() { return state.liveState; },
    get openBook() { return state.openKey; },
    get invitations() { return state.invitations.map((invitation) => invitation.shortGUID); },
  };

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
