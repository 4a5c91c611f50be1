/**
 * The console: `GET /console`, one document (web/console, built by Vite into dist/console) served with the UI's
 * strict CSP, and the admin endpoints it reads, each answering a type of contract.ts. The page holds an admin
 * key for its tab's session and sends it as a Bearer header: nothing here reads a cookie.
 */
import type { ClientKeyConfig } from '../config/keys.ts';
import type { UpstreamConfig } from '../config/index.ts';
import { documentHeaders, webDocument } from '../../http/web-document.ts';
import type { ProxyContext, ProxyMiddleware } from '../context.ts';
import { proxyErrors } from '../errors.ts';
import type { Fallback } from '../fallback.ts';
import type { Admission } from '../keys.ts';
import { BUCKET_CHARS, costOf, type SeriesSum } from '../usage/query.ts';
import type { UsageStore } from '../usage/store.ts';
import { LATENCY_BOUNDS_MS, RECENT, type ActivitySnapshot, type MinuteStats } from './activity.ts';
import type { ActivityBoard } from './board.ts';
import {
  BUCKETS,
  MAX_RANGE_DAYS,
  SPEND_GROUPS,
  type Bucket,
  type BudgetUse,
  type KeysResponse,
  type LiveResponse,
  type SpendCell,
  type SpendGroup,
  type SpendResponse,
  type UpstreamsResponse,
} from './contract.ts';

export const CONSOLE_PATH = '/console';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const BUCKET_MS: Record<Bucket, number> = { hour: HOUR_MS, day: DAY_MS };
/** The most buckets a spend answer has: hour buckets over more than this want day buckets. */
const MAX_BUCKETS = 2_000;

/** `GET /console`: the page, whoever asks (it holds nothing); its data needs an admin key. */
export function consolePage(): ProxyMiddleware {
  return (ctx) => {
    const html = webDocument('console');
    ctx.set(documentHeaders(html));
    ctx.set('cache-control', 'no-store');
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = html;
  };
}

/** A query parameter given at most once. */
function param(ctx: ProxyContext, name: string): string | undefined {
  const value = ctx.query[name];
  if (Array.isArray(value)) throw proxyErrors.invalidRequest(`${name} may be given once`);
  return value;
}

function oneOf<T extends string>(name: string, value: string | undefined, allowed: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if (!allowed.includes(value as T)) {
    throw proxyErrors.invalidRequest(`${name} must be one of ${allowed.join(', ')}, not ${JSON.stringify(value)}`);
  }
  return value as T;
}

function time(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  // ISO 8601 only: Date.parse would also take "Tuesday" or "1".
  const at = /^\d{4}-\d{2}-\d{2}(?:T[\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)?$/.test(value) ? Date.parse(value) : NaN;
  if (Number.isNaN(at)) {
    throw proxyErrors.invalidRequest(`${name} must be an ISO 8601 time such as 2026-11-24T00:00:00Z`);
  }
  return at;
}

/** The spend page's query: bad values are a 400 naming the parameter. */
export function spendRange(ctx: ProxyContext, now: number) {
  const bucket = oneOf('bucket', param(ctx, 'bucket'), BUCKETS, 'hour');
  const by = oneOf('by', param(ctx, 'by'), SPEND_GROUPS, 'key');
  const step = BUCKET_MS[bucket];
  const to = Math.ceil(time('to', param(ctx, 'to'), now) / step) * step;
  const from = Math.floor(time('from', param(ctx, 'from'), to - 7 * DAY_MS) / step) * step;
  if (from >= to) throw proxyErrors.invalidRequest('from must be before to');
  if (to - from > MAX_RANGE_DAYS * DAY_MS)
    throw proxyErrors.invalidRequest(`a range spans at most ${MAX_RANGE_DAYS} days`);
  if ((to - from) / step > MAX_BUCKETS) {
    throw proxyErrors.invalidRequest(`at most ${MAX_BUCKETS} buckets: use bucket=day for this range`);
  }
  return { from, to, bucket, by };
}

/** `2026-11-24T16` or `2026-11-24` as the ISO time its bucket starts. */
const bucketStart = (bucket: string): string =>
  new Date(bucket.length === 10 ? `${bucket}T00:00:00Z` : `${bucket}:00:00Z`).toISOString();

const cellOf = (s: { requests: number; tokens: number; cost: number; unpriced: number }): SpendCell => ({
  requests: s.requests,
  tokens: s.tokens,
  cost_usd: costOf(s.cost, s.unpriced),
  unpriced_requests: s.unpriced,
});

/** The spend answer from the usage sums: every bucket of the range, each group's cells and totals. */
export function spendResponse(
  q: { from: number; to: number; bucket: Bucket; by: SpendGroup },
  sums: readonly SeriesSum[],
): SpendResponse {
  const buckets: string[] = [];
  for (let at = q.from; at < q.to; at += BUCKET_MS[q.bucket]) buckets.push(new Date(at).toISOString());
  // By the sums' own text of a bucket (`2026-11-24T16`): a week of 100 keys is 16,800 sums, each a Date to make.
  const column = new Map(buckets.map((b, i) => [b.slice(0, BUCKET_CHARS[q.bucket]), i]));
  const zero = () => ({ requests: 0, tokens: 0, cost: 0, unpriced: 0 });
  const add = (sum: ReturnType<typeof zero>, s: SeriesSum) => {
    sum.requests += s.requests;
    sum.tokens += s.tokens;
    sum.cost += s.cost;
    sum.unpriced += s.unpriced;
  };
  const groups = new Map<string, { total: ReturnType<typeof zero>; cells: ReturnType<typeof zero>[] }>();
  for (const s of sums) {
    const i = column.get(s.bucket);
    if (i === undefined) continue;
    let group = groups.get(s.group);
    if (!group) groups.set(s.group, (group = { total: zero(), cells: buckets.map(zero) }));
    add(group.total, s);
    add(group.cells[i] as ReturnType<typeof zero>, s);
  }
  const named = [...groups.entries()].sort(([a, x], [b, y]) => y.total.cost - x.total.cost || (a < b ? -1 : 1));
  return {
    from: new Date(q.from).toISOString(),
    to: new Date(q.to).toISOString(),
    bucket: q.bucket,
    by: q.by,
    buckets,
    series: named.map(([group, { cells }]) => ({ group, cells: cells.map(cellOf) })),
    totals: named.map(([group, { total }]) => ({ group, ...cellOf(total) })),
  };
}

/** Reads the usage backend, which may be Redis and away. */
async function fromUsage<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch {
    throw proxyErrors.stateUnavailable();
  }
}

export function spendEndpoint(usage: UsageStore | undefined, now: () => number = Date.now): ProxyMiddleware {
  return async (ctx) => {
    if (!usage) throw proxyErrors.usageNotKept();
    const q = spendRange(ctx, now());
    const body: SpendResponse = spendResponse(q, await fromUsage(() => usage.series(q)));
    ctx.body = body;
  };
}

const budgetUse = (limit: number, used: number, period: 'day' | 'month', endsAt: number): BudgetUse => ({
  limit,
  used,
  period,
  ends_at: new Date(endsAt).toISOString(),
});

export function keysEndpoint(
  keys: readonly ClientKeyConfig[],
  admission: Admission,
  usage: UsageStore | undefined,
  now: () => number = Date.now,
): ProxyMiddleware {
  return async (ctx) => {
    const at = now();
    const [uses, recent] = await Promise.all([
      Promise.all(keys.map((key) => admission.used(key))),
      usage
        ? fromUsage(() => usage.series({ from: at - 31 * DAY_MS, to: at + HOUR_MS, bucket: 'hour', by: 'key' }))
        : [],
    ]);
    const lastUsed = new Map<string, string>();
    for (const { group, bucket } of recent) if (bucket > (lastUsed.get(group) ?? '')) lastUsed.set(group, bucket);
    const body: KeysResponse = {
      keys: keys.map((key, i) => {
        const use = uses[i];
        const last = lastUsed.get(key.name);
        return {
          name: key.name,
          models: key.models ?? null,
          rpm: key.rpm ?? null,
          tpm: key.tpm ?? null,
          budget_tokens:
            key.budget && use ? budgetUse(key.budget.tokens, use.tokens, key.budget.period, use.endsAt) : null,
          budget_usd:
            key.budgetUsd && use ? budgetUse(key.budgetUsd.usd, use.usd, key.budgetUsd.period, use.endsAt) : null,
          expires_at: key.expiresAt === undefined ? null : new Date(key.expiresAt).toISOString(),
          disabled: key.disabled,
          admin: key.admin,
          last_used: last === undefined ? null : bucketStart(last),
        };
      }),
    };
    ctx.body = body;
  };
}

/** The upper bound (ms) of the bucket a percentile falls in; null for no counts. */
function percentile(counts: readonly number[], p: number): number | null {
  const total = counts.reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  let seen = 0;
  for (const [i, count] of counts.entries()) {
    seen += count;
    if (seen >= p * total) return LATENCY_BOUNDS_MS[i] ?? Infinity;
  }
  return null;
}

function addCounts(into: number[], from: readonly number[]): void {
  for (const [i, count] of from.entries()) into[i] = (into[i] ?? 0) + count;
}

export function upstreamsEndpoint(
  upstreams: readonly UpstreamConfig[],
  fallback: Fallback,
  board: ActivityBoard,
  now: () => number = Date.now,
): ProxyMiddleware {
  return async (ctx) => {
    const names = upstreams.map((u) => u.name);
    const [states, snapshots] = await Promise.all([fallback.states(names), board.snapshots()]);
    const since = now() - HOUR_MS;
    const body: UpstreamsResponse = {
      upstreams: upstreams.map(({ name, protocol }) => {
        const minutes: MinuteStats[] = snapshots.flatMap((s) => s.upstreams[name]?.minutes ?? []);
        const recent = minutes.filter((m) => m.start >= since);
        const ms: number[] = [];
        const ttfb: number[] = [];
        for (const m of recent) {
          addCounts(ms, m.ms);
          addCounts(ttfb, m.ttfb);
        }
        const requests = recent.reduce((n, m) => n + m.requests, 0);
        const errors = recent.reduce((n, m) => n + m.errors, 0);
        const lastError = snapshots
          .map((s) => s.upstreams[name]?.lastError)
          .reduce((a, b) => (b && (!a || b.at > a.at) ? b : a), undefined);
        return {
          name,
          protocol,
          state: states.get(name) ?? 'serving',
          requests,
          error_rate: requests === 0 ? 0 : errors / requests,
          p50_ms: percentile(ms, 0.5),
          p95_ms: percentile(ms, 0.95),
          ttfb_p50_ms: percentile(ttfb, 0.5),
          ttfb_p95_ms: percentile(ttfb, 0.95),
          last_error: lastError ? { at: new Date(lastError.at).toISOString(), outcome: lastError.outcome } : null,
        };
      }),
    };
    ctx.body = body;
  };
}

export function liveResponse(snapshots: readonly ActivitySnapshot[]): LiveResponse {
  return {
    in_flight: snapshots.reduce((n, s) => n + s.inFlight, 0),
    replicas: snapshots.length,
    recent: snapshots
      .flatMap((s) => s.recent)
      .sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0))
      .slice(0, RECENT),
  };
}

export function liveEndpoint(board: ActivityBoard): ProxyMiddleware {
  return async (ctx) => {
    ctx.body = liveResponse(await board.snapshots());
  };
}
