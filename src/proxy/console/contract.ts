/**
 * The console's admin endpoints, written once: every query and answer of `GET /internal/console/*`, imported by
 * the proxy (src/proxy/console/) and by the page (web/console/). Plain types and constants only: this module is
 * bundled into the page, so it imports nothing that needs Node.
 */

export const SPEND_GROUPS = ['key', 'model', 'upstream'] as const;
export type SpendGroup = (typeof SPEND_GROUPS)[number];
export const BUCKETS = ['hour', 'day'] as const;
export type Bucket = (typeof BUCKETS)[number];

/** The longest range the spend page asks for at once. */
export const MAX_RANGE_DAYS = 400;

export const SPEND_PATH = '/internal/console/spend';
export const KEYS_PATH = '/internal/console/keys';
export const UPSTREAMS_PATH = '/internal/console/upstreams';
export const LIVE_PATH = '/internal/console/live';

/** `GET /internal/console/spend?from=ISO&to=ISO&bucket=hour|day&by=key|model|upstream` */
export interface SpendQuery {
  /** ISO 8601 times; `from` rounded down to its bucket, `to` excluded. */
  from: string;
  to: string;
  bucket: Bucket;
  by: SpendGroup;
}

/** One group's sums in one bucket, or over the whole range. */
export interface SpendCell {
  requests: number;
  /** Input and output tokens. */
  tokens: number;
  /** USD of the priced requests; null when all were unpriced. */
  cost_usd: number | null;
  unpriced_requests: number;
}

export interface SpendResponse {
  from: string;
  to: string;
  bucket: Bucket;
  by: SpendGroup;
  /** Every bucket's start in the range, ISO 8601, oldest first (buckets without requests included). */
  buckets: string[];
  /** Per group: its cells, one per bucket, in `buckets` order. */
  series: { group: string; cells: SpendCell[] }[];
  /** Per group, over the whole range, most spent first. */
  totals: ({ group: string } & SpendCell)[];
}

/** A budget and how much of it this period has used. */
export interface BudgetUse {
  limit: number;
  used: number;
  period: 'day' | 'month';
  /** ISO 8601: when the period ends. */
  ends_at: string;
}

/** `GET /internal/console/keys` */
export interface KeysResponse {
  keys: {
    name: string;
    /** Globs over model names; null: every model. */
    models: string[] | null;
    rpm: number | null;
    tpm: number | null;
    budget_tokens: BudgetUse | null;
    budget_usd: BudgetUse | null;
    /** ISO 8601; null: never. */
    expires_at: string | null;
    disabled: boolean;
    admin: boolean;
    /** The hour (ISO 8601) of its latest request in the last 31 days; null: none. */
    last_used: string | null;
  }[];
}

export const UPSTREAM_STATES = ['serving', 'cooling down', 'probing'] as const;
export type UpstreamState = (typeof UPSTREAM_STATES)[number];

/** `GET /internal/console/upstreams`: the last hour, every replica's requests. */
export interface UpstreamsResponse {
  upstreams: {
    name: string;
    protocol: string;
    state: UpstreamState;
    requests: number;
    /** Answers of 500 or more and failures without one (connect, timeout), over requests. */
    error_rate: number;
    /** Milliseconds, the upper bound of the histogram bucket the percentile falls in; null: no requests. */
    p50_ms: number | null;
    p95_ms: number | null;
    ttfb_p50_ms: number | null;
    ttfb_p95_ms: number | null;
    last_error: { at: string; outcome: string } | null;
  }[];
}

/** One finished request as the live page shows it: never a body or a key, only the key's name. */
export interface LiveRequest {
  at: string;
  key: string | null;
  model: string | null;
  upstream: string | null;
  status: number;
  input_tokens: number | null;
  output_tokens: number | null;
  cost_usd: number | null;
  ms: number;
}

/** `GET /internal/console/live`: in flight now and the last finished, newest first, over every replica. */
export interface LiveResponse {
  in_flight: number;
  replicas: number;
  recent: LiveRequest[];
}

/** Every error answer of these endpoints: `{"error": "<message>"}`. */
export interface ConsoleError {
  error: string;
}
