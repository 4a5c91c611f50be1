/**
 * The hub's own two pages, served as they are (no build step): the sign-in
 * form and the inbox. Each review page is the review UI itself, under /r/<id>/.
 */

const STYLE = `
  :root { color-scheme: light dark; font-family: system-ui, sans-serif; }
  body { margin: 0 auto; max-width: 72rem; padding: 1.5rem; }
  h1 { font-size: 1.4rem; } h2 { font-size: 1.1rem; margin-top: 2rem; }
  table { border-collapse: collapse; width: 100%; }
  th, td { text-align: left; padding: .45rem .6rem; border-bottom: 1px solid #8884; vertical-align: top; }
  .muted { opacity: .7; font-size: .9em; }
  .badge { border: 1px solid #8886; border-radius: .6rem; padding: 0 .45rem; font-size: .85em; }
  .approved { color: #1a7f37; } .denied { color: #cf222e; } .timeout { color: #9a6700; }
  form { display: flex; gap: .5rem; max-width: 30rem; } input { flex: 1; padding: .4rem; }
`;

function page(title: string, body: string, script: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title><style>${STYLE}</style></head>
<body>${body}<script>${script}</script></body></html>`;
}

/** Exchanges a reviewer token for the session cookie, then reloads whatever page was asked for. */
export const SIGN_IN_PAGE = page(
  'gatehouse hub: sign in',
  `<h1>gatehouse review hub</h1>
<p>Sign in with a reviewer token.</p>
<form id="sign-in"><label for="token" hidden>Reviewer token</label>
<input id="token" type="password" autocomplete="current-password" placeholder="Reviewer token"
  aria-label="Reviewer token" required>
<button type="submit">Sign in</button></form>
<p id="problem" role="alert"></p>`,
  `document.getElementById('sign-in').addEventListener('submit', async (event) => {
  event.preventDefault();
  const response = await fetch('/api/session', { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token: document.getElementById('token').value }) });
  if (response.ok) location.reload();
  else document.getElementById('problem').textContent = (await response.json()).error;
});`,
);

/**
 * The inbox: pending reviews (a session's versions grouped under its latest)
 * and recent decisions, fetched again whenever the hub announces a change.
 */
export const INBOX_PAGE = page(
  'gatehouse hub: inbox',
  `<h1>gatehouse review hub</h1>
<h2>Waiting for a review <span id="pending-count" class="badge">0</span></h2>
<table aria-label="Pending reviews"><thead><tr><th>Title</th><th>Kind</th><th>Origin</th><th>Project / branch</th>
<th>Waiting since</th><th>Version</th></tr></thead>
<tbody id="pending"></tbody></table>
<h2>Recently decided</h2>
<table aria-label="Recent decisions"><thead><tr><th>Title</th><th>Kind</th><th>Outcome</th><th>Project / branch</th>
<th>Decided</th><th>Version</th></tr></thead>
<tbody id="decided"></tbody></table>`,
  `function cell(row, text, className) {
  const td = row.insertCell();
  td.textContent = text;
  if (className) td.className = className;
  return td;
}
const where = (review) => [review.project, review.branch].filter(Boolean).join(' / ');
const when = (iso) => new Date(iso).toLocaleString();
function titleCell(row, review, older) {
  const td = row.insertCell();
  const a = document.createElement('a'); a.href = review.url; a.textContent = review.title; td.append(a);
  if (older.length > 0) {
    const p = document.createElement('div'); p.className = 'muted'; p.append('earlier: ');
    for (const o of older) {
      const link = document.createElement('a');
      link.href = o.url;
      link.textContent = 'v' + o.version + (o.outcome ? ' (' + o.outcome + ')' : '');
      p.append(link, ' ');
    }
    td.append(p);
  }
}
function render(list) {
  const pending = document.getElementById('pending'); pending.replaceChildren();
  const decided = document.getElementById('decided'); decided.replaceChildren();
  document.getElementById('pending-count').textContent = String(list.pending.length);
  const everyone = [...list.pending, ...list.decided];
  for (const review of list.pending) {
    const older = review.session
      ? everyone
          .filter((o) => o.session === review.session && o.version < review.version)
          .sort((a, b) => a.version - b.version)
      : [];
    const row = pending.insertRow(); row.dataset.id = review.id;
    titleCell(row, review, older);
    cell(row, review.kind); cell(row, review.origin); cell(row, where(review));
    cell(row, when(review.createdAt)); cell(row, 'v' + review.version);
  }
  for (const review of list.decided) {
    const row = decided.insertRow(); row.dataset.id = review.id;
    titleCell(row, review, []);
    cell(row, review.kind); cell(row, review.outcome, review.outcome); cell(row, where(review));
    cell(row, when(review.decidedAt)); cell(row, 'v' + review.version);
  }
}
async function refresh() {
  const response = await fetch('/api/reviews', { headers: { accept: 'application/json' } });
  if (response.status === 401) location.reload();
  else if (response.ok) render(await response.json());
}
let queued = false;
function schedule() { if (!queued) { queued = true; setTimeout(() => { queued = false; refresh(); }, 100); } }
const events = new EventSource('/api/events');
events.addEventListener('change', schedule);
// A reconnect may have missed changes.
events.addEventListener('open', schedule);`,
);
