import type { DatabaseSync } from 'node:sqlite';
import { parseDuration } from '../../config/formats.ts';
import type { Bucket, SpendGroup } from '../console/contract.ts';

export const USAGE_GROUPS = ['key', 'model', 'upstream', 'day'] as const;
export type UsageGroup = (typeof USAGE_GROUPS)[number];

/** What to sum: from `since` (ms since the epoch), one key or all, grouped `by`. */
export interface UsageQuery {
  since: number;
  key: string | undefined;
  by: UsageGroup;
}

export interface UsageRow {
  /** The key's, model's or upstream's name, or the UTC day. */
  group: string;
  requests: number;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  /** Requests whose tokens are the proxy's estimate (the upstream reported none). */
  estimated_requests: number;
  /** Requests answered with a status of 400 or more. */
  errors: number;
  avg_ms: number;
  /**
   * USD of the requests with a price, as priced when each was recorded; null when the group's tokens were all of
   * models without one (its cost is unknown, not 0).
   */
  cost_usd: number | null;
  /** Requests with tokens of a model without a price: not in cost_usd. */
  unpriced_requests: number;
}

/** Sums of USD: to the nano-dollar, so that adding up floats shows no 0.30000000000000004. */
export const roundUsd = (usd: number): number => Math.round(usd * 1e9) / 1e9;

/** What a group's cost sum says: unknown when it has only unpriced tokens. */
export const costOf = (usd: number, unpriced: number): number | null =>
  usd === 0 && unpriced > 0 ? null : roundUsd(usd);

/** A query as a user writes it (the CLI's flags, /internal/usage's parameters); throws a message on bad input. */
export function usageQuery(raw: { since?: string; key?: string; by?: string }, now: number): UsageQuery {
  const by = raw.by ?? 'key';
  if (!USAGE_GROUPS.includes(by as UsageGroup)) throw new Error(`by must be one of ${USAGE_GROUPS.join(', ')}`);
  let ago: number;
  try {
    ago = parseDuration(raw.since ?? '7d');
  } catch {
    throw new Error('since must be a duration such as 7d, 24h or 30m');
  }
  if (raw.key === '') throw new Error('key must be a key name');
  return { since: now - ago, key: raw.key, by: by as UsageGroup };
}

const COLUMNS: Record<UsageGroup, string> = {
  key: 'key',
  model: 'model',
  upstream: 'upstream',
  day: 'substr(hour, 1, 10)',
};

/** Sums per group, by hour buckets: `since` counts from the start of its hour. */
export function queryUsage(db: DatabaseSync, q: UsageQuery): UsageRow[] {
  const hour = new Date(q.since).toISOString().slice(0, 13);
  const sql = `SELECT ${COLUMNS[q.by]} AS "group", SUM(requests) AS requests,
      SUM(input_tokens) AS input_tokens, SUM(output_tokens) AS output_tokens, SUM(cached_tokens) AS cached_tokens,
      SUM(estimated_requests) AS estimated_requests,
      SUM(CASE WHEN status >= 400 THEN requests ELSE 0 END) AS errors,
      ROUND(SUM(total_ms) / SUM(requests), 1) AS avg_ms,
      SUM(cost_usd) AS cost_usd, SUM(unpriced_requests) AS unpriced_requests
    FROM usage WHERE hour >= ? ${q.key === undefined ? '' : 'AND key = ?'}
    GROUP BY 1 ORDER BY 1`;
  const params = q.key === undefined ? [hour] : [hour, q.key];
  const rows = db.prepare(sql).all(...params) as unknown as (Omit<UsageRow, 'cost_usd'> & { cost_usd: number })[];
  return rows.map((row) => ({ ...row, cost_usd: costOf(row.cost_usd, row.unpriced_requests) }));
}

/** What one hour × key × model × upstream × status adds up to. */
export interface UsageSum {
  hour: string;
  key: string;
  model: string;
  upstream: string;
  status: number;
  requests: number;
  input: number;
  output: number;
  cached: number;
  estimated: number;
  ms: number;
  /** USD of the priced requests. */
  cost: number;
  unpriced: number;
}

const GROUP_OF: Record<UsageGroup, (s: UsageSum) => string> = {
  key: (s) => s.key,
  model: (s) => s.model,
  upstream: (s) => s.upstream,
  day: (s) => s.hour.slice(0, 10),
};

/** queryUsage's answer computed from sums read elsewhere (Redis): the same rows, in the same order. */
export function sumUsage(sums: readonly UsageSum[], q: UsageQuery): UsageRow[] {
  const hour = new Date(q.since).toISOString().slice(0, 13);
  const groups = new Map<string, UsageRow & { ms: number; cost_usd: number }>();
  for (const s of sums) {
    if (s.hour < hour || (q.key !== undefined && s.key !== q.key)) continue;
    const group = GROUP_OF[q.by](s);
    let row = groups.get(group);
    if (!row) {
      const zero = { requests: 0, input_tokens: 0, output_tokens: 0, cached_tokens: 0, estimated_requests: 0 };
      row = { group, ...zero, errors: 0, avg_ms: 0, ms: 0, cost_usd: 0, unpriced_requests: 0 };
      groups.set(group, row);
    }
    row.requests += s.requests;
    row.input_tokens += s.input;
    row.output_tokens += s.output;
    row.cached_tokens += s.cached;
    row.estimated_requests += s.estimated;
    if (s.status >= 400) row.errors += s.requests;
    row.ms += s.ms;
    row.cost_usd += s.cost;
    row.unpriced_requests += s.unpriced;
  }
  // SQLite orders text by its bytes; for UTF-16 strings that is code point order.
  const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
  return [...groups.values()]
    .sort((a, b) => byBytes(a.group, b.group))
    .map(({ ms, ...row }) => ({
      ...row,
      avg_ms: Math.round((ms / row.requests) * 10) / 10,
      cost_usd: costOf(row.cost_usd, row.unpriced_requests),
    }));
}

/**
 * Sums by time bucket and group, from the bucket `from` is in to before the one `to` is in (ms since the epoch):
 * the console's spend.
 */
export interface SeriesQuery {
  from: number;
  to: number;
  bucket: Bucket;
  by: SpendGroup;
}

/** One group's sums in one bucket (`2026-11-24T16` or `2026-11-24`). */
export interface SeriesSum {
  bucket: string;
  group: string;
  requests: number;
  /** Input and output tokens. */
  tokens: number;
  cost: number;
  unpriced: number;
}

/** The `hour` column's text of the hour a time is in: `2026-11-24T16`. */
export const hourOf = (at: number): string => new Date(at).toISOString().slice(0, 13);

/** The length of a bucket's text: `2026-11-24T16`, `2026-11-24`. */
export const BUCKET_CHARS: Record<Bucket, number> = { hour: 13, day: 10 };

/** The first and the last bucket (excluded) of a series: the buckets `from` and `to` are in. */
const bucketRange = (q: SeriesQuery): [string, string] => {
  const chars = BUCKET_CHARS[q.bucket];
  return [new Date(q.from).toISOString().slice(0, chars), new Date(q.to).toISOString().slice(0, chars)];
};

/** The spend sums of a range's buckets, as the usage file keeps them (store.ts: one row per bucket and group). */
export function querySeries(db: DatabaseSync, q: SeriesQuery): SeriesSum[] {
  const sql = `SELECT bucket, "group", requests, tokens, cost_usd AS cost, unpriced_requests AS unpriced
    FROM spend WHERE span = ? AND by = ? AND bucket >= ? AND bucket < ?`;
  return db.prepare(sql).all(q.bucket, q.by, ...bucketRange(q)) as unknown as SeriesSum[];
}

/** querySeries' answer from sums read elsewhere (Redis). */
export function sumSeries(sums: readonly UsageSum[], q: SeriesQuery): SeriesSum[] {
  const [from, to] = bucketRange(q);
  const cells = new Map<string, SeriesSum>();
  for (const s of sums) {
    const bucket = s.hour.slice(0, BUCKET_CHARS[q.bucket]);
    if (bucket < from || bucket >= to) continue;
    const group = GROUP_OF[q.by](s);
    const id = JSON.stringify([bucket, group]);
    let cell = cells.get(id);
    if (!cell) cells.set(id, (cell = { bucket, group, requests: 0, tokens: 0, cost: 0, unpriced: 0 }));
    cell.requests += s.requests;
    cell.tokens += s.input + s.output;
    cell.cost += s.cost;
    cell.unpriced += s.unpriced;
  }
  return [...cells.values()];
}
