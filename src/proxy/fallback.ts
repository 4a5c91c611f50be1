/**
 * Several upstreams may serve a model: which one a request tries first
 * (`proxy.routing.strategy`), which ones it leaves out (cooling down after
 * failures, or for as long as an upstream's retry-after said), and the one
 * request that probes an upstream once its cooldown is over. What replicas
 * must agree on lives in SharedState.
 */
import type { UpstreamState } from './console/contract.ts';
import type { RoutingConfig } from './config/routing.ts';
import { HttpError } from '../http/errors.ts';
import { UPSTREAM_ERROR_KIND } from './errors.ts';
import type { Resolution } from './routing.ts';
import type { SharedState } from './state/shared.ts';

/** Upstream statuses that another upstream may answer better (529: Anthropic's "overloaded"). */
export const RETRY_STATUSES: ReadonlySet<number> = new Set([429, 500, 502, 503, 504, 529]);

/** The proxy's own failures of one upstream: no connection, no answer in time, no key to call it with. */
const UPSTREAM_FAILURES: ReadonlySet<string | undefined> = new Set([
  'upstream_unreachable',
  'upstream_timeout',
  'upstream_key_missing',
]);

/** A failure another upstream may not have: an upstream's retryable status, or one of UPSTREAM_FAILURES. */
export function retryable(error: unknown): error is HttpError {
  if (!(error instanceof HttpError)) return false;
  if (UPSTREAM_FAILURES.has(error.kind)) return true;
  return error.kind === UPSTREAM_ERROR_KIND && RETRY_STATUSES.has(error.status);
}

/** `retry-after` in seconds or as an HTTP date, in milliseconds from now. */
export function retryAfterMs(value: string | undefined, now: number): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const seconds = Number(value);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(value) - now;
  return Number.isFinite(ms) && ms > 0 ? ms : undefined;
}

export const fallbackErrors = {
  allCooling: (model: string, retryAfter: number) =>
    new HttpError(503, `Every upstream of model ${JSON.stringify(model)} is cooling down after failures`, {
      kind: 'upstreams_cooling_down',
      headers: { 'retry-after': String(Math.max(1, Math.ceil(retryAfter / 1000))) },
    }),
};

export class Fallback {
  readonly #config: RoutingConfig;
  readonly #state: SharedState;
  readonly #now: () => number;
  #turn = 0;
  /** Requests under way per upstream, in this process (least_busy). */
  readonly #busy = new Map<string, number>();

  constructor(config: RoutingConfig, state: SharedState, now: () => number = Date.now) {
    this.#config = config;
    this.#state = state;
    this.#now = now;
  }

  get retries(): number {
    return this.#config.retries;
  }

  /** The candidates in the order they are tried: by strategy, cooling ones left out. */
  async order(model: string, candidates: readonly Resolution[]): Promise<Resolution[]> {
    const { strategy, failuresToCool, cooldownMs } = this.#config;
    let list = [...candidates];
    if (strategy === 'round_robin' && list.length > 1) {
      const start = this.#turn++ % list.length;
      list = [...list.slice(start), ...list.slice(0, start)];
    } else if (strategy === 'least_busy') {
      // Stable: equally busy upstreams keep their file order.
      list.sort((a, b) => this.#load(a) - this.#load(b));
    }
    const { leases, counters } = this.#state;
    // Every candidate's reads at once: with a shared backend they go out together, one round trip for all.
    const states = await Promise.all(
      list.map((c) => {
        const name = c.upstream.config.name;
        return Promise.all([leases.until(`cool:${name}`), counters.get(`fail:${name}`)]);
      }),
    );
    const ready: Resolution[] = [];
    let soonest = Infinity;
    for (const [i, candidate] of list.entries()) {
      const name = candidate.upstream.config.name;
      const [cooling, failures] = states[i] as [number | undefined, number];
      if (cooling !== undefined) {
        soonest = Math.min(soonest, cooling - this.#now());
        continue;
      }
      // Its cooldown is over but it has not answered since: one request probes it.
      if (failures >= failuresToCool && !(await leases.claim(`probe:${name}`, cooldownMs))) {
        soonest = Math.min(soonest, cooldownMs);
        continue;
      }
      ready.push(candidate);
    }
    if (ready.length === 0 && list.length > 0) throw fallbackErrors.allCooling(model, soonest);
    return ready;
  }

  /**
   * Each upstream's state now (for the console): cooling down, probing (its cooldown is over and one request
   * may try it, the failures not yet cleared by an answer) or serving.
   */
  async states(names: readonly string[]): Promise<Map<string, UpstreamState>> {
    const { leases, counters } = this.#state;
    const read = await Promise.all(
      names.map((name) => Promise.all([leases.until(`cool:${name}`), counters.get(`fail:${name}`)])),
    );
    return new Map(
      names.map((name, i) => {
        const [cooling, failures] = read[i] as [number | undefined, number];
        const state =
          cooling !== undefined ? 'cooling down' : failures >= this.#config.failuresToCool ? 'probing' : 'serving';
        return [name, state];
      }),
    );
  }

  /** Whether each upstream is cooling down now (for metrics). */
  async cooling(names: readonly string[]): Promise<Map<string, boolean>> {
    const until = await Promise.all(names.map((name) => this.#state.leases.until(`cool:${name}`)));
    return new Map(names.map((name, i) => [name, until[i] !== undefined]));
  }

  #load(candidate: Resolution): number {
    return this.#busy.get(candidate.upstream.config.name) ?? 0;
  }

  /** Counts a request under way on `name` until the returned function is called. */
  busy(name: string): () => void {
    this.#busy.set(name, (this.#busy.get(name) ?? 0) + 1);
    return () => this.#busy.set(name, (this.#busy.get(name) ?? 1) - 1);
  }

  async succeeded(name: string): Promise<void> {
    const { counters, leases } = this.#state;
    await Promise.all([counters.delete(`fail:${name}`), leases.release(`probe:${name}`)]);
  }

  /** One more failure in a row; enough of them, or a retry-after, cool the upstream down. */
  async failed(name: string, retryAfter?: number): Promise<void> {
    const { counters, leases } = this.#state;
    const { cooldownMs, failuresToCool } = this.#config;
    const now = this.#now();
    // Failures far apart are not "in a row": the count lapses after two cooldowns without one.
    const failures = await counters.add(`fail:${name}`, 1, now + 2 * cooldownMs);
    if (retryAfter !== undefined) await leases.hold(`cool:${name}`, now + retryAfter);
    else if (failures >= failuresToCool) await leases.hold(`cool:${name}`, now + cooldownMs);
    await leases.release(`probe:${name}`);
  }
}
