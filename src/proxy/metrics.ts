/**
 * Prometheus metrics (prom-client): one registry per process, so they outlive
 * anything rebuilt from configuration. Labels carry names (families,
 * upstreams, key names, models), never a key.
 *
 * A request's counts are added to plain numbers, found by one lookup per
 * request (a LabelTree), and handed to prom-client's counters when /metrics
 * is read: a prom-client child hashes its labels on every inc(), and the six
 * counts of a request cost more than the rest of its accounting.
 */
import { collectDefaultMetrics, Counter, Gauge, Registry, type Metric } from 'prom-client';
import { LabelTree } from './label-tree.ts';
import type { RequestRecord } from './request-log.ts';

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** A series' label values, in the order of its metric's label names (a status may be a number). */
type LabelValues = readonly (string | number)[];

/** The labels of a series, as prom-client takes them. */
const labelsOf = <L extends string>(names: readonly L[], values: LabelValues): Record<L, string> =>
  Object.fromEntries(names.map((name, i) => [name, String(values[i])])) as Record<L, string>;

/** One series' count, kept until a scrape hands it to its counter. */
interface Cell<L extends string> {
  labels: Record<L, string>;
  value: number;
}

/** A prom-client Counter fed from cells when scraped. */
class TalliedCounter<L extends string> {
  readonly #cells: LabelTree<LabelValues, Cell<L>>;

  constructor(registry: Registry, name: string, help: string, labelNames: readonly L[]) {
    const cells = (this.#cells = new LabelTree((values) => ({ labels: labelsOf(labelNames, values), value: 0 })));
    new Counter<L>({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        this.reset();
        for (const cell of cells.values()) this.inc(cell.labels, cell.value);
      },
    });
  }

  /** The cell of these label values. */
  cell(values: LabelValues): Cell<L> {
    return this.#cells.get(values);
  }
}

/** A line of a scrape. */
interface Sample {
  labels: Record<string, string | number>;
  value: number;
  metricName: string;
}

/** One series of a histogram: its counts by bucket (the last: above every bound), their sum and count. */
interface Bins {
  labels: Record<string, string>;
  counts: number[];
  sum: number;
  count: number;
}

/**
 * A histogram in plain numbers, shown when scraped, as prom-client's own
 * would be: its observe() hashes and checks the labels on every call, and a
 * request observes two. Registered as any metric is, by its name and get().
 */
class TalliedHistogram {
  readonly name: string;
  readonly help: string;
  readonly #labelNames: readonly string[];
  readonly #bounds: readonly number[];
  #series: LabelTree<LabelValues, Bins>;

  constructor(
    registry: Registry,
    name: string,
    help: string,
    labelNames: readonly string[],
    bounds: readonly number[],
  ) {
    this.name = name;
    this.help = help;
    this.#labelNames = labelNames;
    this.#bounds = bounds;
    this.#series = this.#tree();
    registry.registerMetric(this as unknown as Metric);
  }

  #tree(): LabelTree<LabelValues, Bins> {
    return new LabelTree((values) => ({
      labels: labelsOf(this.#labelNames, values),
      counts: this.#bounds.map(() => 0).concat(0),
      sum: 0,
      count: 0,
    }));
  }

  /** The series of these label values. */
  series(values: LabelValues): Bins {
    return this.#series.get(values);
  }

  observe(bins: Bins, value: number): void {
    let i = 0;
    while (i < this.#bounds.length && value > (this.#bounds[i] as number)) i++;
    (bins.counts[i] as number)++;
    bins.sum += value;
    bins.count++;
  }

  /** What the registry writes out: prom-client's shape for a histogram. */
  get(): Promise<{ name: string; help: string; type: 'histogram'; values: Sample[]; aggregator: 'sum' }> {
    const values: Sample[] = [];
    for (const { labels, counts, sum, count } of this.#series.values()) {
      let below = 0;
      for (const [i, bound] of this.#bounds.entries()) {
        below += counts[i] as number;
        values.push({ labels: { ...labels, le: bound }, value: below, metricName: `${this.name}_bucket` });
      }
      values.push({ labels: { ...labels, le: '+Inf' }, value: count, metricName: `${this.name}_bucket` });
      values.push({ labels, value: sum, metricName: `${this.name}_sum` });
      values.push({ labels, value: count, metricName: `${this.name}_count` });
    }
    return Promise.resolve({ name: this.name, help: this.help, type: 'histogram', values, aggregator: 'sum' });
  }

  reset(): void {
    this.#series = this.#tree();
  }
}

/** A request's kind: family, endpoint, status, upstream, key and model ('' for none). */
type ShapeLabels = [family: string, endpoint: string, status: number, upstream: string, key: string, model: string];

/** Everything a request of one kind counts into. */
interface Shape {
  /** What its latency series and token counts are made from, when first needed. */
  labels: { family: string; upstream: string; key: string; model: string };
  requests: Cell<string>;
  /** Made when first needed: requests that reached no upstream or named no model have none. */
  times?: { duration: Bins; ttfb: Bins };
  tokens?: { input: Cell<string>; output: Cell<string>; cached: Cell<string> };
  cost?: Cell<string>;
}

export class ProxyMetrics {
  readonly registry = new Registry();
  readonly #requests = new TalliedCounter(
    this.registry,
    'gatehouse_requests_total',
    'Requests answered, by client family, endpoint, status, upstream and key name.',
    ['family', 'endpoint', 'status', 'upstream', 'key'],
  );
  readonly #duration = new TalliedHistogram(
    this.registry,
    'gatehouse_request_duration_seconds',
    'Time from the request to the end of its answer (streams included).',
    ['family', 'upstream'],
    LATENCY_BUCKETS,
  );
  readonly #ttfb = new TalliedHistogram(
    this.registry,
    'gatehouse_time_to_first_byte_seconds',
    "Time from the request to its answer's status line.",
    ['family', 'upstream'],
    LATENCY_BUCKETS,
  );
  readonly #tokens = new TalliedCounter(
    this.registry,
    'gatehouse_tokens_total',
    'Tokens of model requests, by key name, model and direction (input, output, cached input).',
    ['key', 'model', 'direction'],
  );
  readonly #cost = new TalliedCounter(
    this.registry,
    'gatehouse_cost_usd_total',
    'USD of model requests at their prices, by key name and model (models without a price add nothing).',
    ['key', 'model'],
  );
  readonly #streams: Gauge = new Gauge({
    name: 'gatehouse_streams_in_flight',
    help: 'Streamed answers under way.',
    registers: [this.registry],
    collect: () => {
      this.#streams.set(this.streamsInFlight());
    },
  });
  readonly #attempts = new TalliedCounter(
    this.registry,
    'gatehouse_upstream_attempts_total',
    'Tries of an upstream, by outcome (its status, or what went wrong before one came).',
    ['upstream', 'outcome'],
  );
  readonly #retries = new TalliedCounter(
    this.registry,
    'gatehouse_upstream_retries_total',
    'Tries of an upstream after another failed for the same request (fallback).',
    ['upstream'],
  );
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
  /** WebSocket connections open (Responses API): the process's, which reloads keep. */
  webSocketsOpen: () => number = () => 0;
  readonly #webSockets: Gauge = new Gauge({
    name: 'gatehouse_websockets_open',
    help: 'WebSocket connections open (the Responses API over WebSocket).',
    registers: [this.registry],
    collect: () => {
      this.#webSockets.set(this.webSocketsOpen());
    },
  });
  readonly webSocketTurns = new Counter({
    name: 'gatehouse_websocket_turns_total',
    help: 'response.create frames sent on as requests (each is also counted with the requests of its route).',
    registers: [this.registry],
  });
  readonly droppedSpans = new Counter({
    name: 'gatehouse_trace_spans_dropped_total',
    help: 'Spans that never reached the collector: its queue was full (queue_full), or their export failed.',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly usageWriteFailures = new Counter({
    name: 'gatehouse_usage_write_failures_total',
    help: 'Batches of usage that could not be written to the usage file (kept for the next try).',
    registers: [this.registry],
  });

  /** Counts the streams under way when scraped: the app's, which a reload replaces. */
  streamsInFlight: () => number = () => 0;

  readonly #shapes = new LabelTree<ShapeLabels, Shape>(([family, endpoint, status, upstream, key, model]) => ({
    labels: { family, upstream, key, model },
    requests: this.#requests.cell([family, endpoint, status, upstream, key]),
  }));

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'gatehouse_' });
  }

  #times({ labels: { family, upstream } }: Shape): NonNullable<Shape['times']> {
    return { duration: this.#duration.series([family, upstream]), ttfb: this.#ttfb.series([family, upstream]) };
  }

  #tokensOf({ labels: { key, model } }: Shape): NonNullable<Shape['tokens']> {
    const cell = (direction: string) => this.#tokens.cell([key, model, direction]);
    return { input: cell('input'), output: cell('output'), cached: cell('cached') };
  }

  observe(r: RequestRecord): void {
    const shape = this.#shapes.get([
      r.family ?? '',
      r.endpoint,
      r.status,
      r.upstream ?? '',
      r.key?.name ?? '',
      r.countedModel ?? '',
    ]);
    shape.requests.value++;
    for (let i = 0; i < r.attempts.length; i++) {
      const { upstream, outcome } = r.attempts[i] as RequestRecord['attempts'][number];
      this.#attempts.cell([upstream, outcome]).value++;
      if (i > 0) this.#retries.cell([upstream]).value++;
    }
    if (r.upstream === undefined) return;
    const times = (shape.times ??= this.#times(shape));
    this.#duration.observe(times.duration, r.ms / 1000);
    if (r.ttfbMs !== undefined) this.#ttfb.observe(times.ttfb, r.ttfbMs / 1000);
    if (r.usage && r.countedModel !== undefined) {
      const tokens = (shape.tokens ??= this.#tokensOf(shape));
      tokens.input.value += r.usage.input;
      tokens.output.value += r.usage.output;
      tokens.cached.value += r.usage.cached;
      if (r.cost != null) (shape.cost ??= this.#cost.cell([shape.labels.key, shape.labels.model])).value += r.cost;
    }
  }
}
