/**
 * State that replicas of a team's proxy must agree on: a key's rate limits and
 * budget, circuit cooldowns and failure counts. A few small primitives, each
 * call atomic on its own (a key's whole admission is one), so the features
 * above them (limits, budgets, fallback) are written once and the backend is a
 * choice of configuration: one process's memory here, or a Redis server shared
 * by every replica.
 */

/**
 * What a key may spend, each part optional: tokens and nano-dollars (USD × 10⁹, integers as counters count) per
 * budget period (counters that end with the period), tokens and requests per minute (sliding windows). The
 * state keys are made by the caller, once per key and period.
 */
export interface KeyLimits {
  budget?: { key: string; limit: number; endsAt: number } | undefined;
  usd?: { key: string; limit: number; endsAt: number } | undefined;
  tpm?: { key: string; limit: number } | undefined;
  rpm?: { key: string; limit: number } | undefined;
}

export type Limit = 'budget' | 'usd' | 'tpm' | 'rpm';

/**
 * Admitted (and its tokens reserved, unless `reserved` is false: nothing could be counted, see StateGuard), or
 * which of a key's limits refused and how long until it would not (ms).
 */
export type Verdict = { ok: true; reserved?: false } | { ok: false; limit: Limit; retryAfterMs: number };

/** One answer for every admission: nothing to allocate. */
export const ADMITTED: Verdict = { ok: true };
/** Admitted with nothing counted: the backend could not be reached and on_unavailable is allow. */
export const ADMITTED_UNCOUNTED: Verdict = { ok: true, reserved: false };

/**
 * Tokens a request holds in its key's tpm window and budget from its admission until its answer's real count
 * is known: an estimate (the input from the request, the output from its cap or a default), so that requests
 * in flight at once count against each other. Settling replaces it by what was spent (nothing, when the
 * request failed).
 */
export interface Reservation {
  readonly limits: KeyLimits;
  /** Tokens reserved: 0 when none could be (ADMITTED_UNCOUNTED). */
  readonly tokens: number;
  /** Nano-dollars reserved in the USD budget: the token estimate at the model's input price (0 without one). */
  readonly nanoUsd: number;
  /** When it was taken (ms since the epoch): its tokens sit in that step of the tpm window. */
  readonly at: number;
}

/**
 * A key's limits, as one step each: with a shared backend, one round trip per request and one per answer;
 * in this process's memory the answer comes at once, not as a promise (one fewer per request to make and await).
 * The minute windows move in steps of WINDOW_STEP_MS: a window is the current second and the 59 before it,
 * so no 60 whole seconds ever hold more than the limit, a refusal never asks for more than a minute's wait
 * (`retry-after: 60` at most), and a window's size does not grow with the request rate.
 */
export interface Limits {
  /**
   * At `at`: refuses while the budget's counter or the tpm window's sum (reservations included) has reached
   * its limit (the USD budget's likewise), else takes one request from the rpm window if it has room and
   * reserves `reserve` tokens in the budget and the tpm window, and `reserveNano` nano-dollars in the USD
   * budget. A refusal takes nothing and says when it would pass: at the budget's end, or when enough of the
   * window has left it (a whole minute when nothing leaving would do).
   */
  admit(limits: KeyLimits, reserve: number, at: number, reserveNano?: number): Verdict | Promise<Verdict>;
  /**
   * Replaces a reservation by the tokens spent: the difference goes to the budget, and to the tpm window's
   * step the reservation sits in (or, that step gone from the minute, what was spent beyond it to now's).
   */
  settle(reservation: Reservation, spent: number, spentNano?: number): void | Promise<void>;
}

/** Counters that end at a fixed time: consecutive failures. */
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

/** The span of the tpm and rpm windows, and their resolution. */
export const WINDOW_MS = 60_000;
export const WINDOW_STEP_MS = 1_000;

export interface SharedState {
  limits: Limits;
  counters: Counters;
  leases: Leases;
  /** This process's memory: its calls never fail, so nothing needs to stand in for it (StateGuard). */
  readonly inProcess?: true;
  /** Ends the backend's connections (nothing to do in memory). */
  close(): Promise<void>;
}

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

  // A key's admission (and its spending) reads the clock once: `at` is passed on.
  const windowOf = (key: string, at: number): Window => {
    let window = windows.get(key);
    if (!window) windows.set(key, (window = { steps: [], total: 0 }));
    const start = at - WINDOW_MS;
    while (window.steps.length > 0 && (window.steps[0] as [number, number])[0] <= start) {
      window.total -= (window.steps.shift() as [number, number])[1];
    }
    return window;
  };
  const record = (window: Window, amount: number, at: number): void => {
    const step = at - (at % WINDOW_STEP_MS);
    const last = window.steps.at(-1);
    if (last?.[0] === step) last[1] += amount;
    else window.steps.push([step, amount]);
    window.total += amount;
  };
  /** How long until the window's sum is below `limit`: walking from the oldest step until enough has left. */
  const wait = (window: Window, limit: number, at: number): number => {
    let left = window.total;
    for (const [step, value] of window.steps) {
      left -= value;
      if (left < limit) return step + WINDOW_MS - at;
    }
    return WINDOW_MS;
  };
  const counter = (key: string, at = now()): { value: number; expiresAt: number } | undefined => {
    const entry = counters.get(key);
    if (entry && entry.expiresAt <= at) {
      counters.delete(key);
      return undefined;
    }
    return entry;
  };
  const add = (key: string, amount: number, expiresAt: number, at = now()): number => {
    const entry = counter(key, at);
    if (!entry) {
      counters.set(key, { value: amount, expiresAt });
      return amount;
    }
    entry.value += amount;
    entry.expiresAt = expiresAt;
    return entry.value;
  };
  const lease = (key: string): number | undefined => {
    const until = leases.get(key);
    if (until !== undefined && until <= now()) {
      leases.delete(key);
      return undefined;
    }
    return until;
  };

  /** Adds `delta` to the step of `step`, or what is spent beyond the reservation to now's when it is gone. */
  const correct = (window: Window, step: number, delta: number, at: number): void => {
    for (let i = window.steps.length - 1; i >= 0; i--) {
      const entry = window.steps[i] as [number, number];
      if (entry[0] < step) break;
      if (entry[0] === step) {
        entry[1] += delta;
        window.total += delta;
        return;
      }
    }
    if (delta > 0) record(window, delta, at);
  };

  return {
    limits: {
      admit: ({ budget, usd, tpm, rpm }, reserve, at, reserveNano = 0) => {
        if (budget && (counter(budget.key, at)?.value ?? 0) >= budget.limit) {
          return { ok: false, limit: 'budget', retryAfterMs: budget.endsAt - at };
        }
        if (usd && (counter(usd.key, at)?.value ?? 0) >= usd.limit) {
          return { ok: false, limit: 'usd', retryAfterMs: usd.endsAt - at };
        }
        const tokens = tpm && windowOf(tpm.key, at);
        if (tpm && tokens && tokens.total >= tpm.limit) {
          return { ok: false, limit: 'tpm', retryAfterMs: wait(tokens, tpm.limit, at) };
        }
        if (rpm) {
          const requests = windowOf(rpm.key, at);
          if (requests.total >= rpm.limit) {
            return { ok: false, limit: 'rpm', retryAfterMs: wait(requests, rpm.limit, at) };
          }
          record(requests, 1, at);
        }
        if (reserve > 0) {
          if (tokens) record(tokens, reserve, at);
          if (budget) add(budget.key, reserve, budget.endsAt, at);
        }
        if (usd && reserveNano > 0) add(usd.key, reserveNano, usd.endsAt, at);
        return ADMITTED;
      },
      settle: ({ limits: { budget, usd, tpm }, tokens, nanoUsd, at }, spent, spentNano = 0) => {
        const delta = spent - tokens;
        const time = now();
        if (usd && spentNano !== nanoUsd) add(usd.key, spentNano - nanoUsd, usd.endsAt, time);
        if (delta === 0) return;
        if (tpm) correct(windowOf(tpm.key, time), at - (at % WINDOW_STEP_MS), delta, time);
        if (budget) add(budget.key, delta, budget.endsAt, time);
      },
    },
    counters: {
      add: (key, amount, expiresAt) => Promise.resolve(add(key, amount, expiresAt)),
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
