/**
 * What a key may do, tried from outside (issue 27's team proxy items): the multipart model field, warmup,
 * reserved tokens under concurrency, metric series for client-chosen names, passed-through Responses
 * conversations and MCP servers. One proxy container with one key per rule.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readForm } from '../../src/proxy/multipart.ts';
import { FakeUpstream } from '../support/fake-upstream.ts';
import { connectMcp, firstText } from '../support/mcp-client.ts';
import { startRemoteMcpServer, type RemoteMcpFixture } from '../support/mcp-remote-server.ts';
import { HOST_FROM_CONTAINER, startProxyContainer, type ProxyContainer } from '../support/proxy-container.ts';

const KEYS = {
  operator: 'operator-key-0123456789abcdef',
  /** May use gpt-image-ok and whisper-ok only. */
  picky: 'picky-key-0123456789abcdef',
  /** 50 tokens a day. */
  spender: 'spender-key-0123456789abcdef',
  /** 50 tokens a minute. */
  minute: 'minute-key-0123456789abcdef',
  /** 10 tokens a day: one answer. */
  drained: 'drained-key-0123456789abcdef',
  /** 3 requests a minute, of every kind. */
  three: 'three-key-0123456789abcdef',
  /** 2 requests a minute. */
  pair: 'pair-key-0123456789abcdef',
  /** May use the MCP servers git-* and docs only. */
  tools: 'tools-key-0123456789abcdef',
  /** No rule of its own: another person on the team. */
  colleague: 'colleague-key-0123456789abcdef',
};
type Name = keyof typeof KEYS;

describe('proxy key rules (container)', () => {
  let fake: FakeUpstream;
  let remote: RemoteMcpFixture;
  let proxy: ProxyContainer;

  beforeAll(async () => {
    // gpt-slow-… answers after half a second: long enough for 30 requests to be in flight at once.
    fake = await FakeUpstream.start({ host: '0.0.0.0', slowMs: 500 });
    remote = await startRemoteMcpServer({ host: '0.0.0.0' });
    const mcp = { url: `http://${HOST_FROM_CONTAINER}:${remote.port}/mcp` };
    const at = (vendor: string) => `http://${HOST_FROM_CONTAINER}:${fake.port}/${vendor}`;
    proxy = await startProxyContainer(
      {
        proxy: {
          allow_lan_access: true,
          upstreams: [
            { name: 'oa', protocol: 'openai', base_url: at('openai/v1'), api_key: 'u', models: ['gpt-*', 'whisper-*'] },
          ],
          keys: [
            { name: 'picky', key_env: 'PICKY_KEY', models: ['gpt-image-ok', 'whisper-ok'] },
            { name: 'spender', key_env: 'SPENDER_KEY', budget_tokens: 50, budget_period: 'day' },
            { name: 'minute', key_env: 'MINUTE_KEY', tpm: 50 },
            { name: 'drained', key_env: 'DRAINED_KEY', budget_tokens: 10, budget_period: 'day' },
            { name: 'three', key_env: 'THREE_KEY', rpm: 3 },
            { name: 'pair', key_env: 'PAIR_KEY', rpm: 2 },
            { name: 'tools', key_env: 'TOOLS_KEY', mcp_servers: ['git-*', 'docs'] },
            { name: 'colleague', key_env: 'COLLEAGUE_KEY' },
          ],
          mcp: { servers: { docs: mcp, 'git-tools': mcp, secrets: mcp } },
        },
      },
      {
        PROXY_API_KEY: KEYS.operator,
        PICKY_KEY: KEYS.picky,
        SPENDER_KEY: KEYS.spender,
        MINUTE_KEY: KEYS.minute,
        DRAINED_KEY: KEYS.drained,
        THREE_KEY: KEYS.three,
        PAIR_KEY: KEYS.pair,
        TOOLS_KEY: KEYS.tools,
        COLLEAGUE_KEY: KEYS.colleague,
      },
    );
  });
  afterAll(async () => {
    await (proxy as ProxyContainer | undefined)?.stop();
    await (fake as FakeUpstream | undefined)?.close();
    await (remote as RemoteMcpFixture | undefined)?.close();
  });

  const auth = (key: Name) => ({ authorization: `Bearer ${KEYS[key]}` });

  describe('multipart: the model checked is the model sent', () => {
    const BOUNDARY = 'rules-boundary';
    /** A form written by hand, each part as its raw header lines and value. */
    const form = (parts: [string, string][]) =>
      parts.map(([headers, value]) => `--${BOUNDARY}\r\n${headers}\r\n\r\n${value}\r\n`).join('') +
      `--${BOUNDARY}--\r\n`;
    const field = (name: string, value: string): [string, string] => [
      `Content-Disposition: form-data; name="${name}"`,
      value,
    ];
    const audio: [string, string] = [
      'Content-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav',
      'RIFF....WAVE',
    ];
    const send = (path: string, body: string) =>
      fetch(`${proxy.base}${path}`, {
        method: 'POST',
        headers: { ...auth('picky'), 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
        body,
      });
    const PATHS = ['/v1/audio/transcriptions', '/v1/images/edits'];

    it.each(PATHS)(
      '%s: the allowed model in a plain form is served, and the upstream reads that model',
      async (path) => {
        const model = path.includes('audio') ? 'whisper-ok' : 'gpt-image-ok';
        const res = await send(path, form([audio, field('model', model)]));
        expect(res.status).toBe(200);
        const seen = fake.last(`/openai${path}`);
        const parsed = await readForm(seen.body, String(seen.headers['content-type']));
        expect(parsed.getAll('model')).toEqual([model]);
      },
    );

    it.each([
      ['a second model field after the allowed one', [field('model', 'whisper-ok'), audio, field('model', 'gpt-4o')]],
      ['a second model field before the allowed one', [field('model', 'gpt-4o'), field('model', 'whisper-ok')]],
      ['a field named Model', [field('Model', 'gpt-4o'), field('model', 'whisper-ok')]],
      ['a field named MODEL only', [audio, field('MODEL', 'gpt-4o')]],
      ['a model that is a file', [['Content-Disposition: form-data; name="model"; filename="m"', 'whisper-ok']]],
    ] as [string, [string, string][]][])('%s → 400, nothing sent upstream', async (_, parts) => {
      const before = fake.requests.length;
      for (const path of PATHS) {
        const res = await send(path, form(parts));
        expect(res.status).toBe(400);
        expect(((await res.json()) as { error: { code: string } }).error.code).toBe('invalid_multipart');
      }
      expect(fake.requests.length).toBe(before);
    });

    it.each([
      [
        'a file named model',
        [['Content-Disposition: form-data; name="file"; filename="model"', 'gpt-4o'], field('model', 'gpt-4o')],
      ],
      [
        'a header that mentions name="model"',
        [['Content-Disposition: form-data; name="x"\r\nX-A: name="model"', 'whisper-ok'], field('model', 'gpt-4o')],
      ],
      [
        'a file whose bytes look like a model part',
        [
          [
            'Content-Disposition: form-data; name="file"; filename="a"',
            'Content-Disposition: form-data; name="model"\r\n\r\nwhisper-ok',
          ],
          field('model', 'gpt-4o'),
        ],
      ],
    ] as [string, [string, string][]][])('%s is not the model: the real one (not allowed) → 403', async (_, parts) => {
      const before = fake.requests.length;
      const res = await send('/v1/audio/transcriptions', form(parts));
      expect(res.status).toBe(403);
      expect(fake.requests.length).toBe(before);
    });

    it('a malformed form → 400 in the OpenAI shape', async () => {
      const res = await send(
        '/v1/audio/transcriptions',
        `--${BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper-ok`,
      );
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ error: { code: 'invalid_multipart', type: 'invalid_request_error' } });
    });
  });

  describe('budgets and tpm: tokens are reserved at admission', () => {
    /** A chat answer of the fake: 10 tokens (5 in, 5 out), after half a second. */
    const chat = (key: Name) =>
      fetch(`${proxy.base}/v1/chat/completions`, {
        method: 'POST',
        headers: { ...auth(key), 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-slow-1', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }),
      }).then(async (res) => {
        await res.arrayBuffer();
        return res.status;
      });

    it.each(['spender', 'minute'] as const)(
      '%s: 30 concurrent requests spend at most one answer beyond 50 tokens, and what is left is usable once they end',
      async (key) => {
        const statuses = await Promise.all(Array.from({ length: 30 }, () => chat(key)));
        const served = statuses.filter((s) => s === 200).length;
        expect(statuses.filter((s) => s === 429).length).toBe(30 - served);
        expect(served).toBeGreaterThanOrEqual(1);
        // Without reservations all 30 passed (300 tokens of 50).
        expect(served * 10).toBeLessThanOrEqual(50 + 10);
        // The reservations were settled to 10 each: the rest of the 50 is served one request at a time.
        let more = 0;
        while ((await chat(key)) === 200) more += 1;
        expect((served + more) * 10).toBeGreaterThanOrEqual(50);
        expect((served + more) * 10).toBeLessThanOrEqual(50 + 10);
      },
    );
  });

  /** A small JSON POST with `key`; its status and parsed body. */
  const postJson = async (path: string, key: Name, body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${proxy.base}${path}`, {
      method: 'POST',
      headers: { ...auth(key), 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    // An MCP server may answer as an SSE stream: only JSON bodies are parsed.
    const text = await res.text();
    const json = String(res.headers.get('content-type')).startsWith('application/json');
    return {
      status: res.status,
      headers: res.headers,
      body: (json ? JSON.parse(text) : { text }) as Record<string, unknown>,
    };
  };
  const hello = { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] };

  describe('/internal/warmup follows the key', () => {
    it('its models: a model the key may not use → 403, one it may is warmed', async () => {
      const before = fake.requests.length;
      expect(await postJson('/internal/warmup', 'picky', { model: 'gpt-4o' })).toMatchObject({
        status: 403,
        // /internal/… answers in the proxy's own shape.
        body: { error: 'This API key may not use model "gpt-4o"' },
      });
      expect(fake.requests.length).toBe(before);
      expect(await postJson('/internal/warmup', 'picky', { model: 'gpt-image-ok' })).toMatchObject({
        status: 200,
        body: { success: true },
      });
    });

    it('its budget: once spent, a warmup of a model → 429; one of the model lists spends nothing and is served', async () => {
      expect((await postJson('/v1/chat/completions', 'drained', hello)).status).toBe(200);
      await expect
        .poll(async () => (await postJson('/internal/warmup', 'drained', { model: 'gpt-4o' })).status)
        .toBe(429);
      expect((await postJson('/internal/warmup', 'drained', {})).status).toBe(200);
    });

    it('its rpm: warmups and model requests count together', async () => {
      expect((await postJson('/internal/warmup', 'three', {})).status).toBe(200);
      expect((await postJson('/internal/warmup', 'three', { model: 'gpt-4o' })).status).toBe(200);
      expect((await postJson('/v1/chat/completions', 'three', hello)).status).toBe(200);
      const refused = await postJson('/internal/warmup', 'three', {});
      expect(refused).toMatchObject({ status: 429, body: { error: expect.stringContaining('requests per minute') } });
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect((await postJson('/v1/chat/completions', 'three', hello)).status).toBe(429);
    });
  });

  describe('a passed-through Responses conversation is continued by its own key only', () => {
    /** A Responses request to the fake upstream (same protocol: passed through), and the answer's id. */
    const respond = async (key: Name, stream: boolean, previous?: string) => {
      const body = { model: 'gpt-4o', input: 'hi', stream, ...(previous && { previous_response_id: previous }) };
      const res = await fetch(`${proxy.base}/v1/responses`, {
        method: 'POST',
        headers: { ...auth(key), 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, text, id: /"id":"(resp_[^"]+)"/.exec(text)?.[1] };
    };
    const sentOn = () => JSON.parse(fake.last('/openai/v1/responses').body.toString()) as Record<string, unknown>;

    it.each([
      ['a JSON answer', false],
      ['a stream', true],
    ])(
      "%s: another key's continuation → 404 previous_response_not_found, nothing sent on; its own key continues",
      async (_, stream) => {
        const first = await respond('operator', stream);
        expect(first.status).toBe(200);
        const id = first.id as string;
        expect(id).toMatch(/^resp_fake_/);
        for (const other of ['colleague', 'tools'] as const) {
          const before = fake.requests.length;
          const refused = await respond(other, stream, id);
          expect(refused.status).toBe(404);
          expect(JSON.parse(refused.text)).toEqual({
            error: {
              message: `Previous response with id '${id}' not found.`,
              type: 'invalid_request_error',
              param: null,
              code: 'previous_response_not_found',
            },
          });
          expect(fake.requests.length).toBe(before);
        }
        const continued = await respond('operator', stream, id);
        expect(continued.status).toBe(200);
        expect(sentOn()).toMatchObject({ previous_response_id: id });
        // The continuation is an answer of the same key's too: it continues in turn.
        expect((await respond('operator', stream, continued.id)).status).toBe(200);
      },
    );

    it('an id this proxy never passed through is not found for any key', async () => {
      const before = fake.requests.length;
      for (const key of ['operator', 'colleague'] as const) {
        const refused = await respond(key, false, 'resp_fake_made_elsewhere');
        expect(refused.status).toBe(404);
        expect(refused.text).toContain('previous_response_not_found');
      }
      expect(fake.requests.length).toBe(before);
    });
  });

  describe('MCP servers follow the key', () => {
    const INITIALIZE = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    };
    const MCP_ACCEPT = { accept: 'application/json, text/event-stream' };
    const initialize = (server: string, key: Name) => postJson(`/mcp/${server}/mcp`, key, INITIALIZE, MCP_ACCEPT);

    it('a server its mcp_servers match is served (the official client lists and calls tools)', async () => {
      for (const server of ['git-tools', 'docs']) {
        const { client } = await connectMcp(`${proxy.base}/mcp/${server}/mcp`, auth('tools'));
        try {
          expect(firstText(await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } }))).toBe('5');
        } finally {
          await client.close();
        }
      }
    });

    it.each(['secrets', 'Docs', 'docs-extra', 'nowhere'])(
      '%s, which its mcp_servers do not match → 403 as a JSON-RPC error, and the server sees nothing',
      async (server) => {
        const before = remote.requests.length;
        const refused = await initialize(server, 'tools');
        expect(refused).toMatchObject({
          status: 403,
          body: { jsonrpc: '2.0', id: null, error: { code: -32003, message: expect.stringContaining(server) } },
        });
        await expect(connectMcp(`${proxy.base}/mcp/${server}/mcp`, auth('tools'))).rejects.toThrow(/403/);
        expect(remote.requests.length).toBe(before);
      },
    );

    it('a key without mcp_servers may use every server', async () => {
      expect((await initialize('secrets', 'picky')).status).toBe(200);
    });

    it('MCP requests count toward rpm: refused as a JSON-RPC error with retry-after, model requests too', async () => {
      expect((await initialize('docs', 'pair')).status).toBe(200);
      expect((await initialize('git-tools', 'pair')).status).toBe(200);
      const refused = await initialize('docs', 'pair');
      expect(refused).toMatchObject({
        status: 429,
        body: { jsonrpc: '2.0', id: null, error: { code: -32003, data: { status: 429 } } },
      });
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect((await postJson('/v1/chat/completions', 'pair', hello)).status).toBe(429);
    });
  });

  describe('client-chosen model names do not grow metrics and usage', () => {
    it('1,000 names count under the configured entries and one bucket for the rest', async () => {
      const names = [
        ...Array.from({ length: 900 }, (_, i) => `gpt-client-${i}`),
        ...Array.from({ length: 100 }, (_, i) => `made-up-${i}`),
      ];
      const statuses = new Map<number, number>();
      // 20 at a time.
      for (let i = 0; i < names.length; i += 20) {
        const batch = names.slice(i, i + 20);
        for (const { status } of await Promise.all(
          batch.map((model) => postJson('/v1/chat/completions', 'operator', { ...hello, model })),
        ))
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
      }
      expect(Object.fromEntries(statuses)).toEqual({ 200: 900, 404: 100 });
      const res = await fetch(`${proxy.base}/metrics`, { headers: auth('operator') });
      const text = await res.text();
      const models = new Set([...text.matchAll(/model="([^"]*)"/g)].map((m) => m[1]));
      // The upstream's entries and the bucket of unknown names: not one series per name.
      expect([...models].every((m) => ['gpt-*', 'whisper-*', '(other)'].includes(m as string))).toBe(true);
      expect(models.has('gpt-*')).toBe(true);
      expect(text).not.toContain('gpt-client-');
      expect(text).not.toContain('made-up-');
      expect(text.length).toBeLessThan(100_000);
      const usage = async () => {
        const rows = await fetch(`${proxy.base}/internal/usage?by=model&since=1h`, { headers: auth('operator') });
        return ((await rows.json()) as { rows: { group: string; requests: number }[] }).rows;
      };
      // Usage is written once a second.
      await expect
        .poll(async () => (await usage()).find((r) => r.group === '(other)')?.requests, { timeout: 5_000 })
        .toBe(100);
      const groups = (await usage()).map((r) => r.group);
      expect(groups.every((g) => ['gpt-*', 'whisper-*', '(other)'].includes(g))).toBe(true);
    });
  });
});
