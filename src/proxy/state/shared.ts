/**
 * State that replicas of a team's proxy must agree on: rate-limit windows,
 * budget counters, circuit cooldowns. Three small primitives, each call atomic
 * on its own, so the features above them (limits, budgets, fallback) are
 * written once and the backend is a choice of configuration: one process's
 * memory here, or a Redis server shared by every replica.
 */

/** What a limited take answers: taken, or refused with the time until it would fit. */
export type Admission = { ok: true } | { ok: false; retryAfterMs: number };

/**
 * Sliding windows of amounts (requests or tokens) over the last `windowMs`, by
 * key, in steps of WINDOW_STEP_MS: an amount counts until the whole second it
 * was recorded in has left the window, so no span of `windowMs` ever holds more
 * than the limit, and a window's size does not grow with the request rate.
 */
export interface RateWindows {
  /**
   * Records `amount` now if the window's sum plus `amount` stays within
   * `limit`; otherwise records nothing and says how long until enough has
   * left the window (the whole window when `amount` alone exceeds `limit`).
   */
  take(key: string, amount: number, limit: number, windowMs: number): Promise<Admission>;
  /** Records `amount` now whatever the sum (tokens learnt once a response is done). */
  add(key: string, amount: number, windowMs: number): Promise<void>;
  /** The window's sum now. */
  sum(key: string, windowMs: number): Promise<number>;
}

/** Counters that end at a fixed time: budgets per day or month, consecutive failures. */
export interface Counters {
  /** Adds `amount` and answers the new value; the counter is gone after `expiresAt` (ms since the epoch). */
  add(key: string, amount: number, expiresAt: number): Promise<number>;
  /** The value, 0 when absent or expired. */
  get(key: string): Promise<number>;
  delete(key: string): Promise<void>;
}

/** Time-limited marks: a circuit's cooldown, the single probe allowed after it. */
export interface Leases {
  /** Takes `key` for `ttlMs` if nobody holds it: true for exactly one caller among replicas. */
  claim(key: string, ttlMs: number): Promise<boolean>;
  /** Holds `key` until `until` (ms since the epoch), replacing any holder. */
  hold(key: string, until: number): Promise<void>;
  /** When `key`'s hold ends, or undefined when nobody holds it. */
  until(key: string): Promise<number | undefined>;
  release(key: string): Promise<void>;
}

/** The resolution of sliding windows. */
export const WINDOW_STEP_MS = 1_000;

export interface SharedState {
  windows: RateWindows;
  counters: Counters;
  leases: Leases;
  /** This process's memory: its calls never fail, so nothing needs to stand in for it (StateGuard). */
  readonly inProcess?: true;
  /** Ends the backend's connections (nothing to do in memory). */
  close(): Promise<void>;
}

/** One answer for every take that fits: nothing to allocate. */
const TAKEN: Admission = { ok: true };

interface Window {
  /** [step start, amount] pairs, oldest first. */
  steps: [number, number][];
  total: number;
}

/** One process's SharedState. Keys come from configuration (key and upstream names), so the maps stay small. */
export function memoryState(now: () => number = Date.now): SharedState {
  const windows = new Map<string, Window>();
  const counters = new Map<string, { value: number; expiresAt: number }>();
  const leases = new Map<string, number>();

  const windowOf = (key: string, windowMs: number): Window => {
    let window = windows.get(key);
    if (!window) windows.set(key, (window = { steps: [], total: 0 }));
    const start = now() - windowMs;
    while (window.steps.length > 0 && (window.steps[0] as [number, number])[0] + WINDOW_STEP_MS <= start) {
      window.total -= (window.steps.shift() as [number, number])[1];
    }
    return window;
  };
  const record = (window: Window, amount: number): void => {
    const at = now();
    const step = at - (at % WINDOW_STEP_MS);
    const last = window.steps.at(-1);
    if (last?.[0] === step) last[1] += amount;
    else window.steps.push([step, amount]);
    window.total += amount;
  };
  const counter = (key: string): { value: number; expiresAt: number } | undefined => {
    const entry = counters.get(key);
    if (entry && entry.expiresAt <= now()) {
      counters.delete(key);
      return undefined;
    }
    return entry;
  };
  const lease = (key: string): number | undefined => {
    const until = leases.get(key);
    if (until !== undefined && until <= now()) {
      leases.delete(key);
      return undefined;
    }
    return until;
  };

  return {
    windows: {
      take: (key, amount, limit, windowMs) => {
        const window = windowOf(key, windowMs);
        if (window.total + amount <= limit) {
          record(window, amount);
          return Promise.resolve(TAKEN);
        }
        if (amount > limit) return Promise.resolve({ ok: false, retryAfterMs: windowMs });
        // Walk from the oldest step until enough would have left the window.
        let left = window.total;
        for (const [step, value] of window.steps) {
          left -= value;
          if (left + amount <= limit) {
            return Promise.resolve({ ok: false, retryAfterMs: step + WINDOW_STEP_MS + windowMs - now() });
          }
        }
        return Promise.resolve({ ok: false, retryAfterMs: windowMs });
      },
      add: (key, amount, windowMs) => {
        record(windowOf(key, windowMs), amount);
        return Promise.resolve();
      },
      sum: (key, windowMs) => Promise.resolve(windowOf(key, windowMs).total),
    },
    counters: {
      add: (key, amount, expiresAt) => {
        const entry = counter(key);
        if (!entry) {
          counters.set(key, { value: amount, expiresAt });
          return Promise.resolve(amount);
        }
        entry.value += amount;
        entry.expiresAt = expiresAt;
        return Promise.resolve(entry.value);
      },
      get: (key) => Promise.resolve(counter(key)?.value ?? 0),
      delete: (key) => {
        counters.delete(key);
        return Promise.resolve();
      },
    },
    leases: {
      claim: (key, ttlMs) => {
        if (lease(key) !== undefined) return Promise.resolve(false);
        leases.set(key, now() + ttlMs);
        return Promise.resolve(true);
      },
      hold: (key, until) => {
        leases.set(key, until);
        return Promise.resolve();
      },
      until: (key) => Promise.resolve(lease(key)),
      release: (key) => {
        leases.delete(key);
        return Promise.resolve();
      },
    },
    inProcess: true,
    close: () => Promise.resolve(),
  };
}
