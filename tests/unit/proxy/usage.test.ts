import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/log.ts';
import { runUsage } from '../../../src/proxy/usage/command.ts';
import { sumUsage, usageQuery, type UsageSum } from '../../../src/proxy/usage/query.ts';
import {
  sqliteUsage,
  UsageStore,
  type UsageBackend,
  type UsageBatch,
  type UsageRecord,
} from '../../../src/proxy/usage/store.ts';

const log = createLogger('silent');
const NOW = Date.UTC(2026, 10, 24, 16);
const HOUR = 3_600_000;

const record = (more: Partial<UsageRecord>): UsageRecord => ({
  at: NOW,
  key: 'alice',
  model: 'gpt-4o',
  upstream: 'oa',
  status: 200,
  input: 10,
  output: 5,
  cached: 2,
  estimated: false,
  cost: 0.00025,
  ms: 100,
  ...more,
});

function fresh(): { dir: string; file: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-usage-'));
  return { dir, file: path.join(dir, 'sub', 'usage.db') };
}

describe('UsageStore', () => {
  it('sums records per key, model, upstream and day, from `since` and for one key', async () => {
    const { file } = fresh();
    const store = new UsageStore({ backend: sqliteUsage(file), log, flushMs: 60_000 });
    store.record(record({}));
    store.record(record({ ms: 300, estimated: true }));
    store.record(
      record({ key: 'bob', model: 'claude-x', upstream: 'an', status: 429, input: 0, output: 0, cached: 0, cost: 0 }),
    );
    // A model without a price: its tokens count, its cost is unknown (null), never 0.
    store.record(record({ key: 'carol', model: 'local', cost: null }));
    store.record(record({ key: 'carol', model: 'local', cost: null }));
    store.record(record({ at: NOW - 2 * 24 * HOUR, input: 1000 }));
    const q = (raw: { since?: string; key?: string; by?: string }) => store.query(usageQuery(raw, NOW + HOUR));
    expect(await q({ by: 'key', since: '1d' })).toEqual([
      {
        group: 'alice',
        requests: 2,
        input_tokens: 20,
        output_tokens: 10,
        cached_tokens: 4,
        estimated_requests: 1,
        errors: 0,
        avg_ms: 200,
        cost_usd: 0.0005,
        unpriced_requests: 0,
      },
      expect.objectContaining({ group: 'bob', requests: 1, errors: 1, cost_usd: 0 }),
      expect.objectContaining({ group: 'carol', requests: 2, input_tokens: 20, cost_usd: null, unpriced_requests: 2 }),
    ]);
    // A group with priced and unpriced requests: the known part, and how many are not in it.
    expect((await q({ by: 'upstream', since: '1d' }))[1]).toMatchObject({
      group: 'oa',
      requests: 4,
      cost_usd: 0.0005,
      unpriced_requests: 2,
    });
    expect((await q({ by: 'model', since: '7d' })).map((r) => [r.group, r.input_tokens])).toEqual([
      ['claude-x', 0],
      ['gpt-4o', 1020],
      ['local', 20],
    ]);
    expect((await q({ by: 'upstream', key: 'bob' })).map((r) => r.group)).toEqual(['an']);
    expect((await q({ by: 'day' })).map((r) => [r.group, r.requests])).toEqual([
      ['2026-11-22', 1],
      ['2026-11-24', 5],
    ]);
    await store.close();
  });

  it('adds the cost columns to a usage file made before them', async () => {
    const { file } = fresh();
    mkdirSync(path.dirname(file), { recursive: true });
    const old = new DatabaseSync(file);
    old.exec(`CREATE TABLE usage (hour TEXT NOT NULL, key TEXT NOT NULL, model TEXT NOT NULL, upstream TEXT NOT NULL,
      status INTEGER NOT NULL, requests INTEGER NOT NULL, input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL,
      cached_tokens INTEGER NOT NULL, estimated_requests INTEGER NOT NULL, total_ms REAL NOT NULL,
      PRIMARY KEY (hour, key, model, upstream, status)) WITHOUT ROWID`);
    old.exec(`INSERT INTO usage VALUES ('2026-11-24T15', 'alice', 'gpt-4o', 'oa', 200, 3, 30, 6, 0, 0, 300)`);
    old.close();
    const store = new UsageStore({ backend: sqliteUsage(file), log, flushMs: 60_000 });
    store.record(record({}));
    expect(await store.query(usageQuery({ since: '1d' }, NOW + HOUR))).toEqual([
      expect.objectContaining({ group: 'alice', requests: 4, input_tokens: 40, cost_usd: 0.00025 }),
    ]);
    await store.close();
  });

  it("keeps the console's spend sums beside the rows, and makes them for a file made before them", async () => {
    const { file } = fresh();
    const store = new UsageStore({ backend: sqliteUsage(file), log, flushMs: 60_000 });
    store.record(record({}));
    store.record(record({ key: 'bob', at: NOW + HOUR, cost: null }));
    store.record(record({ model: 'o3', at: NOW - 24 * HOUR, cost: 0.5 }));
    const month = { from: NOW - 30 * 24 * HOUR, to: Date.UTC(2026, 10, 25) };
    const spent = async () => [
      ...(await store.series({ ...month, bucket: 'hour', by: 'key' })),
      ...(await store.series({ ...month, bucket: 'day', by: 'model' })),
    ];
    const expected = [
      { bucket: '2026-11-23T16', group: 'alice', requests: 1, tokens: 15, cost: 0.5, unpriced: 0 },
      { bucket: '2026-11-24T16', group: 'alice', requests: 1, tokens: 15, cost: 0.00025, unpriced: 0 },
      { bucket: '2026-11-24T17', group: 'bob', requests: 1, tokens: 15, cost: 0, unpriced: 1 },
      { bucket: '2026-11-23', group: 'o3', requests: 1, tokens: 15, cost: 0.5, unpriced: 0 },
      { bucket: '2026-11-24', group: 'gpt-4o', requests: 2, tokens: 30, cost: 0.00025, unpriced: 1 },
    ];
    expect(await spent()).toEqual(expected);
    await store.close();
    // A file from before the spend sums: they are made from its rows when it is opened.
    const old = new DatabaseSync(file);
    old.exec('DROP TABLE spend');
    old.close();
    const reopened = new UsageStore({ backend: sqliteUsage(file), log, flushMs: 60_000 });
    expect([
      ...(await reopened.series({ ...month, bucket: 'hour', by: 'key' })),
      ...(await reopened.series({ ...month, bucket: 'day', by: 'model' })),
    ]).toEqual(expected);
    await reopened.close();
  });

  it('keeps what it could not write, counts the failure, and writes it all on the next try', async () => {
    const { dir, file } = fresh();
    // The file's folder cannot be made: a file stands where it should be.
    writeFileSync(path.join(dir, 'sub'), '');
    let failures = 0;
    const store = new UsageStore({
      backend: sqliteUsage(file),
      log,
      flushMs: 60_000,
      onWriteFailure: () => failures++,
    });
    store.record(record({}));
    await store.flush();
    store.record(record({}));
    await store.flush();
    expect(failures).toBe(2);
    rmSync(path.join(dir, 'sub'));
    mkdirSync(path.join(dir, 'sub'));
    await store.flush();
    expect(failures).toBe(2);
    expect((await store.query(usageQuery({}, NOW)))[0]).toMatchObject({ requests: 2, input_tokens: 20 });
    await store.close();
  });

  it('refuses a bad query with a message', () => {
    expect(() => usageQuery({ by: 'colour' }, NOW)).toThrow('by must be one of key, model, upstream, day');
    expect(() => usageQuery({ since: 'last week' }, NOW)).toThrow('since must be a duration');
    expect(() => usageQuery({ key: '' }, NOW)).toThrow('key must be a key name');
  });
});

describe('gatehouse usage', () => {
  async function run(argv: string[], file: string): Promise<string> {
    const stdout = new PassThrough();
    let out = '';
    stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const ctx = {
      argv,
      env: { PROXY_USAGE_DB: file },
      cwd: '/',
      stdin: new PassThrough(),
      stdout,
      stderr: new PassThrough(),
      shutdown: new AbortController().signal,
    };
    expect(await runUsage(ctx)).toBe(0);
    return out;
  }

  it('prints a table, or the JSON /internal/usage answers', async () => {
    const { file } = fresh();
    const store = new UsageStore({ backend: sqliteUsage(file), log, flushMs: 60_000 });
    store.record(record({ at: Date.now() }));
    store.record(record({ at: Date.now(), key: 'bob', output: 123_456 }));
    store.record(record({ at: Date.now(), key: 'carol', cost: null }));
    await store.close();
    const table = await run(['--by', 'key'], file);
    expect(table.split('\n')[0]).toMatch(
      /^key\s+requests\s+input\s+output\s+cached\s+estimated\s+errors\s+avg ms\s+cost USD\s+unpriced$/,
    );
    expect(table).toMatch(/^bob\s+1\s+10\s+123456\s+2\s+0\s+0\s+100\s+0\.000250\s+0$/m);
    expect(table).toMatch(/^carol\s+1\s+10\s+5\s+2\s+0\s+0\s+100\s+unknown\s+1$/m);
    const json = JSON.parse(await run(['--json', '--key=alice', '--since', '1h'], file)) as { rows: unknown[] };
    expect(json.rows).toEqual([expect.objectContaining({ group: 'alice', requests: 1 })]);
  });

  it('refuses unknown flags, missing values and a missing file', async () => {
    const { file } = fresh();
    await expect(run(['--colour'], file)).rejects.toThrow('unknown argument "--colour"');
    await expect(run(['--since'], file)).rejects.toThrow('--since needs a value');
    await expect(run(['--by', 'colour'], file)).rejects.toThrow('by must be one of');
    await expect(run([], file)).rejects.toThrow(`no usage file at ${file}`);
  });
});

describe('UsageStore batches', () => {
  /** A backend that keeps batches by id, as Redis' batch markers do, and fails as told. */
  function fakeBackend() {
    const applied = new Map<string, UsageBatch>();
    const attempts: string[] = [];
    let fail: 'no' | 'before' | 'after' = 'no';
    const backend: UsageBackend = {
      where: 'fake',
      write: async (batch) => {
        attempts.push(batch.id);
        await Promise.resolve();
        if (fail === 'before') throw new Error('The client is offline');
        if (!applied.has(batch.id)) applied.set(batch.id, structuredClone(batch));
        if (fail === 'after') throw new Error('redis did not answer within 500 ms');
      },
      query: () => Promise.resolve([]),
      series: () => Promise.resolve([]),
      close: () => Promise.resolve(),
    };
    const total = () => [...applied.values()].flatMap((b) => b.sums).reduce((n, s) => n + s.requests, 0);
    return { backend, applied, attempts, total, failing: (how: typeof fail) => (fail = how) };
  }

  it('writes a failed batch again as it was, before what came since, and counts it once', async () => {
    const fake = fakeBackend();
    let failures = 0;
    const store = new UsageStore({ backend: fake.backend, log, flushMs: 60_000, onWriteFailure: () => failures++ });
    store.record(record({}));
    // Its MULTI ran but the answer was lost: the outcome is unknown to the store.
    fake.failing('after');
    await store.flush();
    store.record(record({ key: 'bob' }));
    fake.failing('before');
    await store.flush();
    expect(failures).toBe(2);
    fake.failing('no');
    await store.flush();
    const [first, second, third, fourth] = fake.attempts;
    expect([second, third]).toEqual([first, first]);
    expect(fourth).not.toBe(first);
    expect(fake.applied.size).toBe(2);
    expect(fake.total()).toBe(2);
    expect([...fake.applied.values()].map((b) => b.sums.map((s) => s.key))).toEqual([['alice'], ['bob']]);
    await store.close();
  });

  it('writes one batch at a time however often it is asked', async () => {
    const fake = fakeBackend();
    const store = new UsageStore({ backend: fake.backend, log, flushMs: 60_000 });
    store.record(record({}));
    await Promise.all([store.flush(), store.flush(), store.flush()]);
    expect(fake.attempts).toHaveLength(1);
    expect(fake.total()).toBe(1);
    await store.close();
  });
});

describe('sumUsage', () => {
  it('answers what the SQLite query answers for the same sums', async () => {
    const { file } = fresh();
    const store = new UsageStore({ backend: sqliteUsage(file), log, flushMs: 60_000 });
    const keys = ['alice', 'bob', 'Zed', 'ünï'];
    const sums: UsageSum[] = [];
    for (let i = 0; i < 200; i++) {
      const r = record({
        at: NOW - (i % 9) * 7 * HOUR,
        key: keys[i % 4],
        model: ['gpt-4o', 'claude-x', 'm'][i % 3],
        upstream: ['oa', 'an'][i % 2],
        status: [200, 429, 500, 200, 201][i % 5],
        input: i * 3,
        output: i,
        cached: i % 7,
        estimated: i % 11 === 0,
        // Model m has no price.
        cost: i % 3 === 2 ? null : i * 1e-6,
        ms: 10 + ((i * 37) % 101) + 0.25,
      });
      store.record(r);
      const hour = new Date(r.at - (r.at % HOUR)).toISOString().slice(0, 13);
      const priced = { cost: r.cost ?? 0, unpriced: r.cost === null ? 1 : 0 };
      sums.push({ ...r, ...priced, hour, requests: 1, estimated: r.estimated ? 1 : 0 });
    }
    for (const raw of [{}, { by: 'model', since: '1d' }, { by: 'day', key: 'bob' }, { by: 'upstream', since: '30h' }]) {
      const q = usageQuery(raw, NOW + HOUR);
      expect(sumUsage(sums, q)).toEqual(await store.query(q));
    }
    await store.close();
  });
});
