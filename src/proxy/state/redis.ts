/**
 * The Redis backend of SharedState and of translation's stores: what replicas of a team's proxy share, under
 * one key prefix. Times come from the caller's clock and go to Redis as arguments (Redis' own TTLs only clean
 * up, relative to now), so replicas agree to within their clocks' skew and tests can move the clock.
 * Reads that decide and writes that must not race are Lua scripts (one atomic step in Redis, sent as EVALSHA).
 */
import { createHash } from 'node:crypto';
import { createClient } from 'redis';
import type { Logger } from '../../log.ts';
import type { StoreLimits, Store } from '../translate/stores.ts';
import { ADMITTED, WINDOW_MS, WINDOW_STEP_MS, type Limit, type Reservation, type SharedState } from './shared.ts';

export type RedisClient = ReturnType<typeof createClient>;

/** A Redis call that did not answer within proxy.state.command_timeout. */
export class RedisTimeoutError extends Error {
  override readonly name = 'RedisTimeoutError';
}

/**
 * One client per process. Commands never wait for a connection (no offline queue: they fail at once while
 * Redis is away) nor longer than `timeoutMs` for an answer; the client reconnects by itself with backoff
 * (node-redis' default: 50 ms doubling to 2 s, plus jitter).
 */
export class RedisConnection {
  readonly client: RedisClient;
  readonly #timeoutMs: number;
  readonly #where: string;
  readonly #reconnected: (() => void)[] = [];

  constructor(url: string, timeoutMs: number, log: Logger) {
    this.#timeoutMs = timeoutMs;
    this.client = createClient({
      url,
      disableOfflineQueue: true,
      // call() times the whole call; node-redis' own timeout would only time the wait to be written, with an
      // AbortSignal.timeout per command (and its DOMException when it fires, long after the answer).
      commandOptions: { timeout: 0 },
      socket: { connectTimeout: Math.max(timeoutMs, 1_000) },
    });
    const where = (this.#where = redisAddress(url));
    let lost = false;
    // Every failed attempt emits 'error': the first of an outage is worth a warning, the rest are retries.
    this.client.on('error', (error: Error) => {
      if (lost) log.debug({ redis: where, err: error.message }, 'redis: still unreachable, retrying');
      else log.warn({ redis: where, err: error.message }, 'redis unreachable: retrying with backoff');
      lost = true;
    });
    this.client.on('ready', () => {
      log.info({ redis: where }, lost ? 'redis reachable again' : 'redis connected');
      if (lost) for (const listener of this.#reconnected) listener();
      lost = false;
    });
    // Resolves once connected, however many retries that takes; rejects only when closed first.
    this.client.connect().catch((error: unknown) => {
      log.debug({ redis: where, err: (error as Error).message }, 'redis: connecting ended');
    });
  }

  /** Resolves once connected (for a command that cannot do without Redis); rejects after `ms` without it. */
  ready(ms: number): Promise<void> {
    if (this.client.isReady) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.client.off('ready', onReady);
        reject(new Error(`redis at ${this.#where} could not be reached within ${ms} ms`));
      }, ms);
      const onReady = () => {
        clearTimeout(timer);
        resolve();
      };
      this.client.once('ready', onReady);
    });
  }

  /** Calls `listener` each time the client is connected again after losing its connection (or failing to make it). */
  onReconnect(listener: () => void): void {
    this.#reconnected.push(listener);
  }

  /**
   * Runs one call on the client, failing with RedisTimeoutError when it takes longer than the command timeout (or
   * `timeoutMs`, for a read no request waits on).
   */
  call<T>(run: (client: RedisClient) => Promise<T>, timeoutMs = this.#timeoutMs): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new RedisTimeoutError(`redis did not answer within ${timeoutMs} ms`));
      }, timeoutMs);
      run(this.client)
        .then(resolve, reject)
        .finally(() => clearTimeout(timer));
    });
  }

  /** A Lua script by its digest, sent whole only when Redis does not know it yet (after a restart). */
  script(script: Script, keys: string[], args: string[]): Promise<unknown> {
    return this.call(async (client) => {
      try {
        return await client.evalSha(script.sha, { keys, arguments: args });
      } catch (error) {
        if (!(error as Error).message.startsWith('NOSCRIPT')) throw error;
        return client.eval(script.text, { keys, arguments: args });
      }
    });
  }

  async close(): Promise<void> {
    if (this.client.isOpen) await this.client.close().catch(() => this.client.destroy());
    else this.client.destroy();
  }
}

/** host:port of a Redis URL, for log lines (never its password). */
export function redisAddress(url: string): string {
  const { hostname, port } = new URL(url);
  return `${hostname}:${port || '6379'}`;
}

export interface Script {
  text: string;
  sha: string;
}

export const script = (text: string): Script => ({ text, sha: createHash('sha1').update(text).digest('hex') });

/**
 * What the scripts of SharedState share, in front of each. ARGV[1] is now, ARGV[2] the step now is in.
 * A window is a hash of step start → amount, with its sum (t) and the step its oldest may be at (o), so
 * that a request reads two fields, not every step of the minute; a counter is a hash {v: value, e: ends at}.
 */
const COMMON = `
local STEP, WINDOW = ${WINDOW_STEP_MS}, ${WINDOW_MS}
local now, step = tonumber(ARGV[1]), ARGV[2]
-- The fields of the steps from one to another.
local function steps(from, to)
  local fields = {}
  for at = from, to, STEP do fields[#fields + 1] = at end
  return fields
end
-- A window's sum after deleting the steps that have left it (those beginning a minute ago or before), and
-- whether it has any (an oldest step).
local function window(key)
  local w = redis.call('HMGET', key, 't', 'o')
  local total, oldest = tonumber(w[1]) or 0, tonumber(w[2])
  local gone = now - WINDOW
  gone = gone - gone % STEP
  if not oldest or oldest > gone then return total, oldest end
  local fields = steps(oldest, gone)
  for _, value in ipairs(redis.call('HMGET', key, unpack(fields))) do total = total - (tonumber(value) or 0) end
  redis.call('HDEL', key, unpack(fields))
  redis.call('HSET', key, 't', total, 'o', gone + STEP)
  return total, gone + STEP
end
-- How long until a window's sum is below limit: walking from its oldest step until enough has left.
local function wait(key, total, oldest, limit)
  local fields = steps(oldest or now, tonumber(step))
  if #fields == 0 then return WINDOW end
  for i, value in ipairs(redis.call('HMGET', key, unpack(fields))) do
    total = total - (tonumber(value) or 0)
    if total < limit then return fields[i] + WINDOW - now end
  end
  return WINDOW
end
-- Adds to a window window() has just pruned (so that its oldest step is never far behind) and answered.
local function record(key, amount, oldest)
  redis.call('HINCRBY', key, step, amount)
  redis.call('HINCRBY', key, 't', amount)
  if not oldest then redis.call('HSET', key, 'o', step) end
  redis.call('PEXPIRE', key, WINDOW)
end
-- Adds to a counter that ends at ends (a budget's end is the same all period: set once).
local function count(key, amount, ends)
  local e = tonumber(redis.call('HGET', key, 'e'))
  if e and e <= now then
    redis.call('DEL', key)
    e = nil
  end
  local v = redis.call('HINCRBY', key, 'v', amount)
  if e ~= tonumber(ends) then
    redis.call('HSET', key, 'e', ends)
    redis.call('PEXPIRE', key, math.max(1, tonumber(ends) - now))
  end
  return v
end
`;

/**
 * A key's admission and reservation (Limits.admit). KEYS: its budget counter, USD budget counter, tpm window and
 * rpm window, those it has. ARGV[3..10]: the budget's limit and end, the tpm limit, the rpm limit ('' for none),
 * the tokens to reserve, the USD budget's limit and end ('' for none), the nano-dollars to reserve.
 * Answers [] when admitted, else [the limit that refused, retry after].
 */
const ADMIT = script(`${COMMON}
local budget, ends, tpm, rpm = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local reserve = tonumber(ARGV[7])
local usd, usdEnds, reserveNano = tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10])
local k, tokens, oldest, dollars = 1, nil, nil, nil
if budget then
  local c = redis.call('HMGET', KEYS[k], 'v', 'e')
  if c[2] and tonumber(c[2]) > now and tonumber(c[1]) >= budget then return { 'budget', ends - now } end
  k = k + 1
end
if usd then
  dollars = KEYS[k]
  local c = redis.call('HMGET', dollars, 'v', 'e')
  if c[2] and tonumber(c[2]) > now and tonumber(c[1]) >= usd then return { 'usd', usdEnds - now } end
  k = k + 1
end
if tpm then
  local total
  tokens = KEYS[k]
  total, oldest = window(tokens)
  if total >= tpm then return { 'tpm', wait(tokens, total, oldest, tpm) } end
  k = k + 1
end
if rpm then
  local total, first = window(KEYS[k])
  if total >= rpm then return { 'rpm', wait(KEYS[k], total, first, rpm) } end
  record(KEYS[k], 1, first)
end
if reserve > 0 then
  if tokens then record(tokens, reserve, oldest) end
  if budget then count(KEYS[1], reserve, ends) end
end
if dollars and reserveNano > 0 then count(dollars, reserveNano, usdEnds) end
return {}`);

/**
 * A reservation's settling (Limits.settle). KEYS: the tpm window, the budget counter and the USD budget counter,
 * those the key has. ARGV[3..8]: spent less reserved, the step the reservation sits in, 1 with a tpm window, the
 * budget's end ('' for none), nano-dollars spent less reserved, the USD budget's end ('' for none). The step still
 * in the window takes the difference; gone, what was spent beyond it goes to now's step.
 */
const SETTLE = script(`${COMMON}
local delta, at = tonumber(ARGV[3]), ARGV[4]
local k = 1
if ARGV[5] == '1' then
  local _, oldest = window(KEYS[k])
  if oldest and tonumber(at) >= oldest and redis.call('HEXISTS', KEYS[k], at) == 1 then
    redis.call('HINCRBY', KEYS[k], at, delta)
    redis.call('HINCRBY', KEYS[k], 't', delta)
  elseif delta > 0 then
    record(KEYS[k], delta, oldest)
  end
  k = k + 1
end
if ARGV[6] ~= '' then
  if delta ~= 0 then count(KEYS[k], delta, ARGV[6]) end
  k = k + 1
end
if ARGV[8] ~= '' and tonumber(ARGV[7]) ~= 0 then count(KEYS[k], ARGV[7], ARGV[8]) end
return 1`);

/** A counter's add. ARGV[3..4]: amount, ends at. Answers the new value. */
const COUNTER_ADD = script(`${COMMON}
return count(KEYS[1], ARGV[3], ARGV[4])`);

/** A lease: its end (ms since the epoch). ARGV: now, ttl, its end if taken. Answers 1 when taken. */
const LEASE_CLAIM = script(`
local held = tonumber(redis.call('GET', KEYS[1]))
if held and held > tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[2])
return 1`);

/**
 * `send` for each thing (a key's limits), but while one of its sends is under way, the amounts that come
 * meanwhile are summed and sent as one when it is done: a busy key's answers make one call per round trip,
 * not one each, and nothing waits longer than the call already under way. Each caller's promise settles
 * with the send that carried its amounts (tokens, and nano-dollars).
 */
export function summed<T>(
  send: (thing: T, amount: number, second: number) => Promise<void>,
  /** What makes two things one (by default: being the same object). */
  keyOf: (thing: T) => unknown = (thing) => thing,
): (thing: T, amount: number, second?: number) => Promise<void> {
  /** Per thing with a send under way: what came since, and the promise of the send that will carry it. */
  const waiting = new Map<unknown, { amount: number; second: number; sent?: PromiseWithResolvers<void> }>();
  const start = (thing: T, key: unknown, amount: number, second: number): Promise<void> => {
    waiting.set(key, { amount: 0, second: 0 });
    return send(thing, amount, second).finally(() => {
      const next = waiting.get(key);
      waiting.delete(key);
      if (next?.sent) start(thing, key, next.amount, next.second).then(next.sent.resolve, next.sent.reject);
    });
  };
  return (thing, amount, second = 0) => {
    const key = keyOf(thing);
    const next = waiting.get(key);
    if (!next) return start(thing, key, amount, second);
    next.amount += amount;
    next.second += second;
    next.sent ??= Promise.withResolvers();
    return next.sent.promise;
  };
}

const stepOf = (at: number): number => at - (at % WINDOW_STEP_MS);

/** SharedState in Redis, every key under `prefix`; close() ends the connection. */
export function redisState(conn: RedisConnection, prefix: string, now: () => number = Date.now): SharedState {
  /** ARGV's first two, which every script of COMMON reads: now and the step it is in. */
  const clock = (at = now()): [string, string] => [String(at), String(stepOf(at))];
  // A key's settlings for one step are summed while a call is under way.
  const settle = summed(
    async ({ limits: { budget, usd, tpm }, at }: Reservation, delta: number, deltaNano: number) => {
      const keys: string[] = [];
      if (tpm) keys.push(prefix + tpm.key);
      if (budget) keys.push(prefix + budget.key);
      if (usd) keys.push(prefix + usd.key);
      await conn.script(SETTLE, keys, [
        ...clock(),
        String(delta),
        String(stepOf(at)),
        tpm ? '1' : '',
        budget ? String(budget.endsAt) : '',
        String(deltaNano),
        usd ? String(usd.endsAt) : '',
      ]);
    },
    ({ limits: { budget, usd, tpm }, at }) =>
      `${tpm?.key ?? ''}\n${budget?.key ?? ''}\n${usd?.key ?? ''}\n${stepOf(at)}`,
  );
  return {
    limits: {
      admit: async ({ budget, usd, tpm, rpm }, reserve, at, reserveNano = 0) => {
        const keys: string[] = [];
        if (budget) keys.push(prefix + budget.key);
        if (usd) keys.push(prefix + usd.key);
        if (tpm) keys.push(prefix + tpm.key);
        if (rpm) keys.push(prefix + rpm.key);
        const text = (n: number | undefined) => (n === undefined ? '' : String(n));
        const limits = [budget?.limit, budget?.endsAt, tpm?.limit, rpm?.limit].map(text);
        const dollars = [usd?.limit, usd?.endsAt].map(text);
        const argv = [...clock(at), ...limits, String(reserve), ...dollars, String(reserveNano)];
        const answer = (await conn.script(ADMIT, keys, argv)) as [] | [Limit, number];
        return answer.length === 0 ? ADMITTED : { ok: false, limit: answer[0], retryAfterMs: answer[1] };
      },
      settle: (reservation, spent, spentNano = 0) => {
        const delta = spent - reservation.tokens;
        const deltaNano = spentNano - reservation.nanoUsd;
        return delta === 0 && deltaNano === 0 ? undefined : settle(reservation, delta, deltaNano);
      },
    },
    counters: {
      add: async (key, amount, expiresAt) =>
        Number(await conn.script(COUNTER_ADD, [prefix + key], [...clock(), String(amount), String(expiresAt)])),
      get: async (key) => {
        const [value, ends] = await conn.call((c) => c.hmGet(prefix + key, ['v', 'e']));
        return ends != null && Number(ends) > now() ? Number(value) : 0;
      },
      delete: async (key) => {
        await conn.call((c) => c.del(prefix + key));
      },
    },
    leases: {
      claim: async (key, ttlMs) => {
        const at = now();
        return (await conn.script(LEASE_CLAIM, [prefix + key], [at, ttlMs, at + ttlMs].map(String))) === 1;
      },
      hold: async (key, until) => {
        const ttl = Math.max(1, Math.ceil(until - now()));
        await conn.call((c) => c.set(prefix + key, String(until), { expiration: { type: 'PX', value: ttl } }));
      },
      until: async (key) => {
        const held = await conn.call((c) => c.get(prefix + key));
        return held != null && Number(held) > now() ? Number(held) : undefined;
      },
      release: async (key) => {
        await conn.call((c) => c.del(prefix + key));
      },
    },
    close: () => conn.close(),
  };
}

/**
 * A translation Store in Redis: JSON values under `prefix`, each kept for the store's TTL. An entry larger than
 * the store's max_bytes is not kept (as in memory); the number and total size of entries are Redis' to bound
 * (maxmemory), not counted here.
 */
export function redisStore<V>(conn: RedisConnection, prefix: string, limits: StoreLimits): Store<V> {
  return {
    get: async (key) => {
      const text = await conn.call((c) => c.get(prefix + key));
      return text == null ? undefined : (JSON.parse(text) as V);
    },
    set: async (key, value, size) => {
      if (size > limits.maxBytes) return;
      const text = JSON.stringify(value);
      await conn.call((c) => c.set(prefix + key, text, { expiration: { type: 'PX', value: limits.ttlMs } }));
    },
  };
}
