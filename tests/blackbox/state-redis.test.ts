/**
 * The Redis backend against a real redis-server (the stand-in container): SharedState's contract, as the memory
 * backend passes it, on the test's clock; and the translation stores' TTLs and size limit.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.ts';
import { RedisConnection, redisState, redisStore } from '../../src/proxy/state/redis.ts';
import { startRedisContainer, type RedisContainer } from '../support/redis-container.ts';
import { sharedStateContract } from '../unit/proxy/state/shared-contract.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sumUsage, usageQuery, type SeriesQuery, type SeriesSum } from '../../src/proxy/usage/query.ts';
import { redisUsage } from '../../src/proxy/usage/redis.ts';
import { sqliteUsage, type UsageBatch } from '../../src/proxy/usage/store.ts';

let redis: RedisContainer;
beforeAll(async () => {
  redis = await startRedisContainer();
});
afterAll(() => redis.stop());

async function connect(timeoutMs = 500): Promise<RedisConnection> {
  const conn = new RedisConnection(redis.url, timeoutMs, createLogger('silent'));
  await conn.ready(10_000);
  return conn;
}

// Each test on its own prefix, as two teams sharing one Redis would be.
sharedStateContract('redis', async (now) => redisState(await connect(), `test-${randomUUID()}:`, now));

describe('Redis stores', () => {
  it('keeps JSON values for the TTL, and no entry larger than max_bytes', async () => {
    const conn = await connect();
    try {
      const store = redisStore<{ messages: string[] }>(conn, `s-${randomUUID()}:`, {
        maxEntries: 10,
        maxBytes: 1_000,
        ttlMs: 300,
      });
      await store.set('a', { messages: ['héllo'] }, 10);
      await store.set('big', { messages: ['x'] }, 1_001);
      expect(await store.get('a')).toEqual({ messages: ['héllo'] });
      expect(await store.get('big')).toBeUndefined();
      expect(await store.get('missing')).toBeUndefined();
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(await store.get('a')).toBeUndefined();
    } finally {
      await conn.close();
    }
  });

  it('fails a call fast while Redis is away, and works again once it is back', async () => {
    const conn = await connect(300);
    try {
      const state = redisState(conn, `away-${randomUUID()}:`);
      const rpm1 = { rpm: { key: 'rpm:k', limit: 1 } };
      expect(await state.limits.admit(rpm1, 0, Date.now())).toEqual({ ok: true });
      await redis.down();
      const started = Date.now();
      await expect(state.limits.admit(rpm1, 0, Date.now())).rejects.toThrow();
      expect(Date.now() - started).toBeLessThan(1_000);
      await redis.up();
      await conn.ready(10_000);
      // The window survived in the AOF: the earlier request is still counted.
      expect(await state.limits.admit(rpm1, 0, Date.now())).toMatchObject({ ok: false, limit: 'rpm' });
    } finally {
      await conn.close();
    }
  });

  it('counts every token of answers that end at once (summed while a settling is under way)', async () => {
    const conn = await connect();
    try {
      const state = redisState(conn, `spend-${randomUUID()}:`);
      const limits = { tpm: { key: 'tpm:k', limit: 1_000 } };
      await Promise.all(
        Array.from({ length: 50 }, async () =>
          state.limits.settle({ limits, tokens: 0, nanoUsd: 0, at: Date.now() }, 20),
        ),
      );
      expect(await state.limits.admit(limits, 0, Date.now())).toMatchObject({ ok: false, limit: 'tpm' });
      expect(await state.limits.admit({ tpm: { key: 'tpm:k', limit: 1_001 } }, 0, Date.now())).toEqual({ ok: true });
    } finally {
      await conn.close();
    }
  });

  it('answers a call to a Redis that hangs with a timeout', async () => {
    const conn = await connect(300);
    try {
      const state = redisState(conn, `hang-${randomUUID()}:`);
      await redis.pause();
      try {
        await expect(state.leases.until('x')).rejects.toThrow(/did not answer within 300 ms/);
      } finally {
        await redis.unpause();
      }
      expect(await state.leases.until('x')).toBeUndefined();
    } finally {
      await conn.close();
    }
  });
});

describe('Redis usage', () => {
  const sum = (key: string, hour: string, status = 200) => ({
    ...{ hour, key, model: 'gpt-4o', upstream: 'oa', status },
    ...{ requests: 2, input: 30, output: 7, cached: 1, estimated: 1, ms: 250.5, cost: 0.0125, unpriced: 1 },
  });

  it('adds a batch once however often it is written, and reads it back as SQLite would', async () => {
    const conn = await connect();
    try {
      const usage = redisUsage(conn, `u-${randomUUID()}:`, 'test');
      const hour = new Date().toISOString().slice(0, 13);
      const batch = {
        id: randomUUID(),
        sums: [sum('alice', hour), sum('bob', hour, 429), sum('alice', '2020-01-01T00')],
      };
      await usage.write(batch);
      // Written again as after a lost answer: the marker says it is in.
      await usage.write(batch);
      await usage.write({ id: randomUUID(), sums: [sum('alice', hour)] });
      const q = usageQuery({ by: 'key', since: '1h' }, Date.now());
      const rows = await usage.query(q);
      expect(rows).toEqual(sumUsage([sum('alice', hour), sum('alice', hour), sum('bob', hour, 429)], q));
      expect(rows[0]).toMatchObject({ group: 'alice', requests: 4, input_tokens: 60, avg_ms: 125.3 });
      expect(rows[0]).toMatchObject({ cost_usd: 0.025, unpriced_requests: 2 });
      expect(rows[1]).toMatchObject({ group: 'bob', requests: 2, errors: 2 });
    } finally {
      await conn.close();
    }
  });

  /** The spend answers of the usage file for the same batches, in one order. */
  async function fromFile(batches: UsageBatch[], queries: SeriesQuery[]): Promise<SeriesSum[][]> {
    const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-spend-'));
    const file = sqliteUsage(path.join(dir, 'usage.db'));
    try {
      for (const batch of batches) await file.write(batch);
      return await Promise.all(queries.map(async (q) => sorted(await file.series(q))));
    } finally {
      await file.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const sorted = (sums: SeriesSum[]) =>
    sums
      .map((s) => ({ ...s, cost: Math.round(s.cost * 1e9) / 1e9 }))
      .sort((a, b) => (a.bucket + a.group < b.bucket + b.group ? -1 : 1));

  it("keeps the console's spend sums as it writes, and sums hours from before them from the hourly hashes", async () => {
    const conn = await connect();
    try {
      const prefix = `u-${randomUUID()}:`;
      const at = (hoursAgo: number) => new Date(Date.now() - hoursAgo * 3_600_000).toISOString().slice(0, 13);
      const old = { id: randomUUID(), sums: [sum('alice', at(50)), sum('bob', at(49), 429), sum('alice', at(2))] };
      await redisUsage(conn, prefix, 'test').write(old);
      // As a Redis written before spend sums were kept: the hourly hashes alone.
      const spend = await conn.client.keys(`${prefix}spend*`);
      expect(spend.length).toBeGreaterThan(1);
      await conn.client.del(spend);
      const usage = redisUsage(conn, prefix, 'test');
      // The hour after this one is the first the spend sums hold whole.
      const later = [sum('dave', at(-2)), { ...sum('carol', at(0)), model: 'o3' }];
      const now = { id: randomUUID(), sums: [sum('alice', at(0)), ...later] };
      await usage.write(now);
      const queries: SeriesQuery[] = (['hour', 'day'] as const).flatMap((bucket) =>
        (['key', 'model', 'upstream'] as const).map((by) => ({
          from: Date.now() - 3 * 86_400_000,
          to: Date.now() + 4 * 3_600_000,
          bucket,
          by,
        })),
      );
      const expected = await fromFile([old, now], queries);
      for (const [i, q] of queries.entries())
        expect(sorted(await usage.series(q)), q.bucket + q.by).toEqual(expected[i]);
      // From a fresh Redis on, every bucket is read from the spend sums.
      const fresh = redisUsage(conn, `u-${randomUUID()}:`, 'test');
      await fresh.write(old);
      const [byKey] = queries;
      expect(sorted(await fresh.series(byKey as SeriesQuery))).toEqual(
        (await fromFile([old], [byKey as SeriesQuery]))[0],
      );
    } finally {
      await conn.close();
    }
  });
});
