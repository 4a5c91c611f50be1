/**
 * Faults at the proxy's edges, against the built image: refused bodies on
 * closing connections, clients that hang up, and streams cut by a shutdown.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeUpstream } from '../support/fake-upstream.ts';
import { HOST_FROM_CONTAINER, readUntil, startProxyContainer, type ProxyContainer } from '../support/proxy-container.ts';
import { logLines, rawExchange, type LogLine } from '../support/raw-http.ts';

const run = promisify(execFile);
const PROXY_KEY = 'proxy-key-for-the-faults-suite';
const AUTH = { authorization: `Bearer ${PROXY_KEY}` };
const JSON_AUTH = { ...AUTH, 'content-type': 'application/json' };
const MAX_BODY = 64 * 1024;
/** Several times what the socket buffers on both sides hold, so the client is still sending when refused. */
const OVERSIZED = 4 * 1024 * 1024;
const ATTEMPTS = 24;
const GRACE_MS = 1_500;

async function startFaultsProxy(fake: FakeUpstream): Promise<ProxyContainer> {
  const at = (vendor: string) => `http://${HOST_FROM_CONTAINER}:${fake.port}/${vendor}`;
  return startProxyContainer(
    {
      proxy: {
        allow_lan_access: true,
        max_body_bytes: MAX_BODY,
        shutdown_grace_ms: GRACE_MS,
        upstreams: [
          { name: 'oa', protocol: 'openai', base_url: at('openai/v1'), api_key: 'up-openai', models: ['gpt-*'] },
          { name: 'an', protocol: 'anthropic', base_url: at('anthropic'), api_key: 'up-anthropic', models: ['claude-*'] },
          { name: 'ge', protocol: 'gemini', base_url: at('gemini'), api_key: 'up-gemini', models: ['gemini-*'] },
        ],
      },
    },
    { PROXY_API_KEY: PROXY_KEY },
  );
}

/** What each family's 413 looks like (families.ts). */
const TOO_LARGE = {
  openai: { error: { message: `Request body larger than ${MAX_BODY} bytes`, type: 'invalid_request_error', param: null, code: 'request_too_large' } },
  anthropic: { type: 'error', error: { type: 'request_too_large', message: `Request body larger than ${MAX_BODY} bytes` } },
  gemini: { error: { code: 413, message: `Request body larger than ${MAX_BODY} bytes`, status: 'INVALID_ARGUMENT' } },
};

const REFUSED = [
  { path: '/v1/chat/completions', shape: TOO_LARGE.openai },
  { path: '/v1/messages', shape: TOO_LARGE.anthropic },
  { path: '/v1beta/models/gemini-x:generateContent', shape: TOO_LARGE.gemini },
];

describe('gatehouse proxy (container): refusals and hang-ups', () => {
  let fake: FakeUpstream;
  let proxy: ProxyContainer;
  let url: URL;

  beforeAll(async () => {
    fake = await FakeUpstream.start({ host: '0.0.0.0', slowMs: 4_000 });
    proxy = await startFaultsProxy(fake);
    url = new URL(proxy.base);
  });
  afterAll(async () => {
    await proxy?.stop();
    await fake?.close();
  });

  /**
   * Log lines written so far, once everything logged before this call is
   * out: the lines are batched, so a request logged after them is waited for.
   */
  async function settledLog(): Promise<LogLine[]> {
    const marker = `/log-barrier-${Math.random().toString(36).slice(2)}`;
    await fetch(`${proxy.base}${marker}`, { headers: AUTH });
    await expect.poll(() => proxy.logs().includes(marker), { timeout: 5_000 }).toBe(true);
    return logLines(proxy.logs());
  }

  describe('a refused body on a connection the client closes (Connection: close)', () => {
    for (const framing of ['content-length', 'chunked'] as const) {
      it(`is always readable as the family's 413 (${framing}, ${ATTEMPTS} attempts over three families)`, async () => {
        const outcomes: string[] = [];
        for (let i = 0; i < ATTEMPTS; i++) {
          const { path, shape } = REFUSED[i % REFUSED.length] as (typeof REFUSED)[number];
          const answer = await rawExchange(url, {
            path,
            headers: { ...JSON_AUTH, connection: 'close' },
            bodyPrefix: '{"model":"gpt-4o","pad":"',
            bodyBytes: OVERSIZED,
            framing,
          });
          outcomes.push(answer.status === 413 && JSON.stringify(answer.json) === JSON.stringify(shape) ? 'ok' : `${answer.status} ${answer.error ?? answer.text.slice(0, 200)}`);
        }
        expect(outcomes).toEqual(Array.from({ length: ATTEMPTS }, () => 'ok'));
      });
    }
  });

  describe('a client that hangs up is one info line (499 before any answer) and no error, on every path', () => {
    // [case, what the client does, the status logged: 499 before any answer, the answer's own once under way]
    const hangUps: [string, () => Promise<void>, number][] = [
      ['translated, before the answer (Anthropic client, OpenAI upstream)', () => abortWhenSeen('/v1/messages', { model: 'gpt-slow-t1', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }, 'gpt-slow-t1'), 499],
      ['translated, before the answer (Gemini client, OpenAI upstream)', () => abortWhenSeen('/v1beta/models/gpt-slow-t2:generateContent', { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }, 'gpt-slow-t2'), 499],
      ['translated stream, mid-answer (OpenAI client, Anthropic upstream)', () => abortMidStream('/v1/chat/completions', { model: 'claude-hang-t3', stream: true, messages: [{ role: 'user', content: 'hi' }] }), 200],
      ['pass-through, before the answer', () => abortWhenSeen('/v1/chat/completions', { model: 'gpt-slow-p1', messages: [] }, 'gpt-slow-p1'), 499],
      ['while the JSON body is still arriving', () => hangUpMidBody('/v1/messages', 'application/json'), 499],
      ['while a multipart body is still arriving', () => hangUpMidBody('/v1/audio/transcriptions', 'multipart/form-data; boundary=xyz'), 499],
    ];

    async function abortWhenSeen(path: string, body: unknown, model: string): Promise<void> {
      const controller = new AbortController();
      const pending = fetch(`${proxy.base}${path}`, { method: 'POST', headers: JSON_AUTH, body: JSON.stringify(body), signal: controller.signal }).catch(() => 'aborted');
      await expect.poll(() => fake.requests.some((r) => r.body.includes(model) || r.path.includes(model)), { timeout: 5_000 }).toBe(true);
      controller.abort();
      expect(await pending).toBe('aborted');
    }

    async function abortMidStream(path: string, body: unknown): Promise<void> {
      const controller = new AbortController();
      const res = await fetch(`${proxy.base}${path}`, { method: 'POST', headers: JSON_AUTH, body: JSON.stringify(body), signal: controller.signal });
      const reader = res.body?.getReader();
      if (!reader) throw new Error(`no body (status ${res.status})`);
      await readUntil(reader, (t) => t.includes('data: '));
      controller.abort();
    }

    async function hangUpMidBody(path: string, type: string): Promise<void> {
      await rawExchange(url, { path, headers: { ...AUTH, 'content-type': type }, bodyPrefix: '', bodyBytes: 1_000, framing: 'content-length', hangUpAfter: 100 });
    }

    for (const [name, hangUp, status] of hangUps) {
      it(name, async () => {
        const before = (await settledLog()).length;
        await hangUp();
        const aborted = async () => (await settledLog()).slice(before).filter((l) => l.msg === 'request' && l.aborted === true);
        await expect.poll(async () => (await aborted()).length, { timeout: 10_000 }).toBe(1);
        expect(await aborted()).toEqual([expect.objectContaining({ level: 30, status })]);
        expect((await settledLog()).slice(before).filter((l) => l.level >= 40)).toEqual([]);
      });
    }
  });
});

/** The error event each client protocol gets when the grace runs out. */
const SHUTDOWN_EVENTS: Record<string, RegExp> = {
  openaiChat: /data: \{"error":\{"message":"The proxy is shutting down","type":"server_error","param":null,"code":"shutting_down"\}\}\n\n(?:data: \[DONE\]\n\n)?$/,
  openaiResponses: /event: error\ndata: \{"type":"error","sequence_number":\d+,"code":"shutting_down","message":"The proxy is shutting down","param":null\}\n\n$/,
  anthropic: /event: error\ndata: \{"type":"error","error":\{"type":"api_error","message":"The proxy is shutting down"\}\}\n\n$/,
  gemini: /data: \{"error":\{"code":503,"message":"The proxy is shutting down","status":"UNAVAILABLE"\}\}\r?\n\r?\n$/,
};

describe('gatehouse proxy (container): streams still open when the shutdown grace runs out', () => {
  let fake: FakeUpstream;
  let proxy: ProxyContainer;

  beforeAll(async () => {
    fake = await FakeUpstream.start({ host: '0.0.0.0' });
    proxy = await startFaultsProxy(fake);
  });
  afterAll(async () => {
    await proxy?.stop();
    await fake?.close();
  });

  it('each ends with its protocol\'s error event, translated or passed through, then the proxy exits 0', async () => {
    const user = [{ role: 'user', content: 'hi' }];
    const gemini = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] };
    const streams: [string, string, unknown, RegExp][] = [
      ['OpenAI chat, passed through', '/v1/chat/completions', { model: 'gpt-gated-1', stream: true, messages: user }, SHUTDOWN_EVENTS.openaiChat as RegExp],
      ['OpenAI Responses, passed through', '/v1/responses', { model: 'gpt-gated-2', stream: true, input: 'hi' }, SHUTDOWN_EVENTS.openaiResponses as RegExp],
      ['Anthropic, passed through', '/v1/messages', { model: 'claude-gated-3', stream: true, max_tokens: 5, messages: user }, SHUTDOWN_EVENTS.anthropic as RegExp],
      ['Gemini SSE, passed through', '/v1beta/models/gemini-gated-4:streamGenerateContent?alt=sse', gemini, SHUTDOWN_EVENTS.gemini as RegExp],
      ['OpenAI chat, translated', '/v1/chat/completions', { model: 'claude-gated-5', stream: true, messages: user }, SHUTDOWN_EVENTS.openaiChat as RegExp],
      ['OpenAI Responses, translated', '/v1/responses', { model: 'claude-gated-6', stream: true, input: 'hi' }, SHUTDOWN_EVENTS.openaiResponses as RegExp],
      ['Anthropic, translated', '/v1/messages', { model: 'gpt-gated-7', stream: true, max_tokens: 5, messages: user }, SHUTDOWN_EVENTS.anthropic as RegExp],
      ['Gemini SSE, translated', '/v1beta/models/claude-gated-8:streamGenerateContent?alt=sse', gemini, SHUTDOWN_EVENTS.gemini as RegExp],
    ];
    const ends = streams.map(async ([name, path, body]) => {
      const res = await fetch(`${proxy.base}${path}`, { method: 'POST', headers: JSON_AUTH, body: JSON.stringify(body) });
      return { name, status: res.status, text: await res.text() };
    });
    // Each upstream has sent its first event and waits (a translated Gemini stream sends its head with its first text).
    const models = streams.map(([, path, body]) => /models\/([^:]+)/.exec(path)?.[1] ?? (body as { model: string }).model);
    await expect.poll(() => models.filter((m) => fake.requests.some((r) => r.body.includes(m) || r.path.includes(m))).length, { timeout: 5_000 }).toBe(streams.length);
    const id = proxy.container.getId();
    await run('docker', ['kill', '--signal', 'SIGTERM', id]);
    // Never released: the grace runs out with every stream open.
    for (const [i, end] of (await Promise.all(ends)).entries()) {
      expect(end.status, end.name).toBe(200);
      expect(end.text, end.name).toMatch(streams[i]?.[3] as RegExp);
    }
    const { stdout } = await run('docker', ['wait', id]);
    expect(stdout.trim()).toBe('0');
    expect(logLines(proxy.logs()).filter((l) => l.level >= 50)).toEqual([]);
  });
});
