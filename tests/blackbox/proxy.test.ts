import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readForm } from '../../src/proxy/multipart.ts';
import { FakeUpstream } from '../support/fake-upstream.ts';
import {
  closedPort,
  HOST_FROM_CONTAINER,
  readUntil,
  startProxyContainer,
  type ProxyContainer,
} from '../support/proxy-container.ts';

const run = promisify(execFile);
const PROXY_KEY = 'proxy-key-for-the-blackbox-suite';
const KEYS = {
  openai: 'upstream-openai-secret',
  anthropic: 'upstream-anthropic-secret',
  gemini: 'upstream-gemini-secret',
};
const AUTH = { authorization: `Bearer ${PROXY_KEY}` };
const JSON_AUTH = { ...AUTH, 'content-type': 'application/json' };
const MAX_BODY = 1_000_000;
const TIMEOUT_MS = 1_500;

function bodyReader(res: Response): ReadableStreamDefaultReader<Uint8Array> {
  if (!res.body) throw new Error(`no body (status ${res.status})`);
  return res.body.getReader();
}

/** The shapes families.ts promises, per family. */
const SHAPES = {
  openai: (code: string) => ({ error: { message: expect.any(String), type: expect.any(String), param: null, code } }),
  anthropic: (type: string) => ({ type: 'error', error: { type, message: expect.any(String) } }),
  gemini: (code: number, status: string) => ({ error: { code, message: expect.any(String), status } }),
  other: () => ({ error: expect.any(String) }),
};

describe('gatehouse proxy (container): same-protocol forwarding', () => {
  let fake: FakeUpstream;
  let proxy: ProxyContainer;
  let base: string;

  beforeAll(async () => {
    fake = await FakeUpstream.start({ host: '0.0.0.0', slowMs: 4_000 });
    const at = (vendor: string, port = fake.port) => `http://${HOST_FROM_CONTAINER}:${port}/${vendor}`;
    const down = await closedPort();
    proxy = await startProxyContainer(
      {
        proxy: {
          allow_lan_access: true,
          max_body_bytes: MAX_BODY,
          // No fallback here: these suites check what one upstream's answer or failure becomes (fallback has its own).
          routing: { retries: 0 },
          upstreams: [
            // The first match is tried: the specific ones go first.
            {
              name: 'oa-down',
              protocol: 'openai',
              base_url: `http://${HOST_FROM_CONTAINER}:${down}/v1`,
              models: ['gpt-down*'],
            },
            {
              name: 'an-down',
              protocol: 'anthropic',
              base_url: `http://${HOST_FROM_CONTAINER}:${down}`,
              models: ['claude-down*'],
            },
            {
              name: 'ge-down',
              protocol: 'gemini',
              base_url: `http://${HOST_FROM_CONTAINER}:${down}`,
              models: ['gemini-down*'],
            },
            {
              name: 'oa-patient',
              protocol: 'openai',
              base_url: at('openai/v1'),
              api_key: KEYS.openai,
              models: ['gpt-hang*'],
            },
            {
              name: 'oa',
              protocol: 'openai',
              base_url: at('openai/v1'),
              api_key: KEYS.openai,
              models: ['gpt-*', 'dall-e-*', 'whisper-*'],
              timeout_ms: TIMEOUT_MS,
            },
            {
              name: 'an',
              protocol: 'anthropic',
              base_url: at('anthropic'),
              api_key_env: 'ANTHROPIC_UPSTREAM_KEY',
              models: ['claude-*'],
              timeout_ms: '1500ms',
            },
            {
              name: 'ge',
              protocol: 'gemini',
              base_url: at('gemini'),
              api_key: KEYS.gemini,
              models: ['gemini-*'],
              timeout_ms: TIMEOUT_MS,
              headers: { 'x-team': 'blackbox' },
            },
          ],
          model_aliases: { fast: 'gpt-fake-1', sonnet: 'claude-fake-1', flash: 'gemini-fake-1' },
        },
      },
      { PROXY_API_KEY: PROXY_KEY, ANTHROPIC_UPSTREAM_KEY: KEYS.anthropic },
    );
    base = proxy.base;
  });
  afterAll(async () => {
    await (proxy as ProxyContainer | undefined)?.stop();
    await (fake as FakeUpstream | undefined)?.close();
  });

  const post = (path: string, body: unknown, headers: Record<string, string> = JSON_AUTH) =>
    fetch(`${base}${path}`, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });

  /** The client's credentials never travel; the upstream's own do, in its style. */
  function expectCredentials(path: string, header: 'authorization' | 'x-api-key' | 'x-goog-api-key', value: string) {
    const seen = fake.last(path);
    for (const name of ['authorization', 'x-api-key', 'x-goog-api-key'] as const) {
      if (name === header) expect(seen.headers[name]).toBe(value);
      else expect(seen.headers[name]).toBeUndefined();
    }
    expect(JSON.stringify(seen.headers)).not.toContain(PROXY_KEY);
    expect(seen.query.has('key')).toBe(false);
    return seen;
  }

  describe('health and internal endpoints', () => {
    it('GET /healthz answers {"status":"ok"} without a key (auto + LAN = all_except_health)', async () => {
      const res = await fetch(`${base}/healthz`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ status: 'ok' });
    });

    it.each(['/v1/api/event_logging', '/v1/api/event_logging/batch'])(
      'POST %s answers 200 {} at once, whatever the body',
      async (path) => {
        const res = await post(path, 'not json at all {', { ...AUTH, 'content-type': 'application/json' });
        expect(res.status).toBe(200);
        expect(await res.json()).toEqual({});
        expect(proxy.logs()).not.toContain('not json at all');
      },
    );

    it('POST /v1/models/detect answers the routing of a model without calling anyone', async () => {
      const before = fake.requests.length;
      const res = await post('/v1/models/detect', { model: 'sonnet' });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({
        model: 'sonnet',
        mapped_model: 'claude-fake-1',
        upstream: 'an',
        protocol: 'anthropic',
        type: 'chat',
      });
      expect(fake.requests.length).toBe(before);
      const image = await post('/v1/models/detect', { model: 'dall-e-3' });
      expect(await image.json()).toMatchObject({ upstream: 'oa', protocol: 'openai', type: 'image' });
    });

    it('POST /v1/models/detect: 400 without a model, 404 for a model nobody serves ({"error"})', async () => {
      const missing = await post('/v1/models/detect', {});
      expect(missing.status).toBe(400);
      expect(await missing.json()).toEqual(SHAPES.other());
      const unknown = await post('/v1/models/detect', { model: 'nobody-serves-this' });
      expect(unknown.status).toBe(404);
      expect(await unknown.json()).toEqual(SHAPES.other());
    });

    it("POST /internal/warmup {model} sends one small request to that model's upstream", async () => {
      const res = await post('/internal/warmup', { model: 'fast' });
      expect(res.status).toBe(200);
      const body = await res.json();
      expect(body).toEqual({
        success: true,
        results: [{ upstream: 'oa', model: 'gpt-fake-1', status: 200, latency_ms: expect.any(Number) }],
      });
      const seen = expectCredentials('/openai/v1/chat/completions', 'authorization', `Bearer ${KEYS.openai}`);
      expect(JSON.parse(seen.body.toString())).toMatchObject({ model: 'gpt-fake-1', max_tokens: 1 });
    });

    it('POST /internal/warmup without a model reaches every upstream and reports the ones that are down', async () => {
      const res = await post('/internal/warmup', '', AUTH);
      expect(res.status).toBe(200);
      const body = (await res.json()) as {
        success: boolean;
        results: { upstream: string; status: number | null; error?: string }[];
      };
      expect(body.success).toBe(false);
      const byName = Object.fromEntries(body.results.map((r) => [r.upstream, r]));
      expect(Object.keys(byName).sort()).toEqual(['an', 'an-down', 'ge', 'ge-down', 'oa', 'oa-down', 'oa-patient']);
      expect(byName['oa']).toMatchObject({ status: 200 });
      expect(byName['an']).toMatchObject({ status: 200 });
      expect(byName['ge']).toMatchObject({ status: 200 });
      expect(byName['oa-down']).toMatchObject({ status: null, error: expect.stringContaining('unreachable') });
    });
  });

  describe('model lists', () => {
    it('GET /v1/models lists the routable models of every upstream plus the aliases (OpenAI shape)', async () => {
      const res = await fetch(`${base}/v1/models`, { headers: AUTH });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { object: string; data: { id: string; object: string; owned_by: string }[] };
      expect(body.object).toBe('list');
      const ids = body.data.map((m) => m.id);
      expect(ids).toEqual(
        expect.arrayContaining(['gpt-fake-1', 'claude-fake-1', 'gemini-fake-1', 'fast', 'sonnet', 'flash']),
      );
      expect(ids).not.toContain('unrouted-model');
      expect(body.data.find((m) => m.id === 'claude-fake-1')).toMatchObject({ object: 'model', owned_by: 'an' });
    });

    it('GET /v1/models/claude lists the same models in the Anthropic shape', async () => {
      const res = await fetch(`${base}/v1/models/claude`, { headers: AUTH });
      const body = (await res.json()) as {
        data: { type: string; id: string; display_name: string }[];
        has_more: boolean;
      };
      expect(body.has_more).toBe(false);
      expect(body.data).toContainEqual({
        type: 'model',
        id: 'claude-fake-1',
        display_name: 'Claude Fake 1',
        created_at: expect.any(String),
      });
      expect(body.data.map((m) => m.id)).toContain('sonnet');
    });

    it('GET /v1beta/models and /v1beta/models/:model answer in the Gemini shape', async () => {
      const list = (await (await fetch(`${base}/v1beta/models`, { headers: AUTH })).json()) as {
        models: { name: string }[];
      };
      expect(list.models.map((m) => m.name)).toEqual(
        expect.arrayContaining(['models/gemini-fake-1', 'models/gpt-fake-1', 'models/flash']),
      );
      const one = await fetch(`${base}/v1beta/models/gemini-fake-1`, { headers: AUTH });
      expect(one.status).toBe(200);
      expect(await one.json()).toMatchObject({
        name: 'models/gemini-fake-1',
        displayName: 'Gemini Fake 1',
        supportedGenerationMethods: expect.arrayContaining(['generateContent']),
      });
      const missing = await fetch(`${base}/v1beta/models/no-such-model`, { headers: AUTH });
      expect(missing.status).toBe(404);
      expect(await missing.json()).toEqual(SHAPES.gemini(404, 'NOT_FOUND'));
    });

    it('GET /v1/models[/:id] answers in the shape of the SDK that asks (by its headers)', async () => {
      const gemini = await (await fetch(`${base}/v1/models`, { headers: { 'x-goog-api-key': PROXY_KEY } })).json();
      expect(gemini).toEqual({ models: expect.arrayContaining([expect.objectContaining({ name: 'models/flash' })]) });
      const anthropic = await (
        await fetch(`${base}/v1/models`, { headers: { 'x-api-key': PROXY_KEY, 'anthropic-version': '2023-06-01' } })
      ).json();
      expect(anthropic).toMatchObject({
        has_more: false,
        data: expect.arrayContaining([expect.objectContaining({ type: 'model', id: 'sonnet' })]),
      });
      const one = await fetch(`${base}/v1/models/gpt-fake-1`, { headers: AUTH });
      expect(await one.json()).toEqual({
        id: 'gpt-fake-1',
        object: 'model',
        created: expect.any(Number),
        owned_by: 'oa',
      });
      const none = await fetch(`${base}/v1/models/no-such-model`, {
        headers: { 'x-api-key': PROXY_KEY, 'anthropic-version': '2023-06-01' },
      });
      expect(none.status).toBe(404);
      expect(await none.json()).toEqual(SHAPES.anthropic('not_found_error'));
    });
  });

  describe('OpenAI endpoints', () => {
    it("POST /v1/chat/completions forwards the bytes as they are, with the upstream key instead of the client's", async () => {
      const body = '{"model": "gpt-4o",   "messages": [{"role": "user", "content": "hi"}], "temperature": 0.50}';
      const res = await post('/v1/chat/completions', body, {
        ...JSON_AUTH,
        'x-api-key': PROXY_KEY,
        'x-custom': 'kept',
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-fake-upstream')).toBe('1');
      expect(await res.json()).toMatchObject({
        object: 'chat.completion',
        model: 'gpt-4o',
        choices: [{ message: { content: 'Hello from the fake upstream' } }],
      });
      const seen = expectCredentials('/openai/v1/chat/completions', 'authorization', `Bearer ${KEYS.openai}`);
      expect(seen.body.toString()).toBe(body);
      expect(seen.headers['x-custom']).toBe('kept');
    });

    it('rewrites the model only when it is an alias', async () => {
      const res = await post('/v1/chat/completions', { model: 'fast', messages: [{ role: 'user', content: 'hi' }] });
      expect(res.status).toBe(200);
      expect(JSON.parse(fake.last('/openai/v1/chat/completions').body.toString())).toEqual({
        model: 'gpt-fake-1',
        messages: [{ role: 'user', content: 'hi' }],
      });
    });

    it.each([
      ['/v1/completions', { model: 'gpt-3.5-turbo-instruct', prompt: 'Say hi' }, 'text_completion'],
      ['/v1/responses', { model: 'gpt-4.1', input: 'Say hi' }, 'response'],
    ])('POST %s is forwarded to the same path upstream', async (path, body, object) => {
      const res = await post(path, body);
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ object });
      expect(expectCredentials(`/openai${path}`, 'authorization', `Bearer ${KEYS.openai}`).body.toString()).toBe(
        JSON.stringify(body),
      );
    });

    it('POST /v1/images/generations is forwarded', async () => {
      const res = await post('/v1/images/generations', { model: 'dall-e-3', prompt: 'a lighthouse' });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ data: [{ b64_json: expect.any(String) }] });
      expectCredentials('/openai/v1/images/generations', 'authorization', `Bearer ${KEYS.openai}`);
    });

    /** The form the upstream got, parsed. */
    const received = (path: string): Promise<FormData> => {
      const { body, headers } = fake.last(path);
      return readForm(body, String(headers['content-type']));
    };

    it('POST /v1/images/edits sends the parsed form on, the model field aliased', async () => {
      const image = Buffer.alloc(300_000, 7);
      const form = new FormData();
      form.append('image', new Blob([image], { type: 'image/png' }), 'in.png');
      form.append('prompt', 'add a hat');
      form.append('model', 'fast');
      const res = await fetch(`${base}/v1/images/edits`, { method: 'POST', headers: AUTH, body: form });
      expect(res.status).toBe(200);
      expectCredentials('/openai/v1/images/edits', 'authorization', `Bearer ${KEYS.openai}`);
      const seen = await received('/openai/v1/images/edits');
      expect([...seen.keys()]).toEqual(['image', 'prompt', 'model']);
      expect(seen.getAll('model')).toEqual(['gpt-fake-1']);
      expect(seen.get('prompt')).toBe('add a hat');
      expect(Buffer.from(await (seen.get('image') as File).arrayBuffer()).equals(image)).toBe(true);
    });

    it('POST /v1/audio/transcriptions sends the parsed form on unchanged', async () => {
      const audio = Buffer.alloc(120_000, 3);
      const form = new FormData();
      form.append('file', new Blob([audio], { type: 'audio/wav' }), 'a.wav');
      form.append('model', 'whisper-1');
      const res = await fetch(`${base}/v1/audio/transcriptions`, { method: 'POST', headers: AUTH, body: form });
      expect(res.status).toBe(200);
      const length = fake.last('/openai/v1/audio/transcriptions').body.length;
      expect(await res.json()).toEqual({ text: `transcribed by whisper-1, ${length} bytes in` });
      const seen = await received('/openai/v1/audio/transcriptions');
      expect(seen.getAll('model')).toEqual(['whisper-1']);
      expect((seen.get('file') as File).name).toBe('a.wav');
      expect(Buffer.from(await (seen.get('file') as File).arrayBuffer()).equals(audio)).toBe(true);
    });

    it('passes an upstream error through as the upstream wrote it', async () => {
      const res = await post('/v1/chat/completions', { model: 'gpt-fail', messages: [] });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({
        error: {
          message: 'fake: gpt-fail refused',
          type: 'invalid_request_error',
          param: 'model',
          code: 'fake_refusal',
        },
      });
    });
  });

  describe('Anthropic endpoints', () => {
    it('POST /v1/messages: x-api-key injected, anthropic-version and -beta passed through', async () => {
      const body = { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };
      const res = await post('/v1/messages', body, {
        'content-type': 'application/json',
        'x-api-key': PROXY_KEY,
        'anthropic-version': '2023-06-01',
        'anthropic-beta': 'tools-2024-04-04',
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({
        type: 'message',
        content: [{ type: 'text', text: 'Hello from the fake upstream' }],
      });
      const seen = expectCredentials('/anthropic/v1/messages', 'x-api-key', KEYS.anthropic);
      expect(seen.headers['anthropic-version']).toBe('2023-06-01');
      expect(seen.headers['anthropic-beta']).toBe('tools-2024-04-04');
      expect(JSON.parse(seen.body.toString())).toEqual(body);
    });

    it('POST /v1/messages/count_tokens is forwarded to an Anthropic upstream', async () => {
      const res = await post('/v1/messages/count_tokens', {
        model: 'sonnet',
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ input_tokens: 42 });
      expect(
        (
          JSON.parse(
            expectCredentials('/anthropic/v1/messages/count_tokens', 'x-api-key', KEYS.anthropic).body.toString(),
          ) as { model: string }
        ).model,
      ).toBe('claude-fake-1');
    });

    it('POST /v1/messages/count_tokens estimates locally when no Anthropic upstream serves the model (never 404)', async () => {
      const before = fake.requests.length;
      const text = 'The quick brown fox jumps over the lazy dog. '.repeat(20);
      for (const model of ['gpt-4o', 'nobody-serves-this']) {
        const res = await post('/v1/messages/count_tokens', { model, messages: [{ role: 'user', content: text }] });
        expect(res.status).toBe(200);
        const { input_tokens } = (await res.json()) as { input_tokens: number };
        expect(input_tokens).toBeGreaterThan(text.length / 6);
        expect(input_tokens).toBeLessThan(text.length / 2);
      }
      expect(fake.requests.length).toBe(before);
    });
  });

  describe('Gemini endpoints', () => {
    it('POST /v1beta/models/:model:generateContent: the `key` parameter stripped, x-goog-api-key injected', async () => {
      const body = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] };
      const res = await post(`/v1beta/models/flash:generateContent?key=${PROXY_KEY}`, body, {
        'content-type': 'application/json',
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({
        candidates: [{ content: { parts: [{ text: 'Hello from the fake upstream' }] } }],
      });
      const seen = expectCredentials(
        '/gemini/v1beta/models/gemini-fake-1:generateContent',
        'x-goog-api-key',
        KEYS.gemini,
      );
      expect(seen.headers['x-team']).toBe('blackbox');
      expect(JSON.parse(seen.body.toString())).toEqual(body);
    });

    it.each(['/v1beta/models/gemini-2.5-pro:countTokens', '/v1beta/models/gemini-2.5-pro/countTokens'])(
      'POST %s is forwarded as :countTokens',
      async (path) => {
        const res = await post(
          path,
          { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] },
          { 'content-type': 'application/json', 'x-goog-api-key': PROXY_KEY },
        );
        expect(res.status).toBe(200);
        expect(await res.json()).toEqual({ totalTokens: 42 });
        expectCredentials('/gemini/v1beta/models/gemini-2.5-pro:countTokens', 'x-goog-api-key', KEYS.gemini);
      },
    );

    it('countTokens for a model with no Gemini upstream is a local estimate', async () => {
      const res = await post('/v1beta/models/claude-x:countTokens', {
        contents: [{ role: 'user', parts: [{ text: 'hello there, how are you today?' }] }],
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ totalTokens: expect.any(Number) });
    });

    it("the same methods below /v1 (@google/genai's default API version) go to the upstream's v1beta", async () => {
      const res = await post(
        '/v1/models/gemini-2.5-pro:generateContent',
        { contents: [] },
        { 'content-type': 'application/json', 'x-goog-api-key': PROXY_KEY },
      );
      expect(res.status).toBe(200);
      expectCredentials('/gemini/v1beta/models/gemini-2.5-pro:generateContent', 'x-goog-api-key', KEYS.gemini);
      const unknown = await post('/v1/models/llama-unknown:generateContent', { contents: [] });
      expect(unknown.status).toBe(404);
      expect(await unknown.json()).toEqual(SHAPES.gemini(404, 'NOT_FOUND'));
    });

    it('a path without a known method is 404 in the Gemini shape', async () => {
      const res = await post('/v1beta/models/gemini-2.5-pro:fooBar', {});
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual(SHAPES.gemini(404, 'NOT_FOUND'));
    });
  });

  describe('streaming', () => {
    /** Reads the first event, checks the upstream is still holding the rest, then lets it finish. */
    async function gated(path: string, body: unknown, first: RegExp, last: RegExp): Promise<string> {
      const res = await post(path, body);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/event-stream');
      const reader = bodyReader(res);
      const head = await readUntil(reader, (t) => first.test(t));
      // The upstream has sent one event and waits for release(): what arrived was not buffered.
      expect(last.test(head)).toBe(false);
      fake.release();
      return readUntil(reader, (t) => last.test(t), head);
    }

    it('OpenAI chat completion events arrive one by one ([DONE] last)', async () => {
      const text = await gated(
        '/v1/chat/completions',
        { model: 'gpt-gated', stream: true, messages: [] },
        /"role":"assistant"/,
        /\[DONE\]/,
      );
      expect(text.match(/^data: /gm)?.length).toBe(8);
    });

    it('Responses API events arrive one by one', async () => {
      await gated(
        '/v1/responses',
        { model: 'gpt-gated', stream: true, input: 'hi' },
        /response\.created/,
        /response\.completed/,
      );
    });

    it('Anthropic message events arrive one by one', async () => {
      const text = await gated(
        '/v1/messages',
        { model: 'claude-gated', stream: true, max_tokens: 5, messages: [] },
        /message_start/,
        /message_stop/,
      );
      expect(text).toContain('content_block_delta');
    });

    it('Gemini streamGenerateContent?alt=sse events arrive one by one', async () => {
      const text = await gated(
        '/v1beta/models/gemini-gated:streamGenerateContent?alt=sse',
        { contents: [] },
        /"text":"Hello"/,
        /"finishReason":"STOP"/,
      );
      expect(text.match(/^data: /gm)?.length).toBe(5);
      expect(fake.last(':streamGenerateContent').query.get('alt')).toBe('sse');
    });

    it('a client that disconnects mid-stream aborts the upstream request', async () => {
      const controller = new AbortController();
      const res = await fetch(`${base}/v1/chat/completions`, {
        method: 'POST',
        headers: JSON_AUTH,
        body: JSON.stringify({ model: 'gpt-hang', stream: true, messages: [] }),
        signal: controller.signal,
      });
      await readUntil(bodyReader(res), (t) => t.includes('data: '));
      expect(fake.last('/openai/v1/chat/completions').aborted).toBe(false);
      controller.abort();
      const aborted = await fake.waitForAbort('/openai/v1/chat/completions', 5_000);
      expect((JSON.parse(aborted.body.toString()) as { model: string }).model).toBe('gpt-hang');
    });

    it('a client that disconnects while the upstream has not answered yet aborts it too', async () => {
      const controller = new AbortController();
      const pending = fetch(`${base}/v1/messages`, {
        method: 'POST',
        headers: JSON_AUTH,
        body: JSON.stringify({ model: 'claude-slow-abort', max_tokens: 5, messages: [] }),
        signal: controller.signal,
      }).catch(() => 'aborted');
      await expect
        .poll(() => fake.requests.some((r) => r.body.includes('claude-slow-abort')), { timeout: 5_000 })
        .toBe(true);
      controller.abort();
      expect(await pending).toBe('aborted');
      await fake.waitForAbort('/anthropic/v1/messages', 1_000);
      // Logged as what it is (499, aborted), not as a server error.
      const line = () =>
        proxy
          .logs()
          .split('\n')
          .find((l) => l.includes('"model":"claude-slow-abort"'));
      await expect.poll(line, { timeout: 5_000 }).toBeDefined();
      expect(JSON.parse(line() ?? '{}')).toMatchObject({ status: 499, aborted: true, upstream: 'an' });
      expect(proxy.logs()).not.toMatch(/"level":50[^\n]*"path":"\/v1\/messages"/);
    });
  });

  describe("errors, each in the family's shape", () => {
    it.each([
      ['/v1/chat/completions', SHAPES.openai('invalid_json')],
      ['/v1/messages', SHAPES.anthropic('invalid_request_error')],
      ['/v1beta/models/gemini-2.5-pro:generateContent', SHAPES.gemini(400, 'INVALID_ARGUMENT')],
    ])('malformed JSON to %s → 400', async (path, shape) => {
      const res = await post(path, '{"model": "x", ');
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual(shape);
    });

    it.each([
      ['/v1/chat/completions', { model: 'llama-unknown', messages: [] }, SHAPES.openai('model_not_found')],
      ['/v1/messages', { model: 'llama-unknown', max_tokens: 1, messages: [] }, SHAPES.anthropic('not_found_error')],
      ['/v1beta/models/llama-unknown:generateContent', { contents: [] }, SHAPES.gemini(404, 'NOT_FOUND')],
    ])('a model no upstream serves, to %s → 404', async (path, body, shape) => {
      const res = await post(path, body);
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual(shape);
    });

    it.each([
      ['/v1/chat/completions', SHAPES.openai('request_too_large')],
      ['/v1/messages', SHAPES.anthropic('request_too_large')],
      ['/v1beta/models/gemini-2.5-pro:generateContent', SHAPES.gemini(413, 'INVALID_ARGUMENT')],
    ])('a body over max_body_bytes to %s → 413', async (path, shape) => {
      const res = await post(path, JSON.stringify({ model: 'gpt-4o', pad: 'x'.repeat(MAX_BODY) }));
      expect(res.status).toBe(413);
      expect(await res.json()).toEqual(shape);
    });

    it('a chunked body (no Content-Length) over max_body_bytes → 413 without the upstream seeing it', async () => {
      const before = fake.requests.length;
      const chunk = new TextEncoder().encode('x'.repeat(64 * 1024));
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent > MAX_BODY * 2) {
            controller.close();
            return;
          }
          sent += chunk.length;
          controller.enqueue(chunk);
        },
      });
      const res = await fetch(`${base}/v1/chat/completions`, {
        method: 'POST',
        headers: JSON_AUTH,
        body,
        duplex: 'half',
      });
      // The rest of the body is read and dropped, so the client gets to read the answer.
      expect(res.status).toBe(413);
      expect(await res.json()).toEqual(SHAPES.openai('request_too_large'));
      expect(fake.requests.length).toBe(before);
    });

    it('a multipart body over max_body_bytes → 413 (the model field comes after the file)', async () => {
      const form = new FormData();
      form.append('file', new Blob([Buffer.alloc(MAX_BODY + 10)]), 'a.wav');
      form.append('model', 'whisper-1');
      const res = await fetch(`${base}/v1/audio/transcriptions`, { method: 'POST', headers: AUTH, body: form });
      expect(res.status).toBe(413);
    });

    it.each([
      ['/v1/chat/completions', { model: 'gpt-down', messages: [] }, SHAPES.openai('upstream_unreachable')],
      ['/v1/messages', { model: 'claude-down', max_tokens: 1, messages: [] }, SHAPES.anthropic('api_error')],
      ['/v1beta/models/gemini-down:generateContent', { contents: [] }, SHAPES.gemini(502, 'UNAVAILABLE')],
    ])('an unreachable upstream, via %s → 502', async (path, body, shape) => {
      const res = await post(path, body);
      expect(res.status).toBe(502);
      expect(await res.json()).toEqual(shape);
    });

    it.each([
      ['/v1/chat/completions', { model: 'gpt-slow', messages: [] }, SHAPES.openai('upstream_timeout')],
      ['/v1/messages', { model: 'claude-slow', max_tokens: 1, messages: [] }, SHAPES.anthropic('api_error')],
      ['/v1beta/models/gemini-slow:generateContent', { contents: [] }, SHAPES.gemini(504, 'DEADLINE_EXCEEDED')],
    ])('an upstream slower than timeout_ms, via %s → 504', async (path, body, shape) => {
      const started = Date.now();
      const res = await post(path, body);
      expect(res.status).toBe(504);
      expect(await res.json()).toEqual(shape);
      expect(Date.now() - started).toBeLessThan(4_000);
    });

    it.each([
      ['/v1/nothing-here', SHAPES.openai('not_found')],
      ['/v1beta/tunedModels', SHAPES.gemini(404, 'NOT_FOUND')],
      ['/nothing', SHAPES.other()],
    ])('an unknown path %s → 404', async (path, shape) => {
      const res = await post(path, {});
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual(shape);
    });
  });

  describe('logs', () => {
    it('one line per request with family, model, upstream, status, ms and stream; no key anywhere', async () => {
      await post('/v1/chat/completions', { model: 'fast', messages: [] });
      await expect.poll(() => proxy.logs().includes('"model":"fast"'), { timeout: 5_000 }).toBe(true);
      const lines = proxy
        .logs()
        .split('\n')
        .filter((l) => l.includes('"msg":"request"'))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(lines.find((l) => l['model'] === 'fast')).toMatchObject({
        family: 'openai',
        upstream: 'oa',
        status: 200,
        ms: expect.any(Number),
        stream: false,
        path: '/v1/chat/completions',
      });
      expect(lines.find((l) => l['model'] === 'gpt-gated')).toMatchObject({ stream: true, status: 200 });
      for (const secret of [PROXY_KEY, ...Object.values(KEYS)]) expect(proxy.logs()).not.toContain(secret);
    });
  });

  describe('shutdown (last: it stops the container)', () => {
    it('SIGTERM lets an in-flight stream finish, then exits 0', async () => {
      const res = await post('/v1/chat/completions', { model: 'gpt-gated', stream: true, messages: [] });
      const reader = bodyReader(res);
      const head = await readUntil(reader, (t) => t.includes('"role":"assistant"'));
      const id = proxy.container.getId();
      await run('docker', ['kill', '--signal', 'SIGTERM', id]);
      await expect.poll(() => proxy.logs().includes('proxy shutting down'), { timeout: 5_000 }).toBe(true);
      fake.release();
      expect(await readUntil(reader, (t) => t.includes('[DONE]'), head)).toContain('[DONE]');
      const { stdout } = await run('docker', ['wait', id]);
      expect(stdout.trim()).toBe('0');
    });
  });
});
