// The proxy's console: an admin key pasted once, then four pages (Spend, Keys, Upstreams, Live) read from the
// admin endpoints. Pages are chosen by the URL's fragment, so a reload or a link keeps the page.
import { render, type JSX } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type {
  Bucket,
  BudgetUse,
  KeysResponse,
  LiveResponse,
  SpendGroup,
  SpendResponse,
  UpstreamsResponse,
} from '../../src/proxy/console/contract.ts';
import { BUCKETS, SPEND_GROUPS } from '../../src/proxy/console/contract.ts';
import { api, ApiError, forgetKey, keepKey, storedKey } from './api.ts';
import './console.css';

const PAGES = ['spend', 'keys', 'upstreams', 'live'] as const;
type Page = (typeof PAGES)[number];
const TITLES: Record<Page, string> = { spend: 'Spend', keys: 'Keys', upstreams: 'Upstreams', live: 'Live' };

const pageOf = (hash: string): Page => PAGES.find((p) => `#${p}` === hash) ?? 'spend';

const usd = (value: number | null): string => (value === null ? 'unknown' : `$${value.toFixed(value < 1 ? 6 : 2)}`);
const count = (value: number): string => value.toLocaleString('en-US');
const when = (iso: string | null): string => (iso === null ? '—' : iso.replace('T', ' ').replace(/:\d\d\.\d+Z$/, 'Z'));

/** Loads `read` now and whenever `deps` change (and every `everyMs`, if given); a refused key ends the session. */
function useData<T>(read: () => Promise<T>, deps: unknown[], onRefused: (message: string) => void, everyMs?: number) {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  useEffect(() => {
    let live = true;
    const load = () =>
      read().then(
        (value) => {
          if (!live) return;
          setData(value);
          setError(undefined);
        },
        (e: unknown) => {
          if (!live) return;
          if (e instanceof ApiError && (e.status === 401 || e.status === 403)) onRefused(e.message);
          else setError(e instanceof Error ? e.message : String(e));
        },
      );
    void load();
    const timer = everyMs === undefined ? undefined : setInterval(() => void load(), everyMs);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, deps);
  return { data, error };
}

function KeyForm({ problem, onKey }: { problem: string | undefined; onKey: (key: string) => void }): JSX.Element {
  const [value, setValue] = useState('');
  return (
    <main class="sign-in">
      <h1>gatehouse console</h1>
      <p>Paste an admin key of this proxy. It is kept for this tab only and sent with each read, never as a cookie.</p>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (value.trim() !== '') onKey(value.trim());
        }}
      >
        <input
          id="admin-key"
          type="password"
          autocomplete="off"
          aria-label="Admin key"
          placeholder="Admin key"
          value={value}
          onInput={(event) => setValue(event.currentTarget.value)}
        />
        <button type="submit">Open</button>
      </form>
      {problem !== undefined && (
        <p role="alert" class="problem">
          {problem}
        </p>
      )}
    </main>
  );
}

// ---- Spend ----

const RANGES = { '24h': 1, '7d': 7, '30d': 30 } as const;
type Range = keyof typeof RANGES | 'custom';
const DAY_MS = 86_400_000;
const PALETTE = ['#0969da', '#1a7f37', '#9a6700', '#cf222e', '#8250df', '#bf3989', '#1b7c83', '#6e7781'];

/** A stacked area chart: each series drawn as the running sum of those before it, filled down to the one below. */
function StackedChart({ data, measure }: { data: SpendResponse; measure: 'cost' | 'tokens' }): JSX.Element {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return undefined;
    const xs = data.buckets.map((b) => Date.parse(b) / 1000);
    const running = xs.map(() => 0);
    const stacked = data.series.map(({ cells }) =>
      cells.map(
        (cell, i) => (running[i] = (running[i] ?? 0) + ((measure === 'cost' ? cell.cost_usd : cell.tokens) ?? 0)),
      ),
    );
    const series: uPlot.Series[] = [
      {},
      ...data.series.map(({ group }, i) => {
        const color = PALETTE[i % PALETTE.length] as string;
        return { label: group, stroke: color, fill: `${color}55`, points: { show: false } };
      }),
    ];
    const bands = data.series.slice(1).map((_, i) => ({ series: [i + 2, i + 1] as [number, number] }));
    const plot = new uPlot(
      {
        width: Math.max(320, el.clientWidth),
        height: 280,
        series,
        bands,
        axes: [{}, { label: measure === 'cost' ? 'USD' : 'tokens', size: 70 }],
        scales: { x: { time: true } },
      },
      // Each series is the running sum: the first fills down to 0, each band between one and the one below it.
      [xs, ...stacked] as uPlot.AlignedData,
      el,
    );
    return () => plot.destroy();
  }, [data, measure]);
  return <div ref={box} class="chart" data-testid="spend-chart" />;
}

function csvOf(data: SpendResponse, measure: string): string {
  const quote = (s: string) => (/[",\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s);
  const lines = [[data.by, 'requests', 'tokens', 'cost_usd', 'unpriced_requests'].join(',')];
  for (const t of data.totals) {
    lines.push([quote(t.group), t.requests, t.tokens, t.cost_usd ?? '', t.unpriced_requests].join(','));
  }
  return `# ${data.from} to ${data.to}, by ${data.by}, ${measure}\n${lines.join('\n')}\n`;
}

function SpendPage({ onRefused }: { onRefused: (m: string) => void }): JSX.Element {
  const [range, setRange] = useState<Range>('7d');
  const [custom, setCustom] = useState({ from: '', to: '' });
  const [bucket, setBucket] = useState<Bucket>('hour');
  const [by, setBy] = useState<SpendGroup>('key');
  const [measure, setMeasure] = useState<'cost' | 'tokens'>('cost');
  const now = Date.now();
  const span =
    range === 'custom'
      ? { from: custom.from && `${custom.from}T00:00:00Z`, to: custom.to && `${custom.to}T00:00:00Z` }
      : { from: new Date(now - RANGES[range] * DAY_MS).toISOString(), to: new Date(now).toISOString() };
  const ready = span.from !== '' && span.to !== '';
  const { data, error } = useData(
    () => (ready ? api.spend({ from: span.from, to: span.to, bucket, by }) : Promise.resolve(undefined)),
    [range, custom.from, custom.to, bucket, by],
    onRefused,
  );
  const [csv, setCsv] = useState<string | undefined>(undefined);
  useEffect(() => {
    if (!data) return undefined;
    const url = URL.createObjectURL(new Blob([csvOf(data, measure)], { type: 'text/csv' }));
    setCsv(url);
    return () => URL.revokeObjectURL(url);
  }, [data, measure]);
  return (
    <section>
      <div class="controls">
        <label>
          Range{' '}
          <select aria-label="Range" value={range} onChange={(e) => setRange(e.currentTarget.value as Range)}>
            <option value="24h">last 24 hours</option>
            <option value="7d">last 7 days</option>
            <option value="30d">last 30 days</option>
            <option value="custom">dates…</option>
          </select>
        </label>
        {range === 'custom' && (
          <>
            <input
              type="date"
              aria-label="From"
              value={custom.from}
              onChange={(e) => setCustom({ ...custom, from: e.currentTarget.value })}
            />
            <input
              type="date"
              aria-label="To"
              value={custom.to}
              onChange={(e) => setCustom({ ...custom, to: e.currentTarget.value })}
            />
          </>
        )}
        <label>
          Buckets{' '}
          <select aria-label="Buckets" value={bucket} onChange={(e) => setBucket(e.currentTarget.value as Bucket)}>
            {BUCKETS.map((b) => (
              <option value={b}>{b}</option>
            ))}
          </select>
        </label>
        <label>
          Stacked by{' '}
          <select aria-label="Stacked by" value={by} onChange={(e) => setBy(e.currentTarget.value as SpendGroup)}>
            {SPEND_GROUPS.map((g) => (
              <option value={g}>{g}</option>
            ))}
          </select>
        </label>
        <label>
          Show{' '}
          <select
            aria-label="Show"
            value={measure}
            onChange={(e) => setMeasure(e.currentTarget.value as 'cost' | 'tokens')}
          >
            <option value="cost">cost (USD)</option>
            <option value="tokens">tokens</option>
          </select>
        </label>
        {csv !== undefined && data && (
          <a class="button" href={csv} download={`gatehouse-spend-${data.by}.csv`}>
            Download CSV
          </a>
        )}
      </div>
      {error !== undefined && (
        <p role="alert" class="problem">
          {error}
        </p>
      )}
      {data && (
        <>
          <StackedChart data={data} measure={measure} />
          <table data-testid="spend-totals">
            <thead>
              <tr>
                <th>{data.by}</th>
                <th class="num">requests</th>
                <th class="num">tokens</th>
                <th class="num">cost</th>
                <th class="num">unpriced</th>
              </tr>
            </thead>
            <tbody>
              {data.totals.map((t) => (
                <tr key={t.group}>
                  <td>{t.group}</td>
                  <td class="num">{count(t.requests)}</td>
                  <td class="num">{count(t.tokens)}</td>
                  <td class="num">{usd(t.cost_usd)}</td>
                  <td class="num">{t.unpriced_requests}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {data.totals.length === 0 && <p class="muted">No requests in this range.</p>}
        </>
      )}
    </section>
  );
}

// ---- Keys ----

function Budget({ use, format }: { use: BudgetUse | null; format: (n: number) => string }): JSX.Element {
  if (!use) return <span class="muted">—</span>;
  const share = Math.min(1, use.used / use.limit);
  return (
    <div class="budget" title={`this ${use.period}, until ${when(use.ends_at)}`}>
      <div class="bar">
        <div class={share >= 1 ? 'fill over' : 'fill'} style={{ width: `${(share * 100).toFixed(1)}%` }} />
      </div>
      <span>
        {format(use.used)} of {format(use.limit)} / {use.period}
      </span>
    </div>
  );
}

/** A new key made here, in the browser: only its digest goes in the file, and the key never reaches the server. */
function NewKey(): JSX.Element {
  const [made, setMade] = useState<{ key: string; sha256: string | undefined } | undefined>(undefined);
  const make = async () => {
    const bytes = crypto.getRandomValues(new Uint8Array(32));
    const key = `gh-${btoa(String.fromCharCode(...bytes)).replace(/[+/=]/g, (c) => ({ '+': '-', '/': '_' })[c] ?? '')}`;
    // crypto.subtle exists only in a secure context (https, or localhost): elsewhere the page says how to hash it.
    const digest = globalThis.crypto.subtle as SubtleCrypto | undefined;
    const sha256 = digest
      ? [...new Uint8Array(await digest.digest('SHA-256', new TextEncoder().encode(key)))]
          .map((b) => b.toString(16).padStart(2, '0'))
          .join('')
      : undefined;
    setMade({ key, sha256 });
  };
  return (
    <div class="new-key">
      <button type="button" onClick={() => void make()}>
        New key
      </button>
      {made && (
        <div data-testid="new-key">
          <p>
            Give this key to its holder now: it is shown once and the proxy never sees it. Add the entry to{' '}
            <code>proxy.keys</code> in the configuration file (a reload applies it).
          </p>
          <pre>{made.key}</pre>
          <pre>
            {made.sha256 === undefined
              ? `printf %s '${made.key}' | sha256sum   # then:\n- name: NAME\n  key_sha256: <that digest>`
              : `- name: NAME\n  key_sha256: ${made.sha256}`}
          </pre>
        </div>
      )}
    </div>
  );
}

function KeysPage({ onRefused }: { onRefused: (m: string) => void }): JSX.Element {
  const { data, error } = useData<KeysResponse>(() => api.keys(), [], onRefused);
  return (
    <section>
      <NewKey />
      {error !== undefined && (
        <p role="alert" class="problem">
          {error}
        </p>
      )}
      {data && (
        <table data-testid="keys">
          <thead>
            <tr>
              <th>key</th>
              <th>models</th>
              <th>limits</th>
              <th>token budget</th>
              <th>dollar budget</th>
              <th>expires</th>
              <th>state</th>
              <th>last used</th>
            </tr>
          </thead>
          <tbody>
            {data.keys.map((k) => (
              <tr key={k.name}>
                <td>
                  {k.name}
                  {k.admin && <span class="badge">admin</span>}
                </td>
                <td>{k.models?.join(', ') ?? 'all'}</td>
                <td>
                  {[k.rpm !== null && `${count(k.rpm)} rpm`, k.tpm !== null && `${count(k.tpm)} tpm`]
                    .filter(Boolean)
                    .join(', ') || '—'}
                </td>
                <td>
                  <Budget use={k.budget_tokens} format={count} />
                </td>
                <td>
                  <Budget use={k.budget_usd} format={usd} />
                </td>
                <td>{when(k.expires_at)}</td>
                <td>{k.disabled ? 'disabled' : 'active'}</td>
                <td>{when(k.last_used)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {data?.keys.length === 0 && <p class="muted">No keys in proxy.keys.</p>}
    </section>
  );
}

// ---- Upstreams ----

const ms = (value: number | null): string => (value === null ? '—' : `≤ ${count(value)} ms`);

function UpstreamsPage({ onRefused }: { onRefused: (m: string) => void }): JSX.Element {
  const { data, error } = useData<UpstreamsResponse>(() => api.upstreams(), [], onRefused, 5_000);
  return (
    <section>
      <p class="muted">The last hour, over every replica.</p>
      {error !== undefined && (
        <p role="alert" class="problem">
          {error}
        </p>
      )}
      {data && (
        <table data-testid="upstreams">
          <thead>
            <tr>
              <th>upstream</th>
              <th>state</th>
              <th class="num">requests</th>
              <th class="num">errors</th>
              <th class="num">p50</th>
              <th class="num">p95</th>
              <th class="num">first byte p50</th>
              <th class="num">first byte p95</th>
              <th>last error</th>
            </tr>
          </thead>
          <tbody>
            {data.upstreams.map((u) => (
              <tr key={u.name}>
                <td>
                  {u.name} <span class="muted">{u.protocol}</span>
                </td>
                <td class={u.state === 'serving' ? 'ok' : 'warn'}>{u.state}</td>
                <td class="num">{count(u.requests)}</td>
                <td class="num">{(u.error_rate * 100).toFixed(1)} %</td>
                <td class="num">{ms(u.p50_ms)}</td>
                <td class="num">{ms(u.p95_ms)}</td>
                <td class="num">{ms(u.ttfb_p50_ms)}</td>
                <td class="num">{ms(u.ttfb_p95_ms)}</td>
                <td>{u.last_error ? `${u.last_error.outcome} at ${when(u.last_error.at)}` : '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

// ---- Live ----

function LivePage({ onRefused }: { onRefused: (m: string) => void }): JSX.Element {
  const { data, error } = useData<LiveResponse>(() => api.live(), [], onRefused, 2_000);
  return (
    <section>
      {error !== undefined && (
        <p role="alert" class="problem">
          {error}
        </p>
      )}
      {data && (
        <>
          <p>
            <strong data-testid="in-flight">{data.in_flight}</strong> in flight over {data.replicas}{' '}
            {data.replicas === 1 ? 'replica' : 'replicas'}; the last {data.recent.length} finished:
          </p>
          <table data-testid="live">
            <thead>
              <tr>
                <th>time</th>
                <th>key</th>
                <th>model</th>
                <th>upstream</th>
                <th class="num">status</th>
                <th class="num">tokens in</th>
                <th class="num">tokens out</th>
                <th class="num">cost</th>
                <th class="num">ms</th>
              </tr>
            </thead>
            <tbody>
              {data.recent.map((r, i) => (
                <tr key={`${r.at}-${i}`}>
                  <td>{when(r.at)}</td>
                  <td>{r.key ?? '—'}</td>
                  <td>{r.model ?? '—'}</td>
                  <td>{r.upstream ?? '—'}</td>
                  <td class={r.status >= 400 ? 'num warn' : 'num'}>{r.status}</td>
                  <td class="num">{r.input_tokens ?? '—'}</td>
                  <td class="num">{r.output_tokens ?? '—'}</td>
                  <td class="num">{r.input_tokens === null ? '—' : usd(r.cost_usd)}</td>
                  <td class="num">{count(r.ms)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}

function App(): JSX.Element {
  const [key, setKey] = useState(storedKey());
  const [problem, setProblem] = useState<string | undefined>(undefined);
  const [page, setPage] = useState<Page>(pageOf(location.hash));
  useEffect(() => {
    const onHash = () => setPage(pageOf(location.hash));
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);
  useEffect(() => {
    document.title = `gatehouse console: ${TITLES[page]}`;
  }, [page]);
  const refused = (message: string) => {
    forgetKey();
    setKey(null);
    setProblem(message);
  };
  if (key === null) {
    return (
      <KeyForm
        problem={problem}
        onKey={(k) => {
          keepKey(k);
          setProblem(undefined);
          setKey(k);
        }}
      />
    );
  }
  const Page = { spend: SpendPage, keys: KeysPage, upstreams: UpstreamsPage, live: LivePage }[page];
  return (
    <>
      <nav>
        <strong>gatehouse console</strong>
        {PAGES.map((p) => (
          <a href={`#${p}`} class={p === page ? 'current' : ''} aria-current={p === page ? 'page' : undefined}>
            {TITLES[p]}
          </a>
        ))}
        <button type="button" class="link" onClick={() => refused('Signed out.')}>
          Sign out
        </button>
      </nav>
      <main>
        <h1>{TITLES[page]}</h1>
        <Page onRefused={refused} />
      </main>
    </>
  );
}

render(<App />, document.getElementById('app') as HTMLElement);
