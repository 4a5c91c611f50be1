/**
 * A fifth protocol is one spec (what would be its folder) plus one line in the
 * record: "plain", a made-up wire with `{model, prompt}` requests and
 * `{output}` answers, a `x-plain-key` credential and its own error body. Its
 * requests pass through to a plain upstream and are translated to an OpenAI
 * one; an OpenAI client reaches a plain upstream through translation.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadProxyConfig } from '../../../../src/proxy/config/index.ts';
import { createLogger } from '../../../../src/log.ts';
import { createProxyApp, type ProxyApp } from '../../../../src/proxy/app.ts';
import type { Operation, ProtocolSpec } from '../../../../src/proxy/protocols/protocol.ts';
import { PROTOCOLS, type Protocol, type ProtocolRecord } from '../../../../src/proxy/protocols/registry.ts';
import type {
  Adapter,
  Conversation,
  JsonObject,
  ModelResponse,
  StreamEvent,
} from '../../../../src/proxy/translate/model.ts';

const KEY = 'proxy-key';

/** The plain wire's adapter: one user prompt in, one text out. */
const plainAdapter: Adapter = {
  decodeRequest: (body, ctx): Conversation => ({
    model: typeof body['model'] === 'string' ? body['model'] : (ctx.model ?? ''),
    system: undefined,
    messages: [{ role: 'user', parts: [{ type: 'text', text: String(body['prompt']) }] }],
    stream: false,
  }),
  encodeResponse: (res: ModelResponse): JsonObject => ({
    output: res.parts.map((p) => (p.type === 'text' ? p.text : '')).join(''),
  }),
  streamEncoder: () => ({ encode: (e: StreamEvent) => (e.type === 'text' ? e.text : ''), end: () => '' }),
  encodeRequest: (conv: Conversation): JsonObject => ({
    model: conv.model,
    prompt: conv.messages.flatMap((m) => m.parts.map((p) => (p.type === 'text' ? p.text : ''))).join('\n'),
  }),
  decodeResponse: (body: JsonObject): ModelResponse => ({
    id: 'plain-1',
    model: 'plain',
    parts: [{ type: 'text', text: String(body['output']) }],
    stopReason: 'end',
    usage: { input: 1, output: 1 },
  }),
  streamDecoder: () => ({ push: () => [], end: () => [] }),
  finishReason: () => 'done',
};

const generate: Operation = { name: 'generate', upstreamPath: () => '/api/generate', client: plainAdapter };

const plain: ProtocolSpec = {
  sdkHeaders: [],
  routes: [{ path: '/plain/generate', operation: generate }],
  family: { paths: /^\/plain\// },
  credentials: {
    header: 'x-plain-key',
    authorize(headers, apiKey) {
      if (apiKey !== undefined) headers['x-plain-key'] = apiKey;
    },
  },
  upstream: {
    generate: () => ({ path: '/api/generate' }),
    models: { path: '/api/models' },
    warmup: (model) => ({ path: '/api/generate', body: { model, prompt: '' } }),
  },
  adapter: plainAdapter,
  usage: () => undefined,
  finishReasons: () => [],
  errors: {
    type: (status) => (status >= 500 ? 'broken' : 'refused'),
    body: (error) => ({ failure: { kind: error.status >= 500 ? 'broken' : 'refused', text: error.message } }),
  },
  models: {
    listPaths: ['/plain/models'],
    infoPaths: [],
    parse: () => [],
    entry: (e) => e.id,
    list: (entries) => ({ names: entries.map((e) => e.id) }),
  },
};

/** The record with the fifth protocol: the one line a real one would add to registry.ts. */
const RECORD = { ...PROTOCOLS, plain } as ProtocolRecord;

interface Received {
  path: string;
  headers: IncomingMessage['headers'];
  body: JsonObject;
}

let upstream: Server;
let received: Received[];
let app: ProxyApp;
let proxy: Server;
let base: string;

async function listen(server: Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  received = [];
  // One upstream serving both wires: plain at /api/generate, OpenAI chat completions at /v1/chat/completions.
  upstream = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString()));
    req.on('end', () => {
      const body = (text === '' ? {} : JSON.parse(text)) as JsonObject;
      received.push({ path: req.url ?? '', headers: req.headers, body });
      res.setHeader('content-type', 'application/json');
      if (req.url === '/api/generate') {
        res.end(JSON.stringify({ output: `plain says: ${String(body['prompt'])}` }));
      } else {
        res.end(
          JSON.stringify({
            id: 'chatcmpl-1',
            object: 'chat.completion',
            created: 1,
            model: body['model'],
            choices: [{ index: 0, message: { role: 'assistant', content: 'openai says hi' }, finish_reason: 'stop' }],
            usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
          }),
        );
      }
    });
  });
  const origin = await listen(upstream);
  const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-fifth-'));
  const file = path.join(dir, 'proxy.json');
  writeFileSync(
    file,
    JSON.stringify({
      proxy: {
        auth_mode: 'strict',
        api_key: KEY,
        upstreams: [
          { name: 'openai-up', protocol: 'openai', base_url: `${origin}/v1`, api_key: 'up-openai', models: ['gpt-*'] },
        ],
      },
    }),
  );
  const config = loadProxyConfig({ argv: ['--config', file], env: {}, cwd: dir });
  // The configuration schema knows the built-in protocols only: the plain upstream is added as loaded.
  config.upstreams.push({
    name: 'plain-up',
    protocol: 'plain' as Protocol,
    baseUrl: origin,
    apiKey: 'up-plain',
    models: ['plain-*', 'plain-small'],
    headers: {},
    timeoutMs: 5_000,
    responsesApi: true,
  });
  app = createProxyApp(config, { env: {}, log: createLogger('silent'), protocols: RECORD });
  const handle = app.app.callback();
  proxy = createServer((req, res) => void handle(req, res));
  base = await listen(proxy);
});

afterAll(async () => {
  proxy.closeAllConnections();
  await new Promise((resolve) => proxy.close(resolve));
  await app.close();
  upstream.closeAllConnections();
  await new Promise((resolve) => upstream.close(resolve));
});

const post = (route: string, headers: Record<string, string>, body: unknown) =>
  fetch(base + route, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

describe('a fifth protocol registered in the record', () => {
  it('passes a plain request through to a plain upstream, with the plain credential swapped', async () => {
    const before = received.length;
    const res = await post('/plain/generate', { 'x-plain-key': KEY }, { model: 'plain-small', prompt: 'hello' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ output: 'plain says: hello' });
    const sent = received[before];
    expect(sent?.path).toBe('/api/generate');
    expect(sent?.headers['x-plain-key']).toBe('up-plain');
    expect(sent?.body).toEqual({ model: 'plain-small', prompt: 'hello' });
  });

  it('translates a plain request for an OpenAI upstream', async () => {
    const before = received.length;
    const res = await post('/plain/generate', { 'x-plain-key': KEY }, { model: 'gpt-x', prompt: 'hello' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ output: 'openai says hi' });
    const sent = received[before];
    expect(sent?.path).toBe('/v1/chat/completions');
    expect(sent?.headers['authorization']).toBe('Bearer up-openai');
    expect(sent?.headers['x-plain-key']).toBeUndefined();
    expect(sent?.body).toMatchObject({ model: 'gpt-x', messages: [{ role: 'user', content: 'hello' }] });
  });

  it("translates an OpenAI client's request for a plain upstream", async () => {
    const before = received.length;
    const res = await post(
      '/v1/chat/completions',
      { authorization: `Bearer ${KEY}` },
      {
        model: 'plain-small',
        messages: [{ role: 'user', content: 'hi there' }],
      },
    );
    expect(res.status).toBe(200);
    const body = (await res.json()) as { choices: { message: { content: string } }[] };
    expect(body.choices[0]?.message.content).toBe('plain says: hi there');
    const sent = received[before];
    expect(sent?.path).toBe('/api/generate');
    expect(sent?.headers['x-plain-key']).toBe('up-plain');
    expect(sent?.headers['authorization']).toBeUndefined();
  });

  it('answers its own errors in its own body shape, a missing key included', async () => {
    const unknown = await post('/plain/generate', { 'x-plain-key': KEY }, { model: 'nobody-serves-this', prompt: 'x' });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({
      failure: { kind: 'refused', text: 'No upstream serves model "nobody-serves-this"' },
    });
    const anonymous = await post('/plain/generate', {}, { model: 'plain-small', prompt: 'x' });
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toEqual({ failure: { kind: 'refused', text: 'Invalid or missing API key' } });
  });

  it('lists the routable models in its own shape (the literal names of `models`)', async () => {
    const res = await fetch(`${base}/plain/models`, { headers: { 'x-plain-key': KEY } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ names: ['plain-small'] });
  });
});
