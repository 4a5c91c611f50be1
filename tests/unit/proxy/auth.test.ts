import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EffectiveAuthMode } from '../../../src/proxy/config/index.ts';
import { errorHandler } from '../../../src/http/middleware.ts';
import { createLogger } from '../../../src/log.ts';
import { KeyRing } from '../../../src/proxy/keys.ts';
import { authenticate, keyRule, needsKey } from '../../../src/proxy/auth.ts';
import { ClientCredentials } from '../../../src/proxy/credentials.ts';
import { Families } from '../../../src/proxy/families.ts';
import { PROTOCOLS } from '../../../src/proxy/protocols/registry.ts';

const KEY = 'sk-proxy-0123456789';

describe("needsKey: the spec's table", () => {
  it.each([
    ['off', false, false],
    ['strict', true, true],
    ['all_except_health', false, true],
  ] as const)('%s: /healthz %s, other paths %s', (mode, health, other) => {
    expect(needsKey(mode, '/healthz')).toBe(health);
    for (const path of [
      '/v1/chat/completions',
      '/v1/messages',
      '/v1beta/models',
      '/internal/warmup',
      '/mcp/x/mcp',
      '/healthz/',
      '/v1/api/event_logging',
    ]) {
      expect(needsKey(mode, path)).toBe(other);
    }
  });
});

describe('keyRule', () => {
  it('leaves the open paths keyless, and only where the mode needs a key at all', () => {
    const keyed = keyRule('strict', ['/metrics']);
    expect([keyed('/metrics'), keyed('/metrics/'), keyed('/internal/usage'), keyed('/v1/messages')]).toEqual([
      false,
      true,
      true,
      true,
    ]);
    expect(keyRule('all_except_health', ['/metrics'])('/healthz')).toBe(false);
    expect(keyRule('off', [])('/metrics')).toBe(false);
  });
});

describe('authenticate', () => {
  const servers: Record<string, { server: Server; base: string }> = {};

  beforeAll(async () => {
    for (const mode of ['off', 'strict', 'all_except_health'] as EffectiveAuthMode[]) {
      const app = new Koa();
      app
        .use(errorHandler(new Families(PROTOCOLS).render, createLogger('silent')))
        .use(authenticate(keyRule(mode), new KeyRing(KEY, []), new ClientCredentials(PROTOCOLS)))
        .use((ctx) => {
          ctx.body = { ok: true };
        });
      const server = app.listen(0, '127.0.0.1');
      await new Promise((resolve) => server.once('listening', resolve));
      servers[mode] = { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
    }
  });
  afterAll(() => {
    for (const { server } of Object.values(servers)) server.close();
  });

  const status = async (mode: string, path: string, init: RequestInit = {}) =>
    (await fetch(`${servers[mode]?.base}${path}`, init)).status;

  it.each([
    ['Authorization: Bearer', { authorization: `Bearer ${KEY}` }, ''],
    ['authorization: bearer (any case)', { authorization: `bearer ${KEY}` }, ''],
    ['x-api-key', { 'x-api-key': KEY }, ''],
    ['x-goog-api-key', { 'x-goog-api-key': KEY }, ''],
    ['the key query parameter', {}, `?alt=sse&key=${encodeURIComponent(KEY)}`],
    ['one right key among wrong ones', { authorization: 'Bearer nope', 'x-api-key': KEY }, ''],
  ])('strict accepts %s', async (_name, headers, query) => {
    expect(await status('strict', `/v1/chat/completions${query}`, { headers })).toBe(200);
  });

  it.each([
    ['no key', {}, ''],
    ['a wrong Bearer', { authorization: 'Bearer sk-proxy-012345678' }, ''],
    ['the key without Bearer', { authorization: KEY }, ''],
    ['Basic auth', { authorization: `Basic ${Buffer.from(`x:${KEY}`).toString('base64')}` }, ''],
    ['a longer key', { 'x-api-key': `${KEY}0` }, ''],
    ['an empty key parameter', {}, '?key='],
    ['the key in another parameter', {}, `?api_key=${KEY}`],
  ])("strict refuses %s with a 401 in the family's shape", async (_name, headers, query) => {
    const res = await fetch(`${servers['strict']?.base}/v1/messages${query}`, { headers });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({
      type: 'error',
      error: { type: 'authentication_error', message: 'Invalid or missing API key' },
    });
  });

  it('OPTIONS always passes', async () => {
    expect(await status('strict', '/v1/chat/completions', { method: 'OPTIONS' })).toBe(200);
  });

  it('all_except_health leaves only /healthz open; off leaves everything open', async () => {
    expect(await status('all_except_health', '/healthz')).toBe(200);
    expect(await status('all_except_health', '/v1/models')).toBe(401);
    expect(await status('strict', '/healthz')).toBe(401);
    expect(await status('off', '/v1/models')).toBe(200);
    expect(await status('off', '/healthz', { headers: { authorization: 'Bearer wrong' } })).toBe(200);
  });
});
