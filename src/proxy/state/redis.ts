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
import { WINDOW_STEP_MS, type SharedState } from './shared.ts';

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

  constructor(url: string, timeoutMs: number, log: Logger) {
    this.#timeoutMs = timeoutMs;
    this.client = createClient({
      url,
      disableOfflineQueue: true,
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

  /** Runs one call on the client, failing with RedisTimeoutError when it takes longer than the command timeout. */
  call<T>(run: (client: RedisClient) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new RedisTimeoutError(`redis did not answer within ${this.#timeoutMs} ms`));
      }, this.#timeoutMs);
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

const script = (text: string): Script => ({ text, sha: createHash('sha1').update(text).digest('hex') });

/**
 * A sliding window: a hash of step start → amount. ARGV: now, window, step, the step now is in, amount,
 * limit, mode (take: record if within limit, else say when; add: record; sum). Answers {ok, retry after | sum}.
 */
const WINDOW = script(`
local now, window, step = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local amount, limit, mode = tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7]
local start = now - window
local entries = redis.call('HGETALL', KEYS[1])
local steps, total = {}, 0
for i = 1, #entries, 2 do
  local at = tonumber(entries[i])
  if at + step <= start then
    redis.call('HDEL', KEYS[1], entries[i])
  else
    local value = tonumber(entries[i + 1])
    steps[#steps + 1] = { at, value }
    total = total + value
  end
end
if mode == 'sum' then return { 1, total } end
if mode == 'add' or total + amount <= limit then
  redis.call('HINCRBY', KEYS[1], ARGV[4], amount)
  redis.call('PEXPIRE', KEYS[1], window + step)
  return { 1, 0 }
end
if amount > limit then return { 0, window } end
table.sort(steps, function(a, b) return a[1] < b[1] end)
local left = total
for _, s in ipairs(steps) do
  left = left - s[2]
  if left + amount <= limit then return { 0, s[1] + step + window - now } end
end
return { 0, window }`);

/** A counter: a hash {v: value, e: ends at}. ARGV: now, amount, ends at. Answers the new value. */
const COUNTER_ADD = script(`
local now, ends = tonumber(ARGV[1]), tonumber(ARGV[3])
local e = tonumber(redis.call('HGET', KEYS[1], 'e'))
if e and e <= now then redis.call('DEL', KEYS[1]) end
local v = redis.call('HINCRBY', KEYS[1], 'v', ARGV[2])
redis.call('HSET', KEYS[1], 'e', ARGV[3])
redis.call('PEXPIRE', KEYS[1], math.max(1, ends - now))
return v`);

/** A lease: its end (ms since the epoch). ARGV: now, ttl, its end if taken. Answers 1 when taken. */
const LEASE_CLAIM = script(`
local held = tonumber(redis.call('GET', KEYS[1]))
if held and held > tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[2])
return 1`);

/** SharedState in Redis, every key under `prefix`; close() ends the connection. */
export function redisState(conn: RedisConnection, prefix: string, now: () => number = Date.now): SharedState {
  const window = async (key: string, amount: number, limit: number, windowMs: number, mode: string) => {
    const at = now();
    const args = [at, windowMs, WINDOW_STEP_MS, at - (at % WINDOW_STEP_MS), amount, limit, mode].map(String);
    return (await conn.script(WINDOW, [prefix + key], args)) as [number, number];
  };
  return {
    windows: {
      take: async (key, amount, limit, windowMs) => {
        const [ok, retryAfterMs] = await window(key, amount, limit, windowMs, 'take');
        return ok === 1 ? { ok: true } : { ok: false, retryAfterMs };
      },
      add: async (key, amount, windowMs) => {
        await window(key, amount, 0, windowMs, 'add');
      },
      sum: async (key, windowMs) => (await window(key, 0, 0, windowMs, 'sum'))[1],
    },
    counters: {
      add: async (key, amount, expiresAt) =>
        Number(await conn.script(COUNTER_ADD, [prefix + key], [now(), amount, expiresAt].map(String))),
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
