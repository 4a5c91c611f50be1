/**
 * What the console's Upstreams and Live pages show, kept by each process: requests in flight, the last
 * finished ones (no bodies, no keys: a key's name), and per upstream and minute of the last hour its requests,
 * errors, latency and time to first byte as histogram counts. A snapshot of it is plain JSON, so replicas
 * sharing Redis publish theirs (board.ts) and any of them adds every replica's up.
 */
import type { ProxyMiddleware } from '../context.ts';
import type { RequestRecord, RequestSink } from '../request-log.ts';
import type { LiveRequest } from './contract.ts';

/** How many finished requests are kept. */
export const RECENT = 200;
const MINUTE_MS = 60_000;
const MINUTES = 60;
/** Upper bounds (ms) of the latency histograms: a percentile is shown as its bucket's bound. */
export const LATENCY_BOUNDS_MS = [5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000];

/** One upstream's minute. */
export interface MinuteStats {
  /** ms since the epoch: the minute's start. */
  start: number;
  requests: number;
  /** Answers of 500 or more, and failures with none (connect, timeout). */
  errors: number;
  /** Counts per LATENCY_BOUNDS_MS bucket, the last above every bound. */
  ms: number[];
  ttfb: number[];
}

export interface UpstreamActivity {
  minutes: MinuteStats[];
  lastError: { at: number; outcome: string } | undefined;
}

/** What a process publishes: JSON as it is. */
export interface ActivitySnapshot {
  inFlight: number;
  recent: LiveRequest[];
  upstreams: Record<string, UpstreamActivity>;
}

const bucketOf = (ms: number): number => {
  let i = 0;
  while (i < LATENCY_BOUNDS_MS.length && ms > (LATENCY_BOUNDS_MS[i] as number)) i++;
  return i;
};

const OWN = /^\/(?:internal\/|console$|metrics$|healthz$)/;

const failed = (outcome: number | string): boolean => typeof outcome === 'string' || outcome >= 500;

/** A finished request as kept: its time as a number, made text only when a snapshot is read (it costs a µs). */
type Finished = Omit<LiveRequest, 'at'> & { at: number };

export class Activity {
  #inFlight = 0;
  /** A ring: the next write goes to #next. */
  readonly #recent: (Finished | undefined)[] = new Array<Finished | undefined>(RECENT);
  #next = 0;
  readonly #upstreams = new Map<string, UpstreamActivity>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Counts the requests under way, not the proxy's own pages and admin reads (the console's own included). */
  readonly counter: ProxyMiddleware = (ctx, next) => {
    if (OWN.test(ctx.path)) return next();
    this.#inFlight++;
    // 'close' comes once: on(), not once(), which wraps the listener for every request.
    ctx.res.on('close', () => this.#inFlight--);
    return next();
  };

  /** Takes each finished model request (a sink of the request log). */
  readonly sink: RequestSink = (r) => {
    if (r.model === undefined) return;
    this.#recent[this.#next] = {
      at: r.at,
      key: r.key?.name ?? null,
      model: r.model,
      upstream: r.upstream ?? null,
      status: r.status,
      input_tokens: r.usage?.input ?? null,
      output_tokens: r.usage?.output ?? null,
      cost_usd: r.cost ?? null,
      ms: Math.round(r.ms),
    };
    this.#next = (this.#next + 1) % RECENT;
    for (const attempt of r.attempts) this.#attempt(r, attempt);
  };

  #attempt(r: RequestRecord, { upstream, outcome, ms }: RequestRecord['attempts'][number]): void {
    let activity = this.#upstreams.get(upstream);
    if (!activity) this.#upstreams.set(upstream, (activity = { minutes: [], lastError: undefined }));
    const start = r.at - (r.at % MINUTE_MS);
    let minute = activity.minutes.at(-1);
    if (minute?.start !== start) {
      const zeros = () => new Array<number>(LATENCY_BOUNDS_MS.length + 1).fill(0);
      minute = { start, requests: 0, errors: 0, ms: zeros(), ttfb: zeros() };
      activity.minutes.push(minute);
      if (activity.minutes.length > MINUTES) activity.minutes.shift();
    }
    minute.requests++;
    if (failed(outcome)) {
      minute.errors++;
      activity.lastError = { at: r.at, outcome: String(outcome) };
    }
    // The served upstream's whole answer and first byte; a failed try's time until it failed.
    const served = upstream === r.upstream && !failed(outcome);
    (minute.ms[bucketOf(served ? r.ms : ms)] as number)++;
    if (served && r.ttfbMs !== undefined) (minute.ttfb[bucketOf(r.ttfbMs)] as number)++;
  }

  snapshot(): ActivitySnapshot {
    const recent: LiveRequest[] = [];
    for (let i = 1; i <= RECENT; i++) {
      const entry = this.#recent[(this.#next - i + RECENT) % RECENT];
      if (entry) recent.push({ ...entry, at: new Date(entry.at).toISOString() });
    }
    const since = this.#now() - MINUTES * MINUTE_MS;
    const upstreams: Record<string, UpstreamActivity> = {};
    for (const [name, { minutes, lastError }] of this.#upstreams) {
      upstreams[name] = { minutes: minutes.filter((m) => m.start >= since), lastError };
    }
    return { inFlight: this.#inFlight, recent, upstreams };
  }
}
