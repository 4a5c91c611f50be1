/**
 * Keys for people and services: who a request comes from (KeyRing), and
 * whether that key may make it now (Admission: its models, its requests and
 * tokens per minute, its token and dollar budgets). Limits and budgets live in SharedState, so
 * replicas sharing a backend count together.
 */
import { hash } from 'node:crypto';
import { DEFAULT_KEY_NAME, type BudgetPeriod, type ClientKeyConfig } from './config/keys.ts';
import { HttpError } from '../http/errors.ts';
import { globToRegExp } from './glob.ts';
import type { KeyLimits, Limit, Reservation, SharedState, Verdict } from './state/shared.ts';

/** Errors of a key's own, in the shape of every family (families.ts renders them). */
export const keyErrors = {
  disabled: () => new HttpError(401, 'This API key is disabled', { kind: 'invalid_api_key' }),
  expired: () => new HttpError(401, 'This API key has expired', { kind: 'invalid_api_key' }),
  modelNotAllowed: (model: string) =>
    new HttpError(403, `This API key may not use model ${JSON.stringify(model)}`, { kind: 'model_not_allowed' }),
  mcpServerNotAllowed: (server: string) =>
    new HttpError(403, `This API key may not use MCP server ${JSON.stringify(server)}`, {
      kind: 'mcp_server_not_allowed',
    }),
  limited: (what: string, retryAfterMs: number) =>
    new HttpError(429, `This API key's ${what} is used up; retry after ${retryAfter(retryAfterMs)} s`, {
      kind: 'rate_limit_exceeded',
      headers: { 'retry-after': String(retryAfter(retryAfterMs)) },
    }),
};

const retryAfter = (ms: number): number => Math.max(1, Math.ceil(ms / 1000));

/** Dollar budgets are counted in nano-dollars: counters hold integers. */
const NANO = 1e9;
const nano = (usd: number | null | undefined): number => (usd ? Math.round(usd * NANO) : 0);

/** USD for `tokens` of a model as the client names it (its first upstream's input price); null: no price. */
export type EstimateUsd = (model: string, tokens: number) => number | null;

/** A configured key as a request carries it: its config, its allowlist compiled. */
export interface ClientKey extends ClientKeyConfig {
  allows: (model: string) => boolean;
  /** Whether it may use the MCP server of that name. */
  allowsMcp: (server: string) => boolean;
  /** It has an rpm, a tpm or a budget: something in SharedState to check. */
  limited: boolean;
}

/** A test of names against globs; everything passes without any. */
function matcher(globs: string[] | undefined): (name: string) => boolean {
  const patterns = globs?.map(globToRegExp);
  return patterns ? (name) => patterns.some((p) => p.test(name)) : () => true;
}

function clientKey(config: ClientKeyConfig): ClientKey {
  return {
    ...config,
    allows: matcher(config.models),
    allowsMcp: matcher(config.mcpServers),
    limited:
      config.rpm !== undefined ||
      config.tpm !== undefined ||
      config.budget !== undefined ||
      config.budgetUsd !== undefined,
  };
}

/** What a refusal names, for each of a key's limits. */
const LIMIT_NAMES: Record<Limit, string> = {
  budget: 'token budget',
  usd: 'dollar budget',
  tpm: 'tokens per minute',
  rpm: 'requests per minute',
};

const sha256 = (value: string): string => hash('sha256', value, 'hex');

function refuseIfLimited(verdict: Verdict): void {
  if (!verdict.ok) throw keyErrors.limited(LIMIT_NAMES[verdict.limit], verdict.retryAfterMs);
}

/**
 * Every key, looked up by its SHA-256: a presented key is hashed, never
 * compared as text, so how long a lookup takes tells nothing about any key.
 */
export class KeyRing {
  readonly #byDigest = new Map<string, ClientKey>();

  constructor(apiKey: string, keys: readonly ClientKeyConfig[]) {
    if (apiKey !== '') {
      const operator: ClientKeyConfig = {
        name: DEFAULT_KEY_NAME,
        sha256: sha256(apiKey),
        models: undefined,
        mcpServers: undefined,
        rpm: undefined,
        tpm: undefined,
        budget: undefined,
        budgetUsd: undefined,
        expiresAt: undefined,
        disabled: false,
        // The operator's own key reads /metrics and /internal/usage.
        admin: true,
      };
      this.#byDigest.set(operator.sha256, clientKey(operator));
    }
    for (const key of keys) this.#byDigest.set(key.sha256, clientKey(key));
  }

  /** The key among those presented, or why none may be used: undefined when none is known. */
  find(presented: readonly string[], now: number): ClientKey | HttpError | undefined {
    for (const value of presented) {
      const key = this.#byDigest.get(sha256(value));
      if (!key) continue;
      if (key.disabled) return keyErrors.disabled();
      if (key.expiresAt !== undefined && now >= key.expiresAt) return keyErrors.expired();
      return key;
    }
    return undefined;
  }
}

/** The current budget period of a key: its id and when it ends (UTC calendar days and months). */
export function budgetPeriod(period: BudgetPeriod, now: number): { id: string; startsAt: number; endsAt: number } {
  const d = new Date(now);
  const [y, m, day] = [d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()];
  if (period === 'day') {
    return { id: d.toISOString().slice(0, 10), startsAt: Date.UTC(y, m, day), endsAt: Date.UTC(y, m, day + 1) };
  }
  return { id: d.toISOString().slice(0, 7), startsAt: Date.UTC(y, m, 1), endsAt: Date.UTC(y, m + 1, 1) };
}

/**
 * Whether a key may make a request now, and what its tokens count against. A model request of a key with a tpm
 * or a budget reserves an estimate of its tokens at admission (so requests in flight at once count against each
 * other) and settles it against the real count when its answer has ended (see Reservation). A dollar budget
 * reserves that estimate at the model's input price and settles it to the request's cost.
 */
export class Admission {
  readonly #state: SharedState;
  readonly #now: () => number;
  readonly #estimateUsd: EstimateUsd;
  /** The current day and month, worked out again only when they end. */
  readonly #periods = new Map<BudgetPeriod, ReturnType<typeof budgetPeriod>>();
  /** Each key's limits with their state keys, made again only when its budget period ends. */
  readonly #limits = new Map<ClientKeyConfig, KeyLimits>();
  /** Each key's rpm alone, for requests that are not model requests. */
  readonly #rpm = new Map<ClientKey, KeyLimits>();

  constructor(state: SharedState, now: () => number = Date.now, estimateUsd: EstimateUsd = () => null) {
    this.#state = state;
    this.#now = now;
    this.#estimateUsd = estimateUsd;
  }

  /**
   * Throws for a model the key may not use or a limit it has reached. A key whose tokens count gets the
   * Reservation of `estimate` tokens to settle; a promise only while a shared backend answers (this process's
   * memory answers at once: nothing to wait for).
   */
  admit(key: ClientKey, model: string, estimate: number): Reservation | undefined | Promise<Reservation | undefined> {
    if (!key.allows(model)) throw keyErrors.modelNotAllowed(model);
    if (!key.limited) return undefined;
    const at = this.#now();
    const limits = this.#limitsOf(key, at);
    const reserve = countsTokens(key) ? estimate : 0;
    const reserveNano = limits.usd ? nano(this.#estimateUsd(model, estimate)) : 0;
    // Budgets, tpm and rpm in one step: with a shared backend, one round trip.
    const verdict = this.#state.limits.admit(limits, reserve, at, reserveNano);
    if (verdict instanceof Promise) return verdict.then((v) => reservation(v, limits, reserve, reserveNano, at));
    return reservation(verdict, limits, reserve, reserveNano, at);
  }

  /** A request that is not a model request (MCP, a warmup of the model lists): it counts toward rpm only. */
  admitRequest(key: ClientKey): Promise<void> | undefined {
    if (key.rpm === undefined) return undefined;
    let limits = this.#rpm.get(key);
    if (!limits) this.#rpm.set(key, (limits = { rpm: { key: `rpm:${key.name}`, limit: key.rpm } }));
    const verdict = this.#state.limits.admit(limits, 0, this.#now());
    if (verdict instanceof Promise) return verdict.then(refuseIfLimited);
    refuseIfLimited(verdict);
    return undefined;
  }

  /**
   * Replaces a reservation by the tokens spent (0 when the request failed) and its cost (USD; null or undefined:
   * none known); a promise only with a shared backend.
   */
  settle(reservation: Reservation, spent: number, cost?: number | null): void | Promise<void> {
    return this.#state.limits.settle(reservation, spent, nano(cost));
  }

  /** What the key's budgets have used this period (tokens; USD), through the same state as its admission. */
  async used(key: ClientKeyConfig): Promise<{ tokens: number; usd: number; endsAt: number } | undefined> {
    const { budget, usd } = this.#limitsOf(key, this.#now());
    const period = budget ?? usd;
    if (!period) return undefined;
    const { counters } = this.#state;
    const [tokens, nanoUsd] = await Promise.all([
      budget ? counters.get(budget.key) : 0,
      usd ? counters.get(usd.key) : 0,
    ]);
    return { tokens, usd: nanoUsd / NANO, endsAt: period.endsAt };
  }

  #limitsOf(key: ClientKeyConfig, now: number): KeyLimits {
    const limits = this.#limits.get(key);
    // Until its budget period ends, a key's limits are the ones made for it.
    const endsAt = limits && (limits.budget ?? limits.usd)?.endsAt;
    if (limits && (endsAt === undefined || now < endsAt)) return limits;
    const { budget, budgetUsd, name } = key;
    const kind = budget?.period ?? budgetUsd?.period;
    const period = kind && this.#period(kind, now);
    const made: KeyLimits = {
      budget: budget && period && { key: `budget:${name}:${period.id}`, limit: budget.tokens, endsAt: period.endsAt },
      usd: budgetUsd &&
        period && { key: `budget-usd:${name}:${period.id}`, limit: nano(budgetUsd.usd), endsAt: period.endsAt },
      tpm: key.tpm === undefined ? undefined : { key: `tpm:${name}`, limit: key.tpm },
      rpm: key.rpm === undefined ? undefined : { key: `rpm:${name}`, limit: key.rpm },
    };
    this.#limits.set(key, made);
    return made;
  }

  #period(kind: BudgetPeriod, now: number): ReturnType<typeof budgetPeriod> {
    let period = this.#periods.get(kind);
    if (!period || now < period.startsAt || now >= period.endsAt) {
      period = budgetPeriod(kind, now);
      this.#periods.set(kind, period);
    }
    return period;
  }
}

/** Refuses, or the reservation a key whose tokens or cost count holds (none for a key with only an rpm). */
function reservation(
  verdict: Verdict,
  limits: KeyLimits,
  reserve: number,
  reserveNano: number,
  at: number,
): Reservation | undefined {
  refuseIfLimited(verdict);
  if (limits.budget === undefined && limits.tpm === undefined && limits.usd === undefined) return undefined;
  const uncounted = verdict.ok && verdict.reserved === false;
  return { limits, tokens: uncounted ? 0 : reserve, nanoUsd: uncounted ? 0 : reserveNano, at };
}

/** Whether the key's tokens are counted: it has a tpm limit or a budget. */
export const countsTokens = (key: ClientKey): boolean => key.tpm !== undefined || key.budget !== undefined;
