/**
 * What the proxy does while its state backend (Redis) cannot be reached, in one place between the backend and
 * its callers, so that limits, fallback and translation keep their code as it is:
 *   - limits and budgets: skipped (on_unavailable allow) or refused with 503 state_unavailable (deny);
 *   - cooldowns and probes: nothing is cooling down (routing goes on);
 *   - a stored Responses conversation, and whose a passed-through one is: 503 state_unavailable (it exists, it
 *     cannot be read now);
 *   - carried reasoning: none (the request goes as the client sent it);
 *   - writes (tokens settled, failures, answers to remember): skipped; a request admitted while nothing could be
 *     counted reserved nothing, so its settling counts all it spent.
 * The outage is logged once when it begins and once when it ends. While it lasts, one call a second goes to
 * the backend to find out whether it is back and the others answer at once: a backend that hangs would
 * otherwise hold every request for the command timeout.
 */
import type { OnUnavailable } from '../config/state.ts';
import type { Logger } from '../../log.ts';
import { proxyErrors } from '../errors.ts';
import type { Store, TranslationStores } from '../translate/stores.ts';
import { ADMITTED_UNCOUNTED, type SharedState } from './shared.ts';

/** How often a call goes through to a backend that is away. */
const PROBE_MS = 1_000;

export class StateGuard {
  readonly #log: Logger;
  readonly #onUnavailable: OnUnavailable;
  readonly #now: () => number;
  #down = false;
  #probeAt = 0;

  constructor(log: Logger, onUnavailable: OnUnavailable, now: () => number = Date.now) {
    this.#log = log;
    this.#onUnavailable = onUnavailable;
    this.#now = now;
  }

  /** What limits and budgets read: on_unavailable decides whether they are skipped or refuse. */
  limits(state: SharedState): SharedState {
    return this.#state(state, this.#onUnavailable === 'deny');
  }

  /** What routing reads: while the backend is away no upstream is cooling down. */
  routing(state: SharedState): SharedState {
    return this.#state(state, false);
  }

  stores(stores: TranslationStores): TranslationStores {
    return {
      responses: this.#store(stores.responses, () => {
        throw proxyErrors.stateUnavailable();
      }),
      reasoning: this.#store(stores.reasoning, () => undefined),
      // Whose a passed-through answer is cannot be told: its continuation is refused as a stored one is.
      owners: this.#store(stores.owners, () => {
        throw proxyErrors.stateUnavailable();
      }),
    };
  }

  #state(inner: SharedState, refuse: boolean): SharedState {
    // Wrapping every call of a backend that cannot fail would only cost each request its closures and promises.
    if (inner.inProcess) return inner;
    const read = <T>(call: () => T | Promise<T>, open: T): Promise<T> =>
      this.#run(call, () => {
        if (refuse) throw proxyErrors.stateUnavailable();
        return open;
      });
    const write = (call: () => unknown): Promise<void> => this.#run(call, () => undefined).then(() => undefined);
    const { limits, counters, leases } = inner;
    return {
      limits: {
        admit: (key, reserve, at, reserveNano) =>
          read(() => limits.admit(key, reserve, at, reserveNano), ADMITTED_UNCOUNTED),
        settle: (reservation, spent, spentNano) => write(() => limits.settle(reservation, spent, spentNano)),
      },
      counters: {
        // Nothing was counted: a failure in a row is not one more.
        add: (key, amount, expiresAt) =>
          this.#run(
            () => counters.add(key, amount, expiresAt),
            () => 0,
          ),
        get: (key) => read(() => counters.get(key), 0),
        delete: (key) => write(() => counters.delete(key)),
      },
      leases: {
        // The probe after a cooldown goes ahead: with nothing shared, every replica may send its own.
        claim: (key, ttlMs) => read(() => leases.claim(key, ttlMs), true),
        hold: (key, until) => write(() => leases.hold(key, until)),
        until: (key) => read(() => leases.until(key), undefined),
        release: (key) => write(() => leases.release(key)),
      },
      close: () => inner.close(),
    };
  }

  #store<V>(inner: Store<V>, whenDown: () => V | undefined): Store<V> {
    return {
      get: (key) => this.#run(() => inner.get(key), whenDown),
      set: (key, value, size) =>
        this.#run(
          () => inner.set(key, value, size),
          () => undefined,
        ),
    };
  }

  /** The backend's answer, or `whenDown()`'s when it fails or is known to be away. */
  async #run<T>(call: () => T | Promise<T>, whenDown: () => T): Promise<T> {
    if (this.#down) {
      if (this.#now() < this.#probeAt) return whenDown();
      this.#probeAt = this.#now() + PROBE_MS;
    }
    let value: T;
    try {
      value = await call();
    } catch (error) {
      this.#failed(error as Error);
      return whenDown();
    }
    this.reconnected();
    return value;
  }

  /**
   * The backend says it is reachable again: calls go to it from now on, without waiting for the next probe (an
   * answer settling a reservation taken while it was away counts what it spent).
   */
  reconnected(): void {
    if (!this.#down) return;
    this.#down = false;
    this.#log.info('shared state reachable again: limits, cooldowns and stored conversations are back');
  }

  #failed(error: Error): void {
    this.#probeAt = this.#now() + PROBE_MS;
    if (this.#down) return;
    this.#down = true;
    this.#log.warn(
      { err: error.message, on_unavailable: this.#onUnavailable },
      this.#onUnavailable === 'allow'
        ? 'shared state unreachable: limits and budgets are skipped until it is back'
        : 'shared state unreachable: requests of keys with limits or budgets are refused (503) until it is back',
    );
  }
}
