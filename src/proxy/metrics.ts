/**
 * Prometheus metrics (prom-client): one registry per process, so they outlive
 * anything rebuilt from configuration. Labels carry names (families,
 * upstreams, key names, models), never a key.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { RequestRecord } from './request-log.ts';

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

export class ProxyMetrics {
  readonly registry = new Registry();
  readonly #requests = new Counter({
    name: 'gatehouse_requests_total',
    help: 'Requests answered, by client family, endpoint, status, upstream and key name.',
    labelNames: ['family', 'endpoint', 'status', 'upstream', 'key'] as const,
    registers: [this.registry],
  });
  readonly #duration = new Histogram({
    name: 'gatehouse_request_duration_seconds',
    help: 'Time from the request to the end of its answer (streams included).',
    labelNames: ['family', 'upstream'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly #ttfb = new Histogram({
    name: 'gatehouse_time_to_first_byte_seconds',
    help: "Time from the request to its answer's status line.",
    labelNames: ['family', 'upstream'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly #tokens = new Counter({
    name: 'gatehouse_tokens_total',
    help: 'Tokens of model requests, by key name, model and direction (input, output, cached input).',
    labelNames: ['key', 'model', 'direction'] as const,
    registers: [this.registry],
  });
  readonly #streams: Gauge = new Gauge({
    name: 'gatehouse_streams_in_flight',
    help: 'Streamed answers under way.',
    registers: [this.registry],
    collect: () => {
      this.#streams.set(this.streamsInFlight());
    },
  });
  readonly #attempts = new Counter({
    name: 'gatehouse_upstream_attempts_total',
    help: 'Tries of an upstream, by outcome (its status, or what went wrong before one came).',
    labelNames: ['upstream', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly #retries = new Counter({
    name: 'gatehouse_upstream_retries_total',
    help: 'Tries of an upstream after another failed for the same request (fallback).',
    labelNames: ['upstream'] as const,
    registers: [this.registry],
  });
  /** Upstream names and whether each is cooling down now: the app's, which a reload replaces. */
  cooling: () => Promise<Map<string, boolean>> = () => Promise.resolve(new Map<string, boolean>());
  readonly #cooling: Gauge = new Gauge({
    name: 'gatehouse_upstream_cooling_down',
    help: '1 while an upstream is left out after failures or a retry-after (circuit open), else 0.',
    labelNames: ['upstream'] as const,
    registers: [this.registry],
    collect: async () => {
      for (const [upstream, cooling] of await this.cooling()) this.#cooling.set({ upstream }, cooling ? 1 : 0);
    },
  });
  readonly usageWriteFailures = new Counter({
    name: 'gatehouse_usage_write_failures_total',
    help: 'Batches of usage that could not be written to the usage file (kept for the next try).',
    registers: [this.registry],
  });

  /** Counts the streams under way when scraped: the app's, which a reload replaces. */
  streamsInFlight: () => number = () => 0;

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'gatehouse_' });
  }

  // Children per label values, made once: prom-client would otherwise hash a labels object on every call.
  readonly #request = labelled(this.#requests);
  readonly #timesOf = labelled({
    labels: (family: string, upstream: string) => ({
      duration: this.#duration.labels(family, upstream),
      ttfb: this.#ttfb.labels(family, upstream),
    }),
  });
  readonly #tokensOf = labelled(this.#tokens);
  readonly #attemptOf = labelled(this.#attempts);
  readonly #retryOf = labelled(this.#retries);

  observe(r: RequestRecord): void {
    const upstream = r.upstream ?? '';
    const family = r.family ?? '';
    this.#request(family, r.endpoint, String(r.status), upstream, r.key ?? '').inc();
    r.attempts.forEach((attempt, i) => {
      this.#attemptOf(attempt.upstream, String(attempt.outcome)).inc();
      if (i > 0) this.#retryOf(attempt.upstream).inc();
    });
    if (r.upstream === undefined) return;
    const times = this.#timesOf(family, upstream);
    times.duration.observe(r.ms / 1000);
    if (r.ttfbMs !== undefined) times.ttfb.observe(r.ttfbMs / 1000);
    if (r.usage && r.model !== undefined) {
      const key = r.key ?? '';
      this.#tokensOf(key, r.model, 'input').inc(r.usage.input);
      this.#tokensOf(key, r.model, 'output').inc(r.usage.output);
      this.#tokensOf(key, r.model, 'cached').inc(r.usage.cached);
    }
  }
}

function labelled<T>(metric: { labels(...values: string[]): T }): (...values: string[]) => T {
  const children = new Map<string, T>();
  return (...values) => {
    const id = values.join('\0');
    let child = children.get(id);
    if (!child) children.set(id, (child = metric.labels(...values)));
    return child;
  };
}
