/**
 * Usage sums in Redis (proxy.state.backend redis), so every replica adds to the same totals and any of them,
 * or `gatehouse usage`, reads them: a hash per hour × key × model × upstream × status, and a sorted set of
 * those hashes by hour to find them again. A batch is one MULTI that also sets a marker for the batch; a
 * batch written again after a failure is skipped when its marker is there (its MULTI did run, only its answer
 * was lost), so nothing is counted twice.
 *
 * The console's spend sums are kept in the same MULTI, as the usage file keeps them beside its rows: a hash per
 * span (hour, day), grouping (key, model, upstream) and bucket, a field per group. The spend page reads its
 * range's buckets, one hash each, instead of every hourly hash of the range.
 */
import type { Bucket } from '../console/contract.ts';
import { script, type RedisConnection } from '../state/redis.ts';
import { BUCKET_CHARS, hourOf, sumSeries, sumUsage, type SeriesQuery, type SeriesSum, type UsageSum } from './query.ts';
import { spendRows, type UsageBackend } from './store.ts';

/** How long a batch's marker is kept: far longer than a batch waits to be written again. */
const MARKER_TTL_MS = 7 * 24 * 3_600_000;

const FIELDS = ['requests', 'input', 'output', 'cached', 'estimated', 'unpriced'] as const;

/**
 * Adds to spend sums. A group's four sums are one field (`requests tokens cost unpriced`): a week of 100 keys in
 * hours is then 16,800 fields to read, not 67,200, which took the spend page past its aim. KEYS: the spend hashes;
 * ARGV: per sum, its hash's index in KEYS, the group and the four sums to add. Sent whole (EVAL) in the batch's
 * MULTI: an EVALSHA Redis did not know would fail there alone, after the rest of the batch was written.
 */
const SPEND_ADD = `
for i = 1, #ARGV, 6 do
  local hash, group = KEYS[tonumber(ARGV[i])], ARGV[i + 1]
  local r, t, c, u = 0, 0, 0, 0
  local sums = redis.call('HGET', hash, group)
  if sums then
    local a, b, d, e = string.match(sums, '^(%S+) (%S+) (%S+) (%S+)$')
    r, t, c, u = tonumber(a), tonumber(b), tonumber(d), tonumber(e)
  end
  r, t, c, u = r + ARGV[i + 2], t + ARGV[i + 3], c + ARGV[i + 4], u + ARGV[i + 5]
  redis.call('HSET', hash, group, string.format('%d %d %.17g %d', r, t, c, u))
end`;

/**
 * How long a read of the sums may take: reading a month of buckets is slower than a request's limit check, whose
 * command timeout is made to fail fast, and no request waits on it (the console, `gatehouse usage`).
 */
const READ_TIMEOUT_MS = 10_000;

const BUCKET_MS: Record<Bucket, number> = { hour: 3_600_000, day: 86_400_000 };

/**
 * When the spend sums begin: the time (ms) the first replica that keeps them found usage hashes already there
 * (written before spend sums were kept), or 0 when it found none. A bucket from the next one on (the next hour's,
 * the next day's) is read from the spend sums; an earlier one is summed from the hourly hashes, as before.
 */
const SPEND_SINCE = script(`
local since = redis.call('GET', KEYS[1])
if since then return since end
if redis.call('ZCARD', KEYS[2]) == 0 then since = '0' else since = ARGV[1] end
redis.call('SET', KEYS[1], since)
return since`);

export function redisUsage(conn: RedisConnection, prefix: string, where: string): UsageBackend {
  const index = `${prefix}usage`;
  const hashOf = (s: UsageSum) => `${index}:${s.hour}:${JSON.stringify([s.key, s.model, s.upstream, s.status])}`;
  /** The sums of the hours from `from`'s to `to`'s (ms since the epoch, or +inf). */
  const read = async (from: number, to: number | '+inf'): Promise<UsageSum[]> => {
    const start = Date.parse(`${hourOf(from)}:00:00Z`);
    const hashes = await conn.call((c) => c.zRangeByScore(index, start, to), READ_TIMEOUT_MS);
    const values = await conn.call((c) => Promise.all(hashes.map((hash) => c.hGetAll(hash))), READ_TIMEOUT_MS);
    return hashes.map((hash, i): UsageSum => {
      const [key, model, upstream, status] = JSON.parse(hash.slice(index.length + 15)) as [
        string,
        string,
        string,
        number,
      ];
      const v = values[i] ?? {};
      const n = (field: string) => Number(v[field] ?? 0);
      const hour = hash.slice(index.length + 1, index.length + 14);
      return {
        hour,
        key,
        model,
        upstream,
        status,
        ...Object.fromEntries(FIELDS.map((f) => [f, n(f)])),
        ms: n('ms'),
        cost: n('cost'),
      } as UsageSum;
    });
  };
  const spendOf = (span: Bucket, by: string, bucket: string) => `${prefix}spend:${span}:${by}:${bucket}`;
  /** The first bucket of each span the spend sums hold whole; asked of Redis once per process. */
  let spendSince: Promise<Record<Bucket, number>> | undefined;
  const since = () =>
    (spendSince ??= conn.script(SPEND_SINCE, [`${prefix}spend-since`, index], [String(Date.now())]).then(
      (at) => {
        const ms = Number(at);
        const next = (span: Bucket) => (ms === 0 ? 0 : ms - (ms % BUCKET_MS[span]) + BUCKET_MS[span]);
        return { hour: next('hour'), day: next('day') };
      },
      (error: unknown) => {
        spendSince = undefined;
        throw error;
      },
    ));
  /** The spend sums of the buckets from `from` (aligned) to before `to`'s. */
  const readSpend = async (q: SeriesQuery, from: number): Promise<SeriesSum[]> => {
    const chars = BUCKET_CHARS[q.bucket];
    const last = new Date(q.to).toISOString().slice(0, chars);
    const buckets: string[] = [];
    for (let at = from; ; at += BUCKET_MS[q.bucket]) {
      const bucket = new Date(at).toISOString().slice(0, chars);
      if (bucket >= last) break;
      buckets.push(bucket);
    }
    const hashes = await conn.call(
      (c) => Promise.all(buckets.map((b) => c.hGetAll(spendOf(q.bucket, q.by, b)))),
      READ_TIMEOUT_MS,
    );
    const sums: SeriesSum[] = [];
    for (const [i, hash] of hashes.entries()) {
      const bucket = buckets[i] as string;
      for (const [group, value] of Object.entries(hash)) {
        const [requests, tokens, cost, unpriced] = value.split(' ').map(Number) as [number, number, number, number];
        sums.push({ bucket, group, requests, tokens, cost, unpriced });
      }
    }
    return sums;
  };
  return {
    where,
    write: async (batch) => {
      // Before this process's first spend sums go in, so that they are read from a bucket they hold whole.
      await since();
      return conn.call(async (client) => {
        const marker = `${prefix}usage-batch:${batch.id}`;
        if ((await client.exists(marker)) === 1) return;
        const multi = client.multi();
        for (const s of batch.sums) {
          const hash = hashOf(s);
          for (const field of FIELDS) if (s[field] !== 0) multi.hIncrBy(hash, field, s[field]);
          multi.hIncrByFloat(hash, 'ms', s.ms);
          if (s.cost !== 0) multi.hIncrByFloat(hash, 'cost', s.cost);
          multi.zAdd(index, { score: Date.parse(`${s.hour}:00:00Z`), value: hash });
        }
        const spend = new Map<string, number>();
        const args: string[] = [];
        for (const [span, by, bucket, group, ...sums] of spendRows(batch.sums)) {
          const hash = spendOf(span, by, bucket);
          let at = spend.get(hash);
          if (at === undefined) spend.set(hash, (at = spend.size + 1));
          args.push(String(at), group, ...sums.map(String));
        }
        if (args.length > 0) multi.eval(SPEND_ADD, { keys: [...spend.keys()], arguments: args });
        multi.set(marker, '1', { expiration: { type: 'PX', value: MARKER_TTL_MS } });
        await multi.exec();
      });
    },
    query: async (q) => sumUsage(await read(q.since, '+inf'), q),
    series: async (q) => {
      const start = q.from - (q.from % BUCKET_MS[q.bucket]);
      const kept = Math.max(start, (await since())[q.bucket]);
      // Buckets from before the spend sums were kept, summed from the hourly hashes.
      const end = Math.min(kept, q.to);
      const before = end > start ? sumSeries(await read(start, end - 1), { ...q, to: end }) : [];
      return [...before, ...(await readSpend(q, kept))];
    },
    close: () => Promise.resolve(),
  };
}
