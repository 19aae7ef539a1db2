// The share page's one script. The page is the same for every share link (it tells a finder of
// a leaked link nothing), so the link to the console learns the invitation here, from the
// page's own address in the browser: the console opens on that invitation after sign-in.
'use strict';

(() => {
  const match = /^\/share\/([A-Za-z0-9_-]{1,200})$/.exec(window.location.pathname);
  const link = document.getElementById('console-link');
  if (match && link) link.href = `/console#invitation=${match[1]}`;
})();
