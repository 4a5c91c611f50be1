/**
 * What requests cost, through the built image: an upstream that reports fixed token counts (cache reads and
 * writes included) in each family's JSON answers and streams, priced against figures worked out by hand from
 * the price table's published prices and a proxy.prices override; a model without a price; dollar budgets
 * refusing at the right request, in one process's memory and shared by two replicas on Redis.
 */
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOST_FROM_CONTAINER, startProxyContainer, type ProxyContainer } from '../support/proxy-container.ts';
import { startRedisContainer, type RedisContainer } from '../support/redis-container.ts';

const run = promisify(execFile);
const OPERATOR = 'operator-cost-key-0123456789';
const BUDGETED = 'budgeted-cost-key-0123456789';

/*
 * The token counts each family's answers report, and their cost worked out by hand (USD per million tokens):
 * - gpt-4o-mini ($0.15 in, $0.075 cached, $0.60 out): 1000 in of which 400 cached, 200 out:
 *   600 × 0.15 + 400 × 0.075 + 200 × 0.60 = 90 + 30 + 120 = 240 millionths;
 * - my-llama-8b (proxy.prices: $0.20 in, cache reads at the input price, $0.60 out), the same tokens:
 *   1000 × 0.20 + 200 × 0.60 = 320 millionths;
 * - claude-3-5-haiku-20241022 ($0.80 in, $1 cache write, $0.08 cache read, $4 out): input_tokens 100 (Anthropic's
 *   leave out the cache), 1000 written to the cache, 2000 read from it, 300 out:
 *   100 × 0.80 + 1000 × 1 + 2000 × 0.08 + 300 × 4 = 80 + 1000 + 160 + 1200 = 2440 millionths;
 * - gemini-2.5-flash ($0.30 in, $0.03 cached, $2.50 out): 1000 in of which 500 cached, 100 out and 50 thinking:
 *   500 × 0.30 + 500 × 0.03 + 150 × 2.50 = 150 + 15 + 375 = 540 millionths.
 */
const COST = { openai: 0.00024, llama: 0.00032, anthropic: 0.00244, gemini: 0.00054 };

const OPENAI_USAGE = { prompt_tokens: 1000, completion_tokens: 200, prompt_tokens_details: { cached_tokens: 400 } };
const ANTHROPIC_USAGE = {
  input_tokens: 100,
  cache_creation_input_tokens: 1000,
  cache_read_input_tokens: 2000,
  output_tokens: 300,
};
const GEMINI_USAGE = {
  promptTokenCount: 1000,
  cachedContentTokenCount: 500,
  candidatesTokenCount: 100,
  thoughtsTokenCount: 50,
};

const sse = (events: unknown[], named = false): string =>
  events
    .map((e) => `${named ? `event: ${(e as { type: string }).type}\n` : ''}data: ${JSON.stringify(e)}\n\n`)
    .join('');

/** Each family's answer, whole or streamed, with the usage above. */
function answer(url: string, body: { model?: string; stream?: boolean }): { type: string; text: string } {
  if (url.startsWith('/openai/')) {
    const base = { id: 'c1', object: 'chat.completion', created: 1, model: body.model };
    if (!body.stream) {
      const choice = { index: 0, message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' };
      return { type: 'application/json', text: JSON.stringify({ ...base, choices: [choice], usage: OPENAI_USAGE }) };
    }
    const chunk = { ...base, object: 'chat.completion.chunk' };
    const events = [
      { ...chunk, choices: [{ index: 0, delta: { role: 'assistant', content: 'Hello' }, finish_reason: null }] },
      { ...chunk, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
      { ...chunk, choices: [], usage: OPENAI_USAGE },
    ];
    return { type: 'text/event-stream', text: `${sse(events)}data: [DONE]\n\n` };
  }
  if (url.startsWith('/anthropic/')) {
    const message = { id: 'm1', type: 'message', role: 'assistant', model: body.model, stop_sequence: null };
    if (!body.stream) {
      const whole = { ...message, content: [{ type: 'text', text: 'Hello' }], stop_reason: 'end_turn' };
      return { type: 'application/json', text: JSON.stringify({ ...whole, usage: ANTHROPIC_USAGE }) };
    }
    const start = { ...message, content: [], stop_reason: null, usage: { ...ANTHROPIC_USAGE, output_tokens: 1 } };
    const events = [
      { type: 'message_start', message: start },
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 300 } },
      { type: 'message_stop' },
    ];
    return { type: 'text/event-stream', text: sse(events, true) };
  }
  const candidate = (finishReason?: string) => ({
    content: { role: 'model', parts: [{ text: 'Hello' }] },
    ...(finishReason && { finishReason }),
  });
  if (!url.includes(':streamGenerateContent')) {
    return {
      type: 'application/json',
      text: JSON.stringify({ candidates: [candidate('STOP')], usageMetadata: GEMINI_USAGE }),
    };
  }
  const first = { candidates: [candidate()], usageMetadata: { promptTokenCount: 1000, candidatesTokenCount: 1 } };
  const last = { candidates: [candidate('STOP')], usageMetadata: GEMINI_USAGE };
  return {
    type: 'text/event-stream',
    text: `data: ${JSON.stringify(first)}\r\n\r\ndata: ${JSON.stringify(last)}\r\n\r\n`,
  };
}

async function startUpstream(): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    req.on('end', () => {
      const { type, text } = answer(req.url ?? '', JSON.parse(raw || '{}') as { model?: string; stream?: boolean });
      res.writeHead(200, { 'content-type': type }).end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

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
      prices: [{ model: 'my-llama-*', input_per_mtok: 0.2, output_per_mtok: 0.6 }],
      keys: [{ name: 'budgeted', key_env: 'BUDGETED_KEY', budget_usd: budgetUsd, budget_period: 'day' }],
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

let upstream: { server: Server; port: number };

beforeAll(async () => {
  upstream = await startUpstream();
});
afterAll(async () => {
  await new Promise((resolve) => upstream.server.close(resolve));
});

describe('cost of each family, whole answers and streams (container, memory backend)', () => {
  let proxy: ProxyContainer;

  beforeAll(async () => {
    proxy = await startProxyContainer(proxyConfig(upstream.port, 0.005), {
      PROXY_API_KEY: OPERATOR,
      BUDGETED_KEY: BUDGETED,
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
});

describe('dollar budgets shared by two replicas (containers, Redis backend)', () => {
  let redis: RedisContainer;
  let replicas: ProxyContainer[];

  beforeAll(async () => {
    redis = await startRedisContainer();
    const env = {
      PROXY_API_KEY: OPERATOR,
      BUDGETED_KEY: BUDGETED,
      PROXY_STATE_BACKEND: 'redis',
      PROXY_REDIS_URL: redis.urlFromContainer,
    };
    replicas = await Promise.all([0, 1].map(() => startProxyContainer(proxyConfig(upstream.port, 0.005), env)));
  });
  afterAll(async () => {
    await Promise.all((replicas as ProxyContainer[] | undefined)?.map((r) => r.stop()) ?? []);
    await (redis as RedisContainer | undefined)?.stop();
  });

  it('counts the cost of answers from either replica against one budget, refused on both', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      statuses.push((await send((replicas[i % 2] as ProxyContainer).base, BUDGETED, claude(i === 2))).status);
      // A replica counts an answer's cost in Redis once it has gone out: give that round trip time.
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(statuses).toEqual([200, 200, 200]);
    for (const replica of replicas) {
      const refused = await send(replica.base, BUDGETED, chat('gpt-4o-mini'));
      expect(refused.status).toBe(429);
      expect(refused.text).toContain('dollar budget');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    }
    // The usage both replicas wrote to Redis, read from either, priced as each was recorded.
    await expect
      .poll(async () => (await usageBy((replicas[1] as ProxyContainer).base, 'key', '&key=budgeted'))[0]?.cost_usd, {
        timeout: 5_000,
      })
      .toBeCloseTo(3 * COST.anthropic, 9);
  });
});
