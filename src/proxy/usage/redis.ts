/**
 * Usage sums in Redis (proxy.state.backend redis), so every replica adds to the same totals and any of them,
 * or `gatehouse usage`, reads them: a hash per hour × key × model × upstream × status, and a sorted set of
 * those hashes by hour to find them again. A batch is one MULTI that also sets a marker for the batch; a
 * batch written again after a failure is skipped when its marker is there (its MULTI did run, only its answer
 * was lost), so nothing is counted twice.
 */
import type { RedisConnection } from '../state/redis.ts';
import { hourOf, sumSeries, sumUsage, type UsageSum } from './query.ts';
import type { UsageBackend } from './store.ts';

/** How long a batch's marker is kept: far longer than a batch waits to be written again. */
const MARKER_TTL_MS = 7 * 24 * 3_600_000;

const FIELDS = ['requests', 'input', 'output', 'cached', 'estimated', 'unpriced'] as const;

export function redisUsage(conn: RedisConnection, prefix: string, where: string): UsageBackend {
  const index = `${prefix}usage`;
  const hashOf = (s: UsageSum) => `${index}:${s.hour}:${JSON.stringify([s.key, s.model, s.upstream, s.status])}`;
  /** The sums of the hours from `from`'s to `to`'s (ms since the epoch, or +inf). */
  const read = async (from: number, to: number | '+inf'): Promise<UsageSum[]> => {
    const start = Date.parse(`${hourOf(from)}:00:00Z`);
    const hashes = await conn.call((c) => c.zRangeByScore(index, start, to));
    const values = await conn.call((c) => Promise.all(hashes.map((hash) => c.hGetAll(hash))));
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
  return {
    where,
    write: (batch) =>
      conn.call(async (client) => {
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
        multi.set(marker, '1', { expiration: { type: 'PX', value: MARKER_TTL_MS } });
        await multi.exec();
      }),
    query: async (q) => sumUsage(await read(q.since, '+inf'), q),
    series: async (q) => sumSeries(await read(q.from, q.to - 1), q),
    close: () => Promise.resolve(),
  };
}
