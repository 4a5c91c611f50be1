import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import parsePrometheusTextFormat, { type MetricFamily } from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeUpstream } from '../support/fake-upstream.ts';
import {
  HOST_FROM_CONTAINER,
  stablePort,
  startProxyContainer,
  type ProxyContainer,
} from '../support/proxy-container.ts';

const run = promisify(execFile);
const KEYS = { alice: 'alice-usage-key-0123456789', bob: 'bob-usage-key-0123456789', operator: 'op-key-0123456789ab' };
const messages = [{ role: 'user', content: 'Say hello' }];

/** The mixed traffic: each request's family, and whether its answer reports tokens (10: 5 in, 5 out). */
const REQUESTS: { path: string; body: unknown; reported: boolean }[] = [
  { path: '/v1/chat/completions', body: { model: 'gpt-4o', messages }, reported: true },
  // The fake upstream's chat stream carries no usage (no include_usage): the proxy estimates it.
  { path: '/v1/chat/completions', body: { model: 'gpt-4o', messages, stream: true }, reported: false },
  { path: '/v1/messages', body: { model: 'claude-x', max_tokens: 9, messages }, reported: true },
  { path: '/v1/messages', body: { model: 'claude-x', max_tokens: 9, messages, stream: true }, reported: true },
  {
    path: '/v1beta/models/gemini-2.5-flash:generateContent',
    body: { contents: [{ parts: [{ text: 'hi' }] }] },
    reported: true,
  },
  {
    path: '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse',
    body: { contents: [{ parts: [{ text: 'hi' }] }] },
    reported: true,
  },
];

describe('proxy usage and metrics (container)', () => {
  let fake: FakeUpstream;
  let proxy: ProxyContainer;
  let base: string;

  beforeAll(async () => {
    fake = await FakeUpstream.start({ host: '0.0.0.0' });
    const at = (vendor: string) => `http://${HOST_FROM_CONTAINER}:${fake.port}/${vendor}`;
    proxy = await startProxyContainer(
      {
        proxy: {
          allow_lan_access: true,
          upstreams: [
            { name: 'oa', protocol: 'openai', base_url: at('openai/v1'), api_key: 'u', models: ['gpt-*'] },
            // Listed by name as well: usage counts a model under the entry that matches it first.
            {
              name: 'an',
              protocol: 'anthropic',
              base_url: at('anthropic'),
              api_key: 'u',
              models: ['claude-x', 'claude-*'],
            },
            {
              name: 'ge',
              protocol: 'gemini',
              base_url: at('gemini'),
              api_key: 'u',
              models: ['gemini-2.5-flash', 'gemini-*'],
            },
          ],
          keys: [
            { name: 'alice', key_env: 'ALICE_KEY' },
            { name: 'bob', key_env: 'BOB_KEY' },
          ],
        },
      },
      { PROXY_API_KEY: KEYS.operator, ALICE_KEY: KEYS.alice, BOB_KEY: KEYS.bob },
      // Requests go on during the restart: to a port that stays this container's (stablePort says why).
      { hostPort: await stablePort() },
    );
    base = proxy.base;
  });
  afterAll(async () => {
    await (proxy as ProxyContainer | undefined)?.stop();
    await (fake as FakeUpstream | undefined)?.close();
  });

  async function send(key: string, i: number): Promise<number> {
    const r = REQUESTS[i % REQUESTS.length] as (typeof REQUESTS)[number];
    const res = await fetch(`${base}${r.path}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        'anthropic-version': '2023-06-01',
      },
      body: JSON.stringify(r.body),
    });
    await res.arrayBuffer();
    return res.status;
  }

  const get = async (path: string, key: string) => {
    const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${key}` } });
    return { status: res.status, text: await res.text() };
  };

  const sample = (families: MetricFamily[], name: string, labels: Record<string, string>): number =>
    (families.find((f) => f.name === name)?.metrics ?? [])
      .filter((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))
      .reduce((sum, m) => sum + Number(m.value ?? m.count ?? 0), 0);

  it('/metrics (admin keys only) counts the traffic by key, family, endpoint, status and upstream', async () => {
    for (let i = 0; i < 60; i++) expect(await send(KEYS.bob, i)).toBe(200);
    expect(await send('wrong-key-0123456789abc', 0)).toBe(401);
    expect((await get('/metrics', KEYS.bob)).status).toBe(403);
    expect((await get('/metrics', 'wrong-key-0123456789abc')).status).toBe(401);
    const { status, text } = await get('/metrics', KEYS.operator);
    expect(status).toBe(200);
    const families = parsePrometheusTextFormat(text);
    const requests = (labels: Record<string, string>) => sample(families, 'gatehouse_requests_total', labels);
    expect(requests({ key: 'bob', status: '200' })).toBe(60);
    expect(requests({ key: 'bob', family: 'anthropic', endpoint: '/v1/messages', upstream: 'an' })).toBe(20);
    expect(requests({ key: 'bob', family: 'gemini', endpoint: '/v1beta/models/:model' })).toBe(20);
    // The wrong key's model request and its /metrics read.
    expect(requests({ status: '401' })).toBe(2);
    // 10 tokens an answer where the upstream reported them: 50 answers of 60.
    expect(sample(families, 'gatehouse_tokens_total', { key: 'bob', direction: 'input' })).toBeGreaterThanOrEqual(250);
    expect(sample(families, 'gatehouse_tokens_total', { key: 'bob', model: 'claude-x', direction: 'output' })).toBe(
      100,
    );
    // The parser keeps no labels for a histogram's samples: their _count lines are read as written.
    const histogramCount = (name: string, upstream: string) =>
      Number(new RegExp(`^${name}_count\\{[^}]*upstream="${upstream}"[^}]*\\} (\\d+)$`, 'm').exec(text)?.[1]);
    expect(families.find((f) => f.name === 'gatehouse_request_duration_seconds')?.type).toBe('HISTOGRAM');
    expect(histogramCount('gatehouse_request_duration_seconds', 'oa')).toBe(20);
    expect(histogramCount('gatehouse_time_to_first_byte_seconds', 'ge')).toBe(20);
    expect(families.map((f) => f.name)).toEqual(
      expect.arrayContaining(['gatehouse_streams_in_flight', 'gatehouse_usage_write_failures_total']),
    );
    expect(text).not.toContain(KEYS.bob);
  });

  it('usage totals equal what the upstreams reported after 10,000 requests and a restart in the middle', async () => {
    const before = fake.requests.length;
    const TOTAL = 10_000;
    let next = 0;
    let restarting: Promise<void> | undefined;
    const statuses = new Map<number, number>();
    const worker = async () => {
      while (next < TOTAL) {
        const i = next++;
        if (i === TOTAL / 2) {
          restarting = proxy.container.restart({ timeout: 10_000 });
        }
        for (;;) {
          try {
            const status = await send(KEYS.alice, i);
            statuses.set(status, (statuses.get(status) ?? 0) + 1);
            break;
          } catch {
            // The proxy is restarting: this request never reached it; send it again.
            await new Promise((resolve) => setTimeout(resolve, 200));
          }
        }
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    await restarting;
    expect(statuses.get(200)).toBe(TOTAL);
    const seen = fake.requests.slice(before);
    const reported = seen.filter((r) => !(r.path.includes('chat/completions') && r.body.includes('"stream":true')));
    const { status, text } = await get('/internal/usage?by=key&since=1h', KEYS.operator);
    expect(status).toBe(200);
    const alice = (JSON.parse(text) as { rows: Record<string, number | string>[] }).rows.find(
      (r) => r['group'] === 'alice',
    );
    // Every request the upstreams answered is counted once, nothing lost in the restart, nothing twice.
    expect(alice?.['requests']).toBe(seen.length);
    expect(alice?.['estimated_requests']).toBe(seen.length - reported.length);
    expect(alice?.['errors']).toBe(0);
    const { stdout } = await run('docker', [
      'exec',
      proxy.container.getId(),
      'gatehouse',
      'usage',
      '--by',
      'model',
      '--json',
    ]);
    const byModel = (JSON.parse(stdout) as { rows: Record<string, number | string>[] }).rows;
    const tokens = (model: string) => byModel.find((r) => r['group'] === model);
    // Reported answers are 5 in + 5 out; of gpt-4o's, half were streams whose tokens are estimates.
    const count = (fragment: string) => reported.filter((r) => r.path.includes(fragment)).length;
    expect(tokens('claude-x')).toMatchObject({ output_tokens: 5 * count('/anthropic/') + 5 * 20 });
    expect(tokens('gemini-2.5-flash')).toMatchObject({ output_tokens: 5 * count('/gemini/') + 5 * 20 });
    const table = await run('docker', ['exec', proxy.container.getId(), 'gatehouse', 'usage']);
    expect(table.stdout).toMatch(/^alice\s+\d+/m);
    // Seconds on a quiet machine; minutes on a loaded one.
  }, 300_000);

  it('gatehouse usage: --since, --key, --by upstream|day agree on the totals; a bad flag is a clear error', async () => {
    const usage = async (...args: string[]) => {
      const { stdout } = await run('docker', ['exec', proxy.container.getId(), 'gatehouse', 'usage', ...args]);
      return (JSON.parse(stdout) as { by: string; rows: Record<string, number | string>[] }).rows;
    };
    const total = (rows: Record<string, number | string>[]) => rows.reduce((n, r) => n + Number(r['requests']), 0);
    const alice = await usage('--key', 'alice', '--since', '1h', '--json');
    expect(alice).toEqual([expect.objectContaining({ group: 'alice' })]);
    const byUpstream = await usage('--key=alice', '--by', 'upstream', '--json');
    expect(byUpstream.map((r) => r['group']).sort()).toEqual(['an', 'ge', 'oa']);
    expect(total(byUpstream)).toBe(alice[0]?.['requests']);
    const byDay = await usage('--by', 'day', '--json', '--since', '2d');
    expect(byDay.map((r) => r['group'])).toContain(new Date().toISOString().slice(0, 10));
    expect(total(byDay)).toBe(total(await usage('--json')));
    // No key of that name: no rows, not an error.
    expect(await usage('--key', 'nobody', '--json')).toEqual([]);
    const table = await run('docker', ['exec', proxy.container.getId(), 'gatehouse', 'usage', '--by', 'upstream']);
    expect(table.stdout.split('\n')[0]).toMatch(/^upstream\s+requests\s+input\s+output/);
    for (const [args, message] of [
      [['--by', 'colour'], 'by must be one of key, model, upstream, day'],
      [['--since', 'last week'], 'since must be a duration'],
      [['--colour'], 'unknown argument "--colour"'],
      [['--key'], '--key needs a value'],
    ] as const) {
      const refused = await run('docker', ['exec', proxy.container.getId(), 'gatehouse', 'usage', ...args]).catch(
        (e: unknown) => e as { code: number; stdout: string; stderr: string },
      );
      expect(refused).toMatchObject({ code: 1, stdout: '', stderr: expect.stringContaining(message) });
      expect((refused as { stderr: string }).stderr).toContain('usage: gatehouse usage');
    }
  });
});
