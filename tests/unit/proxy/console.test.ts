import { describe, expect, it } from 'vitest';
import { Activity, RECENT } from '../../../src/proxy/console/activity.ts';
import { liveResponse, spendResponse } from '../../../src/proxy/console/index.ts';
import type { ClientKey } from '../../../src/proxy/keys.ts';
import type { RequestRecord } from '../../../src/proxy/request-log.ts';
import { sumSeries, type UsageSum } from '../../../src/proxy/usage/query.ts';
import { sqliteUsage } from '../../../src/proxy/usage/store.ts';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 10, 24, 10);

const sum = (hour: number, key: string, model: string, cost: number, unpriced = 0): UsageSum => ({
  hour: new Date(T0 + hour * HOUR).toISOString().slice(0, 13),
  key,
  model,
  upstream: 'oa',
  status: 200,
  requests: 2,
  input: 100,
  output: 10,
  cached: 0,
  estimated: 0,
  ms: 50,
  cost,
  unpriced,
});

describe('spend series', () => {
  const sums = [
    sum(0, 'alice', 'a', 0.5),
    sum(1, 'alice', 'b', 0.25),
    sum(1, 'bob', 'local', 0, 2),
    sum(30, 'bob', 'a', 1),
  ];

  it('answers the same from SQLite and from sums read elsewhere (Redis)', async () => {
    const usage = sqliteUsage(path.join(mkdtempSync(path.join(tmpdir(), 'gatehouse-series-')), 'usage.db'));
    await usage.write({ id: 'series', sums });
    for (const q of [
      { from: T0, to: T0 + 2 * HOUR, bucket: 'hour' as const, by: 'key' as const },
      { from: T0 - 24 * HOUR, to: T0 + 48 * HOUR, bucket: 'day' as const, by: 'model' as const },
    ]) {
      const order = (rows: { bucket: string; group: string }[]) =>
        [...rows].sort((a, b) => `${a.bucket}${a.group}`.localeCompare(`${b.bucket}${b.group}`));
      expect(order(sumSeries(sums, q))).toEqual(order(await usage.series(q)));
    }
    await usage.close();
  });

  it('has every bucket of the range, each group its cells and totals, most spent first, unknown as null', () => {
    const q = { from: T0, to: T0 + 3 * HOUR, bucket: 'hour' as const, by: 'key' as const };
    const answer = spendResponse(q, sumSeries(sums, q));
    expect(answer.buckets).toEqual([0, 1, 2].map((h) => new Date(T0 + h * HOUR).toISOString()));
    expect(answer.totals).toEqual([
      { group: 'alice', requests: 4, tokens: 220, cost_usd: 0.75, unpriced_requests: 0 },
      { group: 'bob', requests: 2, tokens: 110, cost_usd: null, unpriced_requests: 2 },
    ]);
    expect(answer.series[1]?.cells.map((c) => c.cost_usd)).toEqual([0, null, 0]);
  });
});

describe('Activity', () => {
  const record = (at: number, over: Partial<RequestRecord> = {}): RequestRecord => ({
    at,
    method: 'POST',
    path: '/v1/chat/completions',
    endpoint: '/v1/chat/completions',
    family: 'openai',
    key: { name: 'alice' } as ClientKey,
    model: 'gpt-x',
    countedModel: 'gpt-x',
    upstream: 'oa',
    status: 200,
    ms: 120,
    ttfbMs: 30,
    stream: false,
    aborted: false,
    usage: { input: 10, output: 5, cached: 0, cacheWrite: 0, estimated: false },
    cost: 0.001,
    reservation: undefined,
    attempts: [{ upstream: 'oa', outcome: 200, ms: 100 }],
    cut: undefined,
    ...over,
  });

  it('keeps the last finished requests newest first, without keys, and the last hour per upstream', () => {
    let now = T0;
    const activity = new Activity(() => now);
    for (let i = 0; i < RECENT + 5; i++) activity.sink(record(T0 + i));
    activity.sink(
      record(T0 + 1_000, {
        upstream: 'backup',
        attempts: [
          { upstream: 'oa', outcome: 'connect', ms: 3 },
          { upstream: 'backup', outcome: 200, ms: 90 },
        ],
      }),
    );
    const snapshot = activity.snapshot();
    expect(snapshot.recent).toHaveLength(RECENT);
    expect(snapshot.recent[0]).toMatchObject({ key: 'alice', upstream: 'backup', cost_usd: 0.001 });
    expect(JSON.stringify(snapshot)).not.toContain('key-of');
    const [minute] = snapshot.upstreams['oa']?.minutes ?? [];
    expect(minute).toMatchObject({ requests: RECENT + 6, errors: 1 });
    expect(snapshot.upstreams['oa']?.lastError).toEqual({ at: T0 + 1_000, outcome: 'connect' });
    now += 61 * 60_000;
    expect(activity.snapshot().upstreams['oa']?.minutes).toEqual([]);
  });

  it('merges replicas: in flight summed, the newest finished of all first', () => {
    const a = new Activity();
    const b = new Activity();
    a.sink(record(T0 + 1, { key: { name: 'a' } as ClientKey }));
    b.sink(record(T0 + 2, { key: { name: 'b' } as ClientKey }));
    const live = liveResponse([a.snapshot(), b.snapshot()]);
    expect(live).toMatchObject({ in_flight: 0, replicas: 2 });
    expect(live.recent.map((r) => r.key)).toEqual(['b', 'a']);
  });
});
