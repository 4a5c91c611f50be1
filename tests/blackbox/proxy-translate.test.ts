/**
 * Translation in the built image: the official SDKs, each against a scripted
 * upstream of every other protocol (plain, streamed, two-turn tool calls),
 * and the error paths a client sees.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOST_FROM_CONTAINER, startProxyContainer, type ProxyContainer } from '../support/proxy-container.ts';
import { CHAT_ONLY_MODEL, describeSdkMatrix } from '../support/sdk-matrix.ts';
import { CHAT_ONLY_PREFIX, startScriptedUpstream, type ScriptedUpstream } from '../support/scripted-upstream.ts';
import { API_KEY, translationConfig } from '../support/translating-proxy.ts';

let upstream: ScriptedUpstream;
let proxy: ProxyContainer;

beforeAll(async () => {
  upstream = await startScriptedUpstream('0.0.0.0');
  proxy = await startProxyContainer(translationConfig(`http://${HOST_FROM_CONTAINER}:${upstream.port}`, true));
});
afterAll(async () => {
  await (proxy as ProxyContainer | undefined)?.stop();
  await (upstream as ScriptedUpstream | undefined)?.close();
});

describe('gatehouse proxy (container): translation', () => {
  describeSdkMatrix({ url: () => proxy.base, key: API_KEY, upstream: () => upstream });

  const post = (path: string, body: unknown) =>
    fetch(proxy.base + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': API_KEY },
      body: JSON.stringify(body),
    });

  it("answers an upstream 429 in the client family's shape with its message and retry-after", async () => {
    const res = await post('/v1/messages', {
      model: 'gpt-test',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'FAIL 429' }],
    });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('7');
    expect(await res.json()).toEqual({
      type: 'error',
      error: { type: 'rate_limit_error', message: 'scripted 429 from openai' },
    });
  });

  it("ends a stream whose upstream failed mid-way with the client protocol's error event", async () => {
    const res = await post('/v1/messages', {
      model: 'gemini-test',
      max_tokens: 10,
      stream: true,
      messages: [{ role: 'user', content: 'FAIL MIDSTREAM' }],
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text.trimEnd().split('\n\n').at(-1)).toBe(
      'event: error\ndata: {"type":"error","error":{"type":"api_error","message":"upstream broke mid-stream"}}',
    );
  });

  it("carries a chat client's freeform custom tool (Copilot CLI's apply_patch) to an Anthropic upstream", async () => {
    const before = upstream.requests.length;
    const grammar = { syntax: 'lark', definition: 'start: begin_patch hunk+ end_patch' };
    // The request's shape as Copilot CLI sends it: functions, then the freeform tool.
    const res = await fetch(`${proxy.base}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}` },
      body: JSON.stringify({
        model: 'claude-test',
        messages: [{ role: 'user', content: 'hi' }],
        tools: [
          { type: 'function', function: { name: 'bash', parameters: { type: 'object', properties: {} } } },
          {
            type: 'custom',
            custom: { name: 'apply_patch', description: 'Edit files.', format: { type: 'grammar', grammar } },
          },
        ],
      }),
    });
    expect(res.status, await res.clone().text()).toBe(200);
    const sent = upstream.requests.slice(before).find((r) => r.protocol === 'anthropic');
    expect((sent?.body.tools as unknown[] | undefined)?.[1]).toMatchObject({
      name: 'apply_patch',
      description: expect.stringContaining('lark grammar:\nstart: begin_patch hunk+ end_patch') as unknown,
      input_schema: { type: 'object', properties: { input: { type: 'string' } }, required: ['input'] },
    });
  });

  it('answers an unknown previous_response_id with 404 in the Responses shape', async () => {
    const res = await post('/v1/responses', { model: 'claude-test', input: 'hi', previous_response_id: 'resp_nope' });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({
      error: { code: 'previous_response_not_found', type: 'invalid_request_error' },
    });
  });

  const continued = 'continues a stored response (previous_response_id) on an upstream without the Responses API';
  it(`${continued}, reasoning effort included`, async () => {
    const client = new OpenAI({ baseURL: `${proxy.base}/v1`, apiKey: API_KEY, maxRetries: 0 });
    const before = upstream.requests.length;
    const r1 = await client.responses.create({
      model: CHAT_ONLY_MODEL,
      instructions: 'Answer briefly.',
      input: 'My name is Ada.',
      reasoning: { effort: 'high' },
    });
    const r2 = await client.responses.create({
      model: CHAT_ONLY_MODEL,
      previous_response_id: r1.id,
      input: 'What is my name?',
    });
    expect([r1.output_text, r2.output_text]).toEqual(['It is sunny in Paris.', 'It is sunny in Paris.']);
    expect(r2.previous_response_id).toBe(r1.id);
    const [turn1, turn2] = upstream.requests.slice(before);
    expect(turn1).toMatchObject({
      path: `${CHAT_ONLY_PREFIX}/v1/chat/completions`,
      body: { model: CHAT_ONLY_MODEL, reasoning_effort: 'high' },
    });
    expect(turn2?.path).toBe(`${CHAT_ONLY_PREFIX}/v1/chat/completions`);
    expect(turn2?.body.messages).toEqual([
      { role: 'system', content: 'Answer briefly.' },
      { role: 'user', content: 'My name is Ada.' },
      { role: 'assistant', content: 'It is sunny in Paris.' },
      { role: 'user', content: 'What is my name?' },
    ]);
  });

  it('never forwards the client key, and sends the upstream its own', async () => {
    await post('/v1/chat/completions', { model: 'claude-test', messages: [{ role: 'user', content: 'hi' }] });
    const last = upstream.requests.at(-1);
    expect(last?.headers['x-api-key']).toBe('up-anthropic');
    expect(JSON.stringify(last?.headers)).not.toContain(API_KEY);
  });
});

describe('gatehouse proxy (container): what translation remembers follows the configuration', () => {
  let small: ProxyContainer;
  beforeAll(async () => {
    const config = translationConfig(`http://${HOST_FROM_CONTAINER}:${upstream.port}`, true) as {
      proxy: Record<string, unknown>;
    };
    small = await startProxyContainer({
      proxy: { ...config.proxy, stores: { responses: { max_entries: 1, ttl: '10m' } } },
    });
  });
  afterAll(async () => {
    await small.stop();
  });

  const respond = async (input: string, extra: Record<string, unknown> = {}) =>
    fetch(`${small.base}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}` },
      body: JSON.stringify({ model: 'claude-test', input, ...extra }),
    });
  const idOf = async (res: Response) => ((await res.json()) as { id: string }).id;

  it('keeps at most proxy.stores.responses.max_entries answers for previous_response_id', async () => {
    const first = await idOf(await respond('one'));
    // A request offering a tool gets the scripted tool call: another response id.
    const tools = [
      {
        type: 'function',
        name: 'get_weather',
        parameters: { type: 'object', properties: { city: { type: 'string' } } },
      },
    ];
    const second = await idOf(await respond('two', { tools }));
    expect(second).not.toBe(first);
    expect((await respond('again', { previous_response_id: first })).status).toBe(404);
    expect((await respond('again', { previous_response_id: second })).status).toBe(200);
  });
});
