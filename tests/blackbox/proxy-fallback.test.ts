import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  closedPort,
  HOST_FROM_CONTAINER,
  startProxyContainer,
  type ProxyContainer,
} from '../support/proxy-container.ts';

const KEY = 'fallback-suite-key-0123456789';
const chat = { id: 'c', object: 'chat.completion', created: 1, model: 'm', choices: [] as unknown[] };
const answer = (text: string) => ({
  ...chat,
  choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
});

/**
 * OpenAI-style upstreams on one server, told apart by their first path
 * segment: `ok-<name>` answers (JSON or a 3-event stream), `s<status>[-…]`
 * fails with that status (429 with retry-after: 30), `hang[-…]` never answers,
 * `midstream` sends one event and drops the connection, and `flaky` fails with
 * 503 while `health.flaky` is false.
 */
function upstreams(): { server: Server; hits: Map<string, number>; health: { flaky: boolean } } {
  const hits = new Map<string, number>();
  const health = { flaky: false };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const name = (req.url ?? '').split('/')[1] ?? '';
      hits.set(name, (hits.get(name) ?? 0) + 1);
      const stream = Buffer.concat(chunks).toString().includes('"stream":true');
      const status = /^s(\d{3})(?:-|$)/.exec(name)?.[1] ?? (name === 'flaky' && !health.flaky ? '503' : undefined);
      if (name.startsWith('hang')) {
        // No status line until the proxy has long given up.
        setTimeout(() => res.destroy(), 20_000).unref();
      } else if (status) {
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        if (status === '429') headers['retry-after'] = '30';
        res.writeHead(Number(status), headers).end(JSON.stringify({ error: { message: `from ${name}`, type: 'x' } }));
      } else if (name === 'midstream') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(`data: ${JSON.stringify({ ...chat, choices: [{ index: 0, delta: { content: 'Hel' } }] })}\n\n`);
        setTimeout(() => res.destroy(), 50);
      } else if (stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (const content of ['Hello', ' from ', name]) {
          res.write(`data: ${JSON.stringify({ ...chat, choices: [{ index: 0, delta: { content } }] })}\n\n`);
        }
        res.end('data: [DONE]\n\n');
      } else {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer(`Hello from ${name}`)));
      }
    });
  });
  return { server, hits, health };
}

describe('proxy fallback (container)', () => {
  let proxy: ProxyContainer;
  const { server, hits } = upstreams();

  beforeAll(async () => {
    server.listen(0, '0.0.0.0');
    await once(server, 'listening');
    const port = (server.address() as AddressInfo).port;
    const down = await closedPort();
    const at = (name: string, models: string[], p = port) => ({
      name,
      protocol: 'openai',
      base_url: `http://${HOST_FROM_CONTAINER}:${p}/${name}/v1`,
      api_key: 'u',
      models,
    });
    proxy = await startProxyContainer(
      {
        proxy: {
          allow_lan_access: true,
          routing: { retries: 2, cooldown: '30s' },
          upstreams: [
            at('s429', ['gpt-a']),
            at('s503', ['gpt-a', 'gpt-c']),
            at('ok-a', ['gpt-a']),
            at('refused', ['gpt-b'], down),
            at('ok-b', ['gpt-b']),
            at('midstream', ['gpt-mid']),
            at('ok-mid', ['gpt-mid']),
            at('s500', ['gpt-c']),
            at('s502', ['gpt-c']),
            at('ok-c', ['gpt-c']),
          ],
        },
      },
      { PROXY_API_KEY: KEY },
    );
  });
  afterAll(async () => {
    await (proxy as ProxyContainer | undefined)?.stop();
    server.close();
  });

  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${proxy.base}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
  const messages = [{ role: 'user', content: 'hi' }];

  it('moves past a 429 and a 503 to the upstream that answers, and says which one did', async () => {
    const res = await post('/v1/chat/completions', { model: 'gpt-a', messages });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gatehouse-upstream')).toBe('ok-a');
    expect(((await res.json()) as typeof chat).choices).toEqual(answer('Hello from ok-a').choices);
    await expect.poll(() => proxy.logs()).toMatch(/"attempts":\[\{"upstream":"s429","outcome":429/);
  });

  it('leaves out the upstream whose retry-after has not passed', async () => {
    const before = hits.get('s429');
    const res = await post('/v1/chat/completions', { model: 'gpt-a', messages, stream: true });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gatehouse-upstream')).toBe('ok-a');
    expect(await res.text()).toContain('ok-a');
    expect(hits.get('s429')).toBe(before);
  });

  it('moves past an upstream that refuses connections, translated too', async () => {
    const res = await post('/v1/chat/completions', { model: 'gpt-b', messages });
    expect(res.headers.get('x-gatehouse-upstream')).toBe('ok-b');
    const translated = await post(
      '/v1/messages',
      { model: 'gpt-b', max_tokens: 9, messages },
      { 'anthropic-version': '2023-06-01' },
    );
    expect(translated.status).toBe(200);
    expect(translated.headers.get('x-gatehouse-upstream')).toBe('ok-b');
    expect(JSON.stringify(await translated.json())).toContain('Hello from ok-b');
  });

  it('gives the last failure in its shape when retries run out (3 tries of 4 upstreams)', async () => {
    const res = await post('/v1/chat/completions', { model: 'gpt-c', messages });
    // s503, s500, s502 are tried; ok-c is the fourth.
    expect(res.status).toBe(502);
    expect(res.headers.get('x-gatehouse-upstream')).toBe('s502');
    expect(hits.get('ok-c')).toBeUndefined();
  });

  it("never retries a stream that failed after its first event: it ends with the client's error event", async () => {
    // The official SDK reads the passed-through stream and throws on its error event.
    const openai = new OpenAI({ baseURL: `${proxy.base}/v1`, apiKey: KEY, maxRetries: 0 });
    const stream = await openai.chat.completions.create({
      model: 'gpt-mid',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    });
    let text = '';
    const read = async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    };
    await expect(read()).rejects.toMatchObject({ message: expect.stringContaining('Upstream midstream broke off') });
    expect(text).toBe('Hel');
    await expect.poll(() => proxy.logs()).toMatch(/"model":"gpt-mid".*"cut":"upstream_broke_off"/);

    // Translated for an Anthropic client: Anthropic's error event.
    const translated = await post(
      '/v1/messages',
      { model: 'gpt-mid', max_tokens: 9, messages, stream: true },
      { 'anthropic-version': '2023-06-01' },
    );
    expect(translated.status).toBe(200);
    const events = (await translated.text()).trim().split('\n\n');
    expect(events.join('\n')).toContain('"text":"Hel"');
    expect(events.at(-1)).toBe(
      'event: error\ndata: ' +
        JSON.stringify({
          type: 'error',
          error: { type: 'api_error', message: 'Upstream midstream broke off its answer' },
        }),
    );
    expect(hits.get('ok-mid')).toBeUndefined();
  });

  it('cools an upstream down after failures in a row (the probe after the cooldown: below)', async () => {
    // s503 has failed twice already (gpt-a, gpt-c); a third failure cools it down.
    await post('/v1/chat/completions', { model: 'gpt-c', messages });
    const seen = hits.get('s503');
    const res = await post('/v1/chat/completions', { model: 'gpt-c', messages });
    expect(hits.get('s503')).toBe(seen);
    expect(res.headers.get('x-gatehouse-upstream')).toBe('ok-c');
    const metrics = await (
      await fetch(`${proxy.base}/metrics`, { headers: { authorization: `Bearer ${KEY}` } })
    ).text();
    expect(metrics).toMatch(/^gatehouse_upstream_cooling_down\{upstream="s503"\} 1$/m);
    expect(metrics).toMatch(/^gatehouse_upstream_cooling_down\{upstream="ok-c"\} 0$/m);
    expect(metrics).toMatch(/^gatehouse_upstream_attempts_total\{upstream="s429",outcome="429"\} 1$/m);
    // ok-a answered every gpt-a request after another upstream had failed it.
    const retries = /^gatehouse_upstream_retries_total\{upstream="ok-a"\} (\d+)$/m.exec(metrics)?.[1];
    const answered = /^gatehouse_upstream_attempts_total\{upstream="ok-a",outcome="200"\} (\d+)$/m.exec(metrics)?.[1];
    expect(Number(retries)).toBeGreaterThan(0);
    expect(retries).toBe(answered);
  });
});

/**
 * Every failure the issue lists, each before the answer's first byte, plain and
 * streaming, passed through and translated: three upstreams per case (the
 * failure under test, another failure, one that answers), each used by one case
 * only so no cooldown gets in the way. Then the half-open probe on the image.
 */
describe('proxy fallback: each failure it moves past, and the probe after a cooldown (container)', () => {
  let proxy: ProxyContainer;
  const { server, hits, health } = upstreams();
  const FAILURES = ['refused', 'hang', 's429', 's500', 's502', 's503', 's504', 's529'] as const;
  const CASES = FAILURES.flatMap((failure, i) =>
    (['plain', 'stream'] as const).flatMap((kind) =>
      (['openai', 'anthropic'] as const).map((client) => ({
        failure,
        // The second upstream fails another listed way.
        other: FAILURES[(i + 3) % FAILURES.length] ?? 's500',
        kind,
        client,
        id: `${failure}-${kind}-${client}`,
      })),
    ),
  );
  const COOLDOWN_MS = 2_000;

  beforeAll(async () => {
    server.listen(0, '0.0.0.0');
    await once(server, 'listening');
    const port = (server.address() as AddressInfo).port;
    const down = await closedPort();
    const at = (name: string, model: string) => ({
      name,
      protocol: 'openai',
      base_url: `http://${HOST_FROM_CONTAINER}:${name.startsWith('refused') ? down : port}/${name}/v1`,
      api_key: 'u',
      models: [model],
      // A hanging upstream is given up on after a second (plus undici's slack).
      timeout_ms: 1_000,
    });
    proxy = await startProxyContainer(
      {
        proxy: {
          allow_lan_access: true,
          routing: { retries: 2, cooldown: `${COOLDOWN_MS}ms`, failures_to_cool: 2 },
          upstreams: [
            ...CASES.flatMap((c) => [
              at(`${c.failure}-1-${c.id}`, `m-${c.id}`),
              at(`${c.other}-2-${c.id}`, `m-${c.id}`),
              at(`ok-3-${c.id}`, `m-${c.id}`),
            ]),
            at('flaky', 'gpt-probe'),
            at('ok-probe', 'gpt-probe'),
          ],
        },
      },
      { PROXY_API_KEY: KEY },
    );
  });
  afterAll(async () => {
    await (proxy as ProxyContainer | undefined)?.stop();
    server.closeAllConnections();
    server.close();
  });

  const post = (path: string, body: unknown) =>
    fetch(`${proxy.base}${path}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${KEY}`,
        'content-type': 'application/json',
        'anthropic-version': '2023-06-01',
      },
      body: JSON.stringify(body),
    });
  const messages = [{ role: 'user', content: 'hi' }];

  it.each(CASES)('$failure, then $other: the third upstream answers ($kind, $client client)', async (c) => {
    const model = `m-${c.id}`;
    const stream = c.kind === 'stream';
    const res =
      c.client === 'openai'
        ? await post('/v1/chat/completions', { model, messages, stream })
        : await post('/v1/messages', { model, max_tokens: 9, messages, stream });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gatehouse-upstream')).toBe(`ok-3-${c.id}`);
    const text = await res.text();
    // What the answer says, whole: the JSON answer's text, or the stream's three events' text joined.
    const said = [...text.matchAll(/"(?:text|content)":"([^"]*)"/g)].map((m) => m[1]).join('');
    expect(said).toBe(`Hello from ok-3-${c.id}`);
    if (stream) expect(text).toMatch(c.client === 'openai' ? /data: \[DONE\]\n\n$/ : /event: message_stop\n/);
    const failed = [`${c.failure}-1-${c.id}`, `${c.other}-2-${c.id}`];
    // A refused connection never reaches the upstream; every other failure was tried once.
    expect(failed.map((name) => hits.get(name) ?? 0)).toEqual(failed.map((n) => (n.startsWith('refused') ? 0 : 1)));
    await expect
      .poll(() => proxy.logs())
      .toMatch(
        new RegExp(
          `"attempts":\\[\\{"upstream":"${failed[0]}","outcome":[^}]+\\},\\{"upstream":"${failed[1]}",` +
            `"outcome":[^}]+\\},\\{"upstream":"ok-3-${c.id}","outcome":200,`,
        ),
      );
  });

  it('cools a failing upstream down, lets one request probe it after the cooldown, and takes it back', async () => {
    const send = async () => {
      const res = await post('/v1/chat/completions', { model: 'gpt-probe', messages });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      return res.headers.get('x-gatehouse-upstream');
    };
    // Two failures in a row cool it down: the next requests leave it out.
    expect([await send(), await send()]).toEqual(['ok-probe', 'ok-probe']);
    expect(hits.get('flaky')).toBe(2);
    expect(await send()).toBe('ok-probe');
    expect(hits.get('flaky')).toBe(2);
    // After the cooldown one request probes it; it still fails, so it cools down again.
    await new Promise((resolve) => setTimeout(resolve, COOLDOWN_MS + 300));
    expect(await Promise.all(Array.from({ length: 5 }, send))).toEqual(Array(5).fill('ok-probe'));
    expect(hits.get('flaky')).toBe(3);
    expect(await send()).toBe('ok-probe');
    expect(hits.get('flaky')).toBe(3);
    // It recovers: after the next cooldown the probe succeeds and it serves again, first in file order.
    health.flaky = true;
    await new Promise((resolve) => setTimeout(resolve, COOLDOWN_MS + 300));
    expect(await send()).toBe('flaky');
    expect([await send(), await send()]).toEqual(['flaky', 'flaky']);
    expect(hits.get('flaky')).toBe(6);
  });
});
