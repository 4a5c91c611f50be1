import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { describe, expect, it } from 'vitest';
import { ProxyMetrics } from '../../../src/proxy/metrics.ts';
import type { ClientKey } from '../../../src/proxy/keys.ts';
import type { RequestRecord } from '../../../src/proxy/request-log.ts';

/** A key as a finished request's record carries it: only its name is read here. */
const keyNamed = (name: string) => ({ name }) as ClientKey;

const record = (over: Partial<RequestRecord> = {}): RequestRecord => ({
  at: 0,
  method: 'POST',
  path: '/v1/chat/completions',
  endpoint: '/v1/chat/completions',
  family: 'openai',
  key: keyNamed('alice'),
  reservation: undefined,
  model: 'gpt-x',
  countedModel: 'gpt-x',
  upstream: 'oa',
  status: 200,
  ms: 120,
  ttfbMs: 40,
  stream: false,
  aborted: false,
  usage: { input: 10, output: 5, cached: 2, cacheWrite: 0, estimated: false },
  cost: 0.00125,
  attempts: [{ upstream: 'oa', outcome: 200, ms: 100 }],
  cut: undefined,
  ...over,
});

/** name → the samples of that family as `labels → value` (labels in their order, `k=v,…`). */
async function scrape(metrics: ProxyMetrics): Promise<Map<string, Map<string, string | undefined>>> {
  const families = parsePrometheusTextFormat(await metrics.registry.metrics());
  return new Map(
    families.map((f) => [
      f.name,
      new Map(
        f.metrics.map((m) => [
          Object.entries(m.labels ?? {})
            .map(([k, v]) => `${k}=${v}`)
            .join(','),
          m.value ?? m.count,
        ]),
      ),
    ]),
  );
}

describe('proxy metrics', () => {
  it('counts requests, tokens, attempts and retries as observed, the same on every scrape', async () => {
    const metrics = new ProxyMetrics();
    metrics.observe(record());
    metrics.observe(record());
    metrics.observe(
      record({
        key: keyNamed('bob'),
        upstream: 'backup',
        attempts: [
          { upstream: 'oa', outcome: 503, ms: 5 },
          { upstream: 'backup', outcome: 200, ms: 90 },
        ],
        usage: { input: 7, output: 1, cached: 0, cacheWrite: 0, estimated: true },
        // A model without a price adds nothing to the cost.
        cost: null,
      }),
    );
    for (let i = 0; i < 2; i++) {
      const m = await scrape(metrics);
      const requests = m.get('gatehouse_requests_total');
      expect(requests?.get('family=openai,endpoint=/v1/chat/completions,status=200,upstream=oa,key=alice')).toBe('2');
      expect(requests?.get('family=openai,endpoint=/v1/chat/completions,status=200,upstream=backup,key=bob')).toBe('1');
      const tokens = m.get('gatehouse_tokens_total');
      expect(tokens?.get('key=alice,model=gpt-x,direction=input')).toBe('20');
      expect(tokens?.get('key=alice,model=gpt-x,direction=output')).toBe('10');
      expect(tokens?.get('key=alice,model=gpt-x,direction=cached')).toBe('4');
      expect(tokens?.get('key=bob,model=gpt-x,direction=input')).toBe('7');
      expect([...(m.get('gatehouse_cost_usd_total') ?? [])]).toEqual([['key=alice,model=gpt-x', '0.0025']]);
      const attempts = m.get('gatehouse_upstream_attempts_total');
      expect(attempts?.get('upstream=oa,outcome=200')).toBe('2');
      expect(attempts?.get('upstream=oa,outcome=503')).toBe('1');
      expect(attempts?.get('upstream=backup,outcome=200')).toBe('1');
      expect([...(m.get('gatehouse_upstream_retries_total') ?? [])]).toEqual([['upstream=backup', '1']]);
      // Read as text: the parser drops a histogram's labels.
      const text = await metrics.registry.metrics();
      expect(text).toContain('gatehouse_request_duration_seconds_count{family="openai",upstream="oa"} 2\n');
      // Buckets count up to and including their bound (0.12 s twice), and add up to the count.
      const bucket = (le: string) =>
        `gatehouse_request_duration_seconds_bucket{family="openai",upstream="oa",le="${le}"}`;
      expect(text).toContain(`${bucket('0.1')} 0\n`);
      expect(text).toContain(`${bucket('0.25')} 2\n`);
      expect(text).toContain(`${bucket('+Inf')} 2\n`);
      expect(text).toContain('gatehouse_request_duration_seconds_sum{family="openai",upstream="oa"} 0.24\n');
      expect(text).toContain(
        'gatehouse_time_to_first_byte_seconds_bucket{family="openai",upstream="oa",le="0.05"} 2\n',
      );
      expect(text).toContain('gatehouse_time_to_first_byte_seconds_count{family="openai",upstream="backup"} 1\n');
    }
  });

  it('gives requests that reached no upstream a request count only', async () => {
    const metrics = new ProxyMetrics();
    metrics.observe(
      record({ status: 404, upstream: undefined, model: 'nope', usage: undefined, attempts: [], ttfbMs: 1 }),
    );
    metrics.observe(
      record({ path: '/healthz', endpoint: '/healthz', model: undefined, upstream: undefined, attempts: [] }),
    );
    const m = await scrape(metrics);
    expect(m.get('gatehouse_requests_total')?.size).toBe(2);
    expect(m.get('gatehouse_tokens_total')?.size ?? 0).toBe(0);
    expect(await metrics.registry.metrics()).not.toContain('gatehouse_request_duration_seconds_count{');
    expect(m.get('gatehouse_upstream_attempts_total')?.size ?? 0).toBe(0);
  });
});
