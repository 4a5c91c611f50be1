// The hub's own pages, in the review UI's look: the sign-in form and the
// inbox (pending reviews and recent decisions, filtered, kept live).
import type { JSX } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { CHANGE_EVENT, type InboxResponse, type ReviewSummary } from '../../../src/hub/contract.ts';
import { ApiError, hub, originLabel } from '../api.ts';
import type { Settings } from '../settings.ts';
import { errorText } from './common.tsx';
import { Topbar } from './topbar.tsx';

interface PageProps {
  settings: Settings;
  updateSettings: (changes: Partial<Settings>) => void;
}

export function SignIn(props: PageProps): JSX.Element {
  const [token, setToken] = useState('');
  const [problem, setProblem] = useState('');
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    document.title = 'Review hub: sign in';
  }, []);
  const submit = (e: Event): void => {
    e.preventDefault();
    setBusy(true);
    hub.signIn(token).then(
      // The page asked for (the inbox, or the review a link led to) now loads as a reviewer.
      () => location.reload(),
      (error: unknown) => {
        setProblem(errorText(error));
        setBusy(false);
      },
    );
  };
  return (
    <div class="app">
      <Topbar title="Review hub" origin={undefined} settings={props.settings} updateSettings={props.updateSettings}>
        {null}
      </Topbar>
      <main class="center">
        <form class="done-card sign-in" onSubmit={submit}>
          <h2>Sign in</h2>
          <p class="muted">Paste a reviewer token once; this browser then stays signed in.</p>
          <input
            type="password"
            autocomplete="current-password"
            aria-label="Reviewer token"
            placeholder="Reviewer token"
            required
            value={token}
            onInput={(e) => setToken(e.currentTarget.value)}
          />
          <button type="submit" class="btn primary" disabled={busy}>
            Sign in
          </button>
          <p role="alert" class="sign-in-problem">
            {problem}
          </p>
        </form>
      </main>
    </div>
  );
}

const STATUSES = ['all', 'pending', 'decided'] as const;
type Status = (typeof STATUSES)[number];

interface Filters {
  status: Status;
  agent: string;
  project: string;
  submitter: string;
}

/** The filters live in the query string, so a reload or a shared link keeps them. */
function readFilters(): Filters {
  const q = new URLSearchParams(location.search);
  const status = q.get('status') as Status | null;
  return {
    status: status !== null && STATUSES.includes(status) ? status : 'all',
    agent: q.get('agent') ?? '',
    project: q.get('project') ?? '',
    submitter: q.get('submitter') ?? '',
  };
}

function writeFilters(f: Filters): void {
  const q = new URLSearchParams();
  if (f.status !== 'all') q.set('status', f.status);
  if (f.agent) q.set('agent', f.agent);
  if (f.project) q.set('project', f.project);
  if (f.submitter) q.set('submitter', f.submitter);
  const search = q.toString();
  history.replaceState(null, '', search ? `?${search}` : location.pathname);
}

const matches = (f: Filters) => (r: ReviewSummary) =>
  (!f.agent || r.origin === f.agent) &&
  (!f.project || r.project === f.project) &&
  (!f.submitter || r.submitter === f.submitter);

/** The distinct values of one field, sorted, plus the one selected (a filter never hides its own option). */
function choices(list: ReviewSummary[], field: 'origin' | 'project' | 'submitter', selected: string): string[] {
  return [...new Set([...list.map((r) => r[field]), ...(selected ? [selected] : [])])].filter(Boolean).sort();
}

function ago(iso: string, now: number): string {
  const minutes = Math.round((now - Date.parse(iso)) / 60_000);
  if (minutes < 1) return 'just now';
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.round(minutes / 60);
  if (hours < 48) return `${hours} h ago`;
  return `${Math.round(hours / 24)} days ago`;
}

/** The inbox's state: the lists, fetched again whenever the hub announces a change. */
function useInbox(): { inbox: InboxResponse | undefined; error: string; signedOut: boolean } {
  const [inbox, setInbox] = useState<InboxResponse>();
  const [error, setError] = useState('');
  const [signedOut, setSignedOut] = useState(false);
  useEffect(() => {
    let queued: number | undefined;
    const refresh = (): void => {
      hub.reviews().then(
        (list) => {
          setInbox(list);
          setError('');
        },
        (e: unknown) => {
          if (e instanceof ApiError && e.status === 401) setSignedOut(true);
          else setError(errorText(e));
        },
      );
    };
    // A burst of changes (a decision and the next version) is one fetch.
    const schedule = (): void => {
      if (queued === undefined)
        queued = window.setTimeout(() => {
          queued = undefined;
          refresh();
        }, 100);
    };
    const events = new EventSource('/api/events');
    events.addEventListener(CHANGE_EVENT, schedule);
    // Opened again after a drop: changes may have been missed meanwhile.
    events.addEventListener('open', schedule);
    refresh();
    return () => {
      events.close();
      window.clearTimeout(queued);
    };
  }, []);
  return { inbox, error, signedOut };
}

export function Inbox(props: PageProps): JSX.Element {
  const { inbox, error, signedOut } = useInbox();
  const [filters, setFilters] = useState(readFilters);
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = window.setInterval(() => setNow(Date.now()), 30_000);
    return () => window.clearInterval(timer);
  }, []);
  const pendingCount = inbox?.pending.length ?? 0;
  useEffect(() => {
    document.title = pendingCount > 0 ? `(${pendingCount}) Review hub` : 'Review hub';
  }, [pendingCount]);
  const everyone = useMemo(() => (inbox ? [...inbox.pending, ...inbox.decided] : []), [inbox]);

  if (signedOut) return <SignIn {...props} />;
  const update = (changes: Partial<Filters>): void => {
    const next = { ...filters, ...changes };
    writeFilters(next);
    setFilters(next);
  };
  const keep = matches(filters);
  const pending = (inbox?.pending ?? []).filter(keep);
  const decided = (inbox?.decided ?? []).filter(keep);
  const filtered = filters.agent !== '' || filters.project !== '' || filters.submitter !== '';
  return (
    <div class="app">
      <Topbar
        title="Review hub"
        origin={undefined}
        settings={props.settings}
        updateSettings={props.updateSettings}
        sub={
          <span class="chip" aria-live="polite">
            {pendingCount} pending
          </span>
        }
      >
        <button type="button" class="btn" onClick={() => void hub.signOut().finally(() => location.reload())}>
          Sign out
        </button>
      </Topbar>
      {error !== '' && (
        <div class="banner error" role="alert">
          Could not load the reviews: {error}
        </div>
      )}
      <main class="hub-page" aria-busy={inbox === undefined}>
        <form class="filters" aria-label="Filters" onSubmit={(e) => e.preventDefault()}>
          <div class="segmented" role="radiogroup" aria-label="Status">
            {STATUSES.map((s) => (
              <button
                key={s}
                type="button"
                role="radio"
                aria-checked={filters.status === s}
                class={filters.status === s ? 'on' : ''}
                onClick={() => update({ status: s })}
              >
                {s === 'all' ? 'All' : s === 'pending' ? 'Pending' : 'Decided'}
              </button>
            ))}
          </div>
          <label class="field-inline">
            Agent
            <select value={filters.agent} onChange={(e) => update({ agent: e.currentTarget.value })}>
              <option value="">All agents</option>
              {choices(everyone, 'origin', filters.agent).map((o) => (
                <option key={o} value={o}>
                  {originLabel(o)}
                </option>
              ))}
            </select>
          </label>
          <label class="field-inline">
            Project
            <select value={filters.project} onChange={(e) => update({ project: e.currentTarget.value })}>
              <option value="">All projects</option>
              {choices(everyone, 'project', filters.project).map((p) => (
                <option key={p} value={p}>
                  {p}
                </option>
              ))}
            </select>
          </label>
          <label class="field-inline">
            Submitter
            <select value={filters.submitter} onChange={(e) => update({ submitter: e.currentTarget.value })}>
              <option value="">All submitters</option>
              {choices(everyone, 'submitter', filters.submitter).map((p) => (
                <option key={p} value={p}>
                  {p}
                </option>
              ))}
            </select>
          </label>
          {filtered && (
            <button type="button" class="link" onClick={() => update({ agent: '', project: '', submitter: '' })}>
              Clear filters
            </button>
          )}
        </form>
        {filters.status !== 'decided' && (
          <ReviewTable
            label="Pending reviews"
            heading="Waiting for a review"
            reviews={pending}
            everyone={everyone}
            now={now}
            empty={filtered ? 'No pending review matches these filters.' : 'Nothing is waiting for a review.'}
          />
        )}
        {filters.status !== 'pending' && (
          <ReviewTable
            label="Recent decisions"
            heading="Recently decided"
            reviews={decided}
            everyone={everyone}
            now={now}
            empty={filtered ? 'No decision matches these filters.' : 'Nothing decided yet.'}
          />
        )}
      </main>
    </div>
  );
}

function ReviewTable(props: {
  label: string;
  heading: string;
  reviews: ReviewSummary[];
  everyone: ReviewSummary[];
  now: number;
  empty: string;
}): JSX.Element {
  const decided = props.label === 'Recent decisions';
  return (
    <section class="inbox-section">
      <h2 class="side-title">
        {props.heading} <span class="count">{props.reviews.length}</span>
      </h2>
      <table class="inbox" aria-label={props.label}>
        <thead>
          <tr>
            <th>Title</th>
            <th>Kind</th>
            <th>Agent</th>
            <th>Project / branch</th>
            <th>Submitted by</th>
            <th>{decided ? 'Outcome' : 'Waiting since'}</th>
            <th>Version</th>
          </tr>
        </thead>
        <tbody>
          {props.reviews.map((r) => (
            <ReviewRow key={r.id} review={r} everyone={props.everyone} now={props.now} decided={decided} />
          ))}
        </tbody>
      </table>
      {props.reviews.length === 0 && <p class="empty muted">{props.empty}</p>}
    </section>
  );
}

function ReviewRow(props: { review: ReviewSummary; everyone: ReviewSummary[]; now: number; decided: boolean }) {
  const r = props.review;
  // A pending version lists its session's earlier ones, with what each got.
  const older =
    r.session && !props.decided
      ? props.everyone
          .filter((o) => o.submitter === r.submitter && o.session === r.session && o.version < r.version)
          .sort((a, b) => a.version - b.version)
      : [];
  const when = props.decided ? r.decidedAt : r.createdAt;
  return (
    <tr data-id={r.id}>
      <td>
        <a class="inbox-title" href={r.url}>
          {r.title}
        </a>
        {older.length > 0 && (
          <div class="muted small">
            earlier:{' '}
            {older.map((o) => (
              <a key={o.id} href={o.url} class="inbox-older">
                v{o.version}
                {o.outcome ? ` (${o.outcome})` : ''}
              </a>
            ))}
          </div>
        )}
      </td>
      <td>
        <span class="badge">{r.kind}</span>
      </td>
      <td>{originLabel(r.origin)}</td>
      <td>{[r.project, r.branch].filter(Boolean).join(' / ')}</td>
      <td>{r.submitter}</td>
      <td>
        {props.decided ? (
          <span class={`badge outcome-${r.outcome ?? ''}`}>{r.outcome}</span>
        ) : (
          <time dateTime={r.createdAt} title={new Date(r.createdAt).toLocaleString()}>
            {ago(r.createdAt, props.now)}
          </time>
        )}
        {props.decided && when !== null && (
          <time class="muted small inbox-when" dateTime={when} title={new Date(when).toLocaleString()}>
            {ago(when, props.now)}
          </time>
        )}
      </td>
      <td>v{r.version}</td>
    </tr>
  );
}
