/**
 * Faults at the proxy's edges, against the built image: refused bodies on
 * closing connections, clients that hang up, and streams cut by a shutdown.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeUpstream } from '../support/fake-upstream.ts';
import { HOST_FROM_CONTAINER, readUntil, startProxyContainer } from '../support/proxy-container.ts';
import type { ProxyContainer } from '../support/proxy-container.ts';
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
          { name: 'an', protocol: 'anthropic', base_url: at('anthropic'), api_key: 'up-an', models: ['claude-*'] },
          { name: 'ge', protocol: 'gemini', base_url: at('gemini'), api_key: 'up-gemini', models: ['gemini-*'] },
        ],
      },
    },
    { PROXY_API_KEY: PROXY_KEY },
  );
}

/** What each family's 413 looks like (families.ts). */
const TOO_LARGE_MESSAGE = `Request body larger than ${MAX_BODY} bytes`;
const TOO_LARGE = {
  openai: {
    error: { message: TOO_LARGE_MESSAGE, type: 'invalid_request_error', param: null, code: 'request_too_large' },
  },
  anthropic: { type: 'error', error: { type: 'request_too_large', message: TOO_LARGE_MESSAGE } },
  gemini: { error: { code: 413, message: TOO_LARGE_MESSAGE, status: 'INVALID_ARGUMENT' } },
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
    await (proxy as ProxyContainer | undefined)?.stop();
    await (fake as FakeUpstream | undefined)?.close();
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
          const shaped = answer.status === 413 && JSON.stringify(answer.json) === JSON.stringify(shape);
          outcomes.push(shaped ? 'ok' : `${answer.status} ${answer.error ?? answer.text.slice(0, 200)}`);
        }
        expect(outcomes).toEqual(Array.from({ length: ATTEMPTS }, () => 'ok'));
      });
    }
  });

  describe('a client that hangs up is one info line (499 before any answer) and no error, on every path', () => {
    // [case, what the client does, the status logged: 499 before any answer, the answer's own once under way]
    const user = [{ role: 'user', content: 'hi' }];
    const gemini = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] };
    const hangUps: [string, () => Promise<void>, number][] = [
      [
        'translated, before the answer (Anthropic client, OpenAI upstream)',
        () => abortWhenSeen('/v1/messages', { model: 'gpt-slow-t1', max_tokens: 5, messages: user }, 'gpt-slow-t1'),
        499,
      ],
      [
        'translated, before the answer (Gemini client, OpenAI upstream)',
        () => abortWhenSeen('/v1beta/models/gpt-slow-t2:generateContent', gemini, 'gpt-slow-t2'),
        499,
      ],
      [
        'translated stream, mid-answer (OpenAI client, Anthropic upstream)',
        () => abortMidStream('/v1/chat/completions', { model: 'claude-hang-t3', stream: true, messages: user }),
        200,
      ],
      [
        'pass-through, before the answer',
        () => abortWhenSeen('/v1/chat/completions', { model: 'gpt-slow-p1', messages: [] }, 'gpt-slow-p1'),
        499,
      ],
      ['while the JSON body is still arriving', () => hangUpMidBody('/v1/messages', 'application/json'), 499],
      [
        'while a multipart body is still arriving',
        () => hangUpMidBody('/v1/audio/transcriptions', 'multipart/form-data; boundary=xyz'),
        499,
      ],
    ];

    const post = (path: string, body: unknown, signal?: AbortSignal) =>
      fetch(`${proxy.base}${path}`, { method: 'POST', headers: JSON_AUTH, body: JSON.stringify(body), signal });
    const seen = (model: string) => fake.requests.some((r) => r.body.includes(model) || r.path.includes(model));

    async function abortWhenSeen(path: string, body: unknown, model: string): Promise<void> {
      const controller = new AbortController();
      const pending = post(path, body, controller.signal).catch(() => 'aborted');
      await expect.poll(() => seen(model), { timeout: 5_000 }).toBe(true);
      controller.abort();
      expect(await pending).toBe('aborted');
    }

    async function abortMidStream(path: string, body: unknown): Promise<void> {
      const controller = new AbortController();
      const res = await post(path, body, controller.signal);
      const reader = res.body?.getReader();
      if (!reader) throw new Error(`no body (status ${res.status})`);
      await readUntil(reader, (t) => t.includes('data: '));
      controller.abort();
    }

    async function hangUpMidBody(path: string, type: string): Promise<void> {
      const headers = { ...AUTH, 'content-type': type };
      const framing = 'content-length';
      await rawExchange(url, { path, headers, bodyPrefix: '', bodyBytes: 1_000, framing, hangUpAfter: 100 });
    }

    for (const [name, hangUp, status] of hangUps) {
      it(name, async () => {
        const before = (await settledLog()).length;
        await hangUp();
        const aborted = async () =>
          (await settledLog()).slice(before).filter((l) => l.msg === 'request' && l.aborted === true);
        await expect.poll(async () => (await aborted()).length, { timeout: 10_000 }).toBe(1);
        expect(await aborted()).toEqual([expect.objectContaining({ level: 30, status })]);
        expect((await settledLog()).slice(before).filter((l) => l.level >= 40)).toEqual([]);
      });
    }
  });
});

/** The error event each client protocol gets when the grace runs out. */
const SHUTTING_DOWN = 'The proxy is shutting down';
const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** `event` as the stream's last event (`trailer`, a pattern, may follow it). */
const lastEvent = (event: string, trailer = '') => new RegExp(`${escaped(event)}${trailer}$`);
const SHUTDOWN_EVENTS = {
  openaiChat: lastEvent(
    `data: {"error":{"message":"${SHUTTING_DOWN}","type":"server_error","param":null,"code":"shutting_down"}}\n\n`,
    '(?:data: \\[DONE\\]\n\n)?',
  ),
  openaiResponses: new RegExp(
    `event: error\ndata: \\{"type":"error","sequence_number":\\d+,` +
      `"code":"shutting_down","message":"${SHUTTING_DOWN}","param":null\\}\n\n$`,
  ),
  anthropic: lastEvent(
    `event: error\ndata: {"type":"error","error":{"type":"api_error","message":"${SHUTTING_DOWN}"}}\n\n`,
  ),
  gemini: lastEvent(`data: {"error":{"code":503,"message":"${SHUTTING_DOWN}","status":"UNAVAILABLE"}}\r\n\r\n`),
};

describe('gatehouse proxy (container): streams still open when the shutdown grace runs out', () => {
  let fake: FakeUpstream;
  let proxy: ProxyContainer;

  beforeAll(async () => {
    fake = await FakeUpstream.start({ host: '0.0.0.0' });
    proxy = await startFaultsProxy(fake);
  });
  afterAll(async () => {
    await (proxy as ProxyContainer | undefined)?.stop();
    await (fake as FakeUpstream | undefined)?.close();
  });

  it("each ends with its protocol's error event, translated or passed through, then the proxy exits 0", async () => {
    const user = [{ role: 'user', content: 'hi' }];
    const gemini = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] };
    const chat = (model: string) => ({ model, stream: true, messages: user });
    const responses = (model: string) => ({ model, stream: true, input: 'hi' });
    const messages = (model: string) => ({ model, stream: true, max_tokens: 5, messages: user });
    const geminiSse = (model: string) => `/v1beta/models/${model}:streamGenerateContent?alt=sse`;
    const { openaiChat, openaiResponses, anthropic } = SHUTDOWN_EVENTS;
    const streams: [string, string, unknown, RegExp][] = [
      ['OpenAI chat, passed through', '/v1/chat/completions', chat('gpt-gated-1'), openaiChat],
      ['OpenAI Responses, passed through', '/v1/responses', responses('gpt-gated-2'), openaiResponses],
      ['Anthropic, passed through', '/v1/messages', messages('claude-gated-3'), anthropic],
      ['Gemini SSE, passed through', geminiSse('gemini-gated-4'), gemini, SHUTDOWN_EVENTS.gemini],
      ['OpenAI chat, translated', '/v1/chat/completions', chat('claude-gated-5'), openaiChat],
      ['OpenAI Responses, translated', '/v1/responses', responses('claude-gated-6'), openaiResponses],
      ['Anthropic, translated', '/v1/messages', messages('gpt-gated-7'), anthropic],
      ['Gemini SSE, translated', geminiSse('claude-gated-8'), gemini, SHUTDOWN_EVENTS.gemini],
    ];
    const ends = streams.map(async ([name, path, body]) => {
      const init = { method: 'POST', headers: JSON_AUTH, body: JSON.stringify(body) };
      const res = await fetch(`${proxy.base}${path}`, init);
      return { name, status: res.status, text: await res.text() };
    });
    // Each upstream has sent its first event and waits (a translated Gemini stream sends its head with its first text).
    const modelOf = (path: string, body: unknown) =>
      /models\/([^:]+)/.exec(path)?.[1] ?? (body as { model: string }).model;
    const models = streams.map(([, path, body]) => modelOf(path, body));
    const seen = (m: string) => fake.requests.some((r) => r.body.includes(m) || r.path.includes(m));
    await expect.poll(() => models.filter(seen).length, { timeout: 5_000 }).toBe(streams.length);
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
