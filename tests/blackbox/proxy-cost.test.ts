/**
 * What requests cost, through the built image: an upstream that reports fixed token counts (cache reads and
 * writes included) in each family's JSON answers and streams, priced against figures worked out by hand from
 * the price table's published prices and a proxy.prices override; a model without a price; dollar budgets
 * refusing at the right request, in one process's memory and shared by two replicas on Redis.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  HOST_FROM_CONTAINER,
  startProxyContainer,
  startProxyContainers,
  stopAll,
  type ProxyContainer,
} from '../support/proxy-container.ts';
import { COST, LLAMA_PRICE, startPricedUpstream, type PricedUpstream } from '../support/priced-upstream.ts';
import { rawRequest } from '../support/raw-http.ts';
import { startRedisContainer, type RedisContainer } from '../support/redis-container.ts';

const run = promisify(execFile);
const OPERATOR = 'operator-cost-key-0123456789';
const BUDGETED = 'budgeted-cost-key-0123456789';
const WARM = 'warm-cost-key-0123456789';

function proxyConfig(port: number, budgetUsd: number) {
  const at = (vendor: string) => `http://${HOST_FROM_CONTAINER}:${port}/${vendor}`;
  return {
    proxy: {
      allow_lan_access: true,
      upstreams: [
        {
          name: 'oa',
          protocol: 'openai',
          base_url: at('openai/v1'),
          api_key: 'u',
          // Listed by name as well: usage and metrics count a model under the entry that matches it first.
          models: ['gpt-4o-mini', 'my-llama-8b', 'local-model', 'gpt-*', 'my-*', 'local-*'],
        },
        {
          name: 'an',
          protocol: 'anthropic',
          base_url: at('anthropic'),
          api_key: 'u',
          models: ['claude-3-5-haiku-20241022', 'claude-*'],
        },
        {
          name: 'ge',
          protocol: 'gemini',
          base_url: at('gemini'),
          api_key: 'u',
          models: ['gemini-2.5-flash', 'gemini-*'],
        },
      ],
      prices: [LLAMA_PRICE],
      keys: [
        { name: 'budgeted', key_env: 'BUDGETED_KEY', budget_usd: budgetUsd, budget_period: 'day' },
        // Two of Anthropic's answers ($0.00244 each) take it past its budget.
        { name: 'warm', key_env: 'WARM_KEY', budget_usd: 0.003, budget_period: 'day' },
      ],
    },
  };
}

const messages = [{ role: 'user', content: 'Say hello' }];

/** One request of each shape: the family's path and body. */
const chat = (model: string, stream = false) => ({
  path: '/v1/chat/completions',
  body: { model, messages, stream, ...(stream && { stream_options: { include_usage: true } }) },
});
const claude = (stream = false) => ({
  path: '/v1/messages',
  body: { model: 'claude-3-5-haiku-20241022', max_tokens: 50, messages, stream },
});
const gemini = (stream = false) => ({
  path: `/v1beta/models/gemini-2.5-flash:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`,
  body: { contents: [{ role: 'user', parts: [{ text: 'Say hello' }] }] },
});

async function send(base: string, key: string, { path, body }: { path: string; body: unknown }) {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

interface Row {
  group: string;
  requests: number;
  input_tokens: number;
  cost_usd: number | null;
  unpriced_requests: number;
}

async function usageBy(base: string, by: string, more = ''): Promise<Row[]> {
  const res = await fetch(`${base}/internal/usage?by=${by}${more}`, {
    headers: { authorization: `Bearer ${OPERATOR}` },
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { rows: Row[] }).rows;
}

let upstream: PricedUpstream;

beforeAll(async () => {
  upstream = await startPricedUpstream('0.0.0.0');
});
afterAll(async () => {
  await upstream.close();
});

describe('cost of each family, whole answers and streams (container, memory backend)', () => {
  let proxy: ProxyContainer;

  beforeAll(async () => {
    proxy = await startProxyContainer(proxyConfig(upstream.port, 0.005), {
      PROXY_API_KEY: OPERATOR,
      BUDGETED_KEY: BUDGETED,
      WARM_KEY: WARM,
    });
  });
  afterAll(async () => {
    await (proxy as ProxyContainer | undefined)?.stop();
  });

  it('prices each request at its tokens, cache reads and writes included, and sums them per model', async () => {
    const requests = [
      chat('gpt-4o-mini'),
      chat('gpt-4o-mini', true),
      chat('my-llama-8b'),
      chat('my-llama-8b', true),
      claude(),
      claude(true),
      // An OpenAI chat client of an Anthropic model: translated, its cache writes read from the Anthropic answer.
      chat('claude-3-5-haiku-20241022'),
      gemini(),
      gemini(true),
    ];
    for (const request of requests) {
      const res = await send(proxy.base, OPERATOR, request);
      expect(res.status, `${request.path} ${res.text}`).toBe(200);
      expect(res.text).toContain('Hello');
    }
    const rows = await usageBy(proxy.base, 'model');
    const cost = Object.fromEntries(rows.map((r) => [r.group, r.cost_usd]));
    expect(cost['gpt-4o-mini']).toBeCloseTo(2 * COST.openai, 9);
    expect(cost['my-llama-8b']).toBeCloseTo(2 * COST.llama, 9);
    expect(cost['claude-3-5-haiku-20241022']).toBeCloseTo(3 * COST.anthropic, 9);
    expect(cost['gemini-2.5-flash']).toBeCloseTo(2 * COST.gemini, 9);
    expect(rows.every((r) => r.unpriced_requests === 0)).toBe(true);
    // By upstream: the same cost, summed otherwise.
    const upstreams = Object.fromEntries((await usageBy(proxy.base, 'upstream')).map((r) => [r.group, r.cost_usd]));
    expect(upstreams['oa']).toBeCloseTo(2 * (COST.openai + COST.llama), 9);
    expect(upstreams['an']).toBeCloseTo(3 * COST.anthropic, 9);

    const metrics = await fetch(`${proxy.base}/metrics`, { headers: { authorization: `Bearer ${OPERATOR}` } });
    const text = await metrics.text();
    const series = /^gatehouse_cost_usd_total\{key="default",model="claude-3-5-haiku-20241022"\} (\S+)$/m.exec(text);
    expect(Number(series?.[1])).toBeCloseTo(3 * COST.anthropic, 9);

    const cli = await run('docker', [
      'exec',
      proxy.container.getId(),
      ...['gatehouse', 'usage', '--by', 'model', '--since', '1h'],
    ]);
    expect(cli.stdout.split('\n')[0]).toMatch(/cost USD\s+unpriced$/);
    expect(cli.stdout).toMatch(/^gemini-2\.5-flash\s.*\s0\.001080\s+0$/m);
  });

  it('counts a model without a price as unpriced: tokens counted, cost null (not 0), one warning', async () => {
    for (let i = 0; i < 3; i++)
      expect((await send(proxy.base, OPERATOR, chat('local-model', i === 1))).status).toBe(200);
    const [row] = await usageBy(proxy.base, 'model', '&since=1h').then((rows) =>
      rows.filter((r) => r.group === 'local-model'),
    );
    expect(row).toMatchObject({ requests: 3, input_tokens: 3000, cost_usd: null, unpriced_requests: 3 });
    await expect.poll(() => proxy.logs()).toContain('no price for this model');
    expect(proxy.logs().match(/no price for this model/g)).toHaveLength(1);
    // The operator's total says what it knows and how many requests it leaves out.
    const [operator] = await usageBy(proxy.base, 'key', '&key=default');
    expect(operator?.unpriced_requests).toBe(3);
    expect(operator?.cost_usd).toBeGreaterThan(0);
  });

  it('console: the page for anyone on a served host, strict CSP; its data for admin keys; bad ranges are 400', async () => {
    const page = await fetch(`${proxy.base}/console`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(await page.text()).toContain('<div id="app">');
    // Keyless, so only to a Host the proxy serves (loopback here, or proxy.allowed_hosts).
    const foreign = await rawRequest(`${proxy.base}/console`, { headers: { host: 'evil.example' } });
    expect(foreign.status).toBe(403);
    const admin = { authorization: `Bearer ${OPERATOR}` };
    for (const path of ['spend', 'keys', 'upstreams', 'live']) {
      const url = `${proxy.base}/internal/console/${path}`;
      expect((await fetch(url)).status, path).toBe(401);
      expect((await fetch(url, { headers: { authorization: `Bearer ${BUDGETED}` } })).status, path).toBe(403);
      expect((await fetch(url, { headers: admin })).status, path).toBe(200);
    }
    const spend = async (query: string) => {
      const res = await fetch(`${proxy.base}/internal/console/spend?${query}`, { headers: admin });
      return { status: res.status, body: (await res.json()) as { error?: string; totals?: { group: string }[] } };
    };
    expect(await spend('by=colour')).toEqual({
      status: 400,
      body: { error: 'by must be one of key, model, upstream, not "colour"' },
    });
    expect(await spend('bucket=week')).toMatchObject({
      status: 400,
      body: { error: expect.stringContaining('bucket must be one of hour, day') },
    });
    expect(await spend('from=yesterday')).toMatchObject({
      status: 400,
      body: { error: expect.stringContaining('ISO 8601') },
    });
    expect(await spend('from=2026-02-01&to=2026-01-01')).toMatchObject({
      status: 400,
      body: { error: 'from must be before to' },
    });
    expect(await spend('from=2020-01-01&to=2026-01-01&bucket=day')).toMatchObject({
      status: 400,
      body: { error: expect.stringContaining('at most 400 days') },
    });
    expect(await spend('from=2026-01-01&to=2026-06-01&bucket=hour')).toMatchObject({
      status: 400,
      body: { error: expect.stringContaining('bucket=day') },
    });
    expect(await spend('by=model&by=key')).toMatchObject({ status: 400, body: { error: 'by may be given once' } });
    const byModel = await spend('by=model&bucket=day');
    expect(byModel.status).toBe(200);
    expect(byModel.body.totals?.map((t) => t.group)).toContain('gemini-2.5-flash');
  });

  it('refuses a key once its dollar budget is spent: at the request after the one that reached it', async () => {
    // $0.00244 each against $0.005: the third is admitted at $0.00488 and takes the key to $0.00732.
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await send(proxy.base, BUDGETED, claude(i === 1))).status);
    expect(statuses).toEqual([200, 200, 200]);
    for (const request of [claude(), chat('gpt-4o-mini'), gemini()]) {
      const refused = await send(proxy.base, BUDGETED, request);
      expect(refused.status).toBe(429);
      expect(refused.text).toContain("This API key's dollar budget is used up");
      // Until midnight UTC.
      const retryAfter = Number(refused.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThan(0);
      expect(retryAfter).toBeLessThanOrEqual(86_400);
    }
    expect(JSON.parse((await send(proxy.base, BUDGETED, claude())).text)).toMatchObject({
      type: 'error',
      error: { type: 'rate_limit_error' },
    });
  });

  it("a warmup of a model is a model request the upstream bills: its cost is counted in usage and the key's budget", async () => {
    const warmup = () =>
      fetch(`${proxy.base}/internal/warmup`, {
        method: 'POST',
        headers: { authorization: `Bearer ${WARM}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'claude-3-5-haiku-20241022' }),
      });
    expect((await warmup()).status).toBe(200);
    const [row] = await usageBy(proxy.base, 'key', '&key=warm');
    expect(row).toMatchObject({ group: 'warm', requests: 1, input_tokens: 3100 });
    expect(row?.cost_usd).toBeCloseTo(COST.anthropic, 9);
    expect((await warmup()).status).toBe(200);
    const refused = await warmup();
    expect(refused.status).toBe(429);
    expect(await refused.text()).toContain("This API key's dollar budget is used up");
  });
});

describe('dollar budgets shared by two replicas (containers, Redis backend)', () => {
  let redis: RedisContainer;
  let replicas: ProxyContainer[];

  beforeAll(async () => {
    redis = await startRedisContainer();
    const env = {
      PROXY_API_KEY: OPERATOR,
      BUDGETED_KEY: BUDGETED,
      WARM_KEY: WARM,
      PROXY_STATE_BACKEND: 'redis',
      PROXY_REDIS_URL: redis.urlFromContainer,
    };
    const config = proxyConfig(upstream.port, 0.005);
    replicas = await startProxyContainers([0, 1].map(() => ({ config, env })));
  });
  afterAll(async () => {
    await stopAll([...((replicas as ProxyContainer[] | undefined) ?? []), redis]);
  });

  /** The dollars the budgeted key has spent this period, as the console's Keys page reads them. */
  const budgetUsed = async (base: string) => {
    const res = await fetch(`${base}/internal/console/keys`, { headers: { authorization: `Bearer ${OPERATOR}` } });
    const { keys } = (await res.json()) as { keys: { name: string; budget_usd: { used: number } | null }[] };
    return keys.find((k) => k.name === 'budgeted')?.budget_usd?.used;
  };

  it('counts the cost of answers from either replica against one budget, refused on both', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      statuses.push((await send((replicas[i % 2] as ProxyContainer).base, BUDGETED, claude(i === 2))).status);
      // A replica settles an answer's cost in Redis before the answer's end goes out: the shared budget, read at
      // once from the other replica, shows it (a replica's first request included: it listens once connected).
      expect(await budgetUsed((replicas[(i + 1) % 2] as ProxyContainer).base)).toBeCloseTo((i + 1) * COST.anthropic, 9);
    }
    expect(statuses).toEqual([200, 200, 200]);
    for (const replica of replicas) {
      const refused = await send(replica.base, BUDGETED, chat('gpt-4o-mini'));
      expect(refused.status).toBe(429);
      expect(refused.text).toContain('dollar budget');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    }
    // The console's live page, read from one replica, shows both replicas' requests.
    await expect
      .poll(
        async () => {
          const res = await fetch(`${(replicas[0] as ProxyContainer).base}/internal/console/live`, {
            headers: { authorization: `Bearer ${OPERATOR}` },
          });
          const live = (await res.json()) as { replicas: number; recent: { key: string }[] };
          return [live.replicas, live.recent.filter((r) => r.key === 'budgeted').length];
        },
        { timeout: 5_000 },
      )
      .toEqual([2, 5]);
    // The usage both replicas wrote to Redis, read from either, priced as each was recorded.
    await expect
      .poll(async () => (await usageBy((replicas[1] as ProxyContainer).base, 'key', '&key=budgeted'))[0]?.cost_usd, {
        timeout: 5_000,
      })
      .toBeCloseTo(3 * COST.anthropic, 9);
    // The console's Spend page, read from the other replica, sums both replicas' answers from Redis's spend sums.
    const spend = await fetch(`${(replicas[0] as ProxyContainer).base}/internal/console/spend?by=key&bucket=day`, {
      headers: { authorization: `Bearer ${OPERATOR}` },
    });
    const { totals } = (await spend.json()) as { totals: { group: string; cost_usd: number | null }[] };
    expect(totals.find((t) => t.group === 'budgeted')?.cost_usd).toBeCloseTo(3 * COST.anthropic, 9);
  });
});
