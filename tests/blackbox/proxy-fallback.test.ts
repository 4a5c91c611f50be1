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
 * segment: `ok-<name>` answers (JSON or a 3-event stream), `s<status>` fails
 * with that status (429 with retry-after: 30), `midstream` sends one event and
 * drops the connection.
 */
function upstreams(): { server: Server; hits: Map<string, number> } {
  const hits = new Map<string, number>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const name = (req.url ?? '').split('/')[1] ?? '';
      hits.set(name, (hits.get(name) ?? 0) + 1);
      const stream = Buffer.concat(chunks).toString().includes('"stream":true');
      const status = /^s(\d{3})$/.exec(name)?.[1];
      if (status) {
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
  return { server, hits };
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

  it('cools an upstream down after failures in a row (the probe after the cooldown is unit-tested)', async () => {
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
