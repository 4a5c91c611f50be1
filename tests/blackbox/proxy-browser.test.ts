// Issue 15, items 1-3: what a hostile web page in the user's own browser can
// do with the proxy, reproduced against the built image, and refused.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeUpstream } from '../support/fake-upstream.ts';
import { IMAGE } from '../support/image.ts';
import { HOST_FROM_CONTAINER, startProxyContainer, type ProxyContainer } from '../support/proxy-container.ts';
import { rawRequest, rawRequestScript, type RawRequestOptions } from '../support/raw-http.ts';

const run = promisify(execFile);
const KEY = 'browser-suite-proxy-key-0123';
const UPSTREAM_KEY = 'browser-suite-upstream-key';
const APP = 'http://app.example';
const EVIL = 'http://evil.example';
const CHAT = { model: 'gpt-fake-1', messages: [{ role: 'user', content: 'hi' }] };

const corsHeaders = (headers: Record<string, unknown>) =>
  Object.keys(headers).filter((h) => h.startsWith('access-control-'));

describe('proxy with LAN access (keys required): browsers and hosts', () => {
  let fake: FakeUpstream;
  let proxy: ProxyContainer;

  beforeAll(async () => {
    fake = await FakeUpstream.start({ host: '0.0.0.0' });
    proxy = await startProxyContainer(
      {
        proxy: {
          allow_lan_access: true,
          cors: { allowed_origins: [APP] },
          upstreams: [
            {
              name: 'oa',
              protocol: 'openai',
              base_url: `http://${HOST_FROM_CONTAINER}:${fake.port}/openai/v1`,
              api_key: UPSTREAM_KEY,
              models: ['gpt-*'],
            },
          ],
        },
      },
      { PROXY_API_KEY: KEY },
    );
  });
  afterAll(async () => {
    await (proxy as ProxyContainer | undefined)?.stop();
    await (fake as FakeUpstream | undefined)?.close();
  });

  it("refuses another site's simple POST (text/plain): 403, no CORS header, nothing sent upstream", async () => {
    const before = fake.requests.length;
    const res = await rawRequest(`${proxy.base}/v1/chat/completions?key=${KEY}`, {
      method: 'POST',
      headers: { origin: EVIL, 'content-type': 'text/plain' },
      body: JSON.stringify(CHAT),
    });
    expect(res.status).toBe(403);
    expect(JSON.parse(res.text)).toEqual({
      error: {
        message: expect.stringContaining('proxy.cors.allowed_origins'),
        type: 'invalid_request_error',
        param: null,
        code: 'origin_not_allowed',
      },
    });
    expect(corsHeaders(res.headers)).toEqual([]);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(fake.requests.length).toBe(before);
  });

  it("answers another site's preflight with 403 and no CORS header, an allowed origin's with SDK headers", async () => {
    const ask = (origin: string) =>
      rawRequest(`${proxy.base}/v1/messages`, {
        method: 'OPTIONS',
        headers: {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'x-api-key,content-type,x-evil',
        },
      });
    const refused = await ask(EVIL);
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.text)).toMatchObject({ type: 'error', error: { type: 'permission_error' } });
    expect(corsHeaders(refused.headers)).toEqual([]);

    const granted = await ask(APP);
    expect(granted.status).toBe(204);
    expect(granted.headers['access-control-allow-origin']).toBe(APP);
    const allowed = String(granted.headers['access-control-allow-headers']).split(',');
    expect(allowed).toEqual(expect.arrayContaining(['x-api-key', 'content-type', 'authorization']));
    expect(allowed).not.toContain('x-evil');
  });

  it("serves an allowed origin; cookies, Origin, Referer, the proxy's key (any spelling) stay here", async () => {
    const query = `ke%79=${KEY}&KEY=${KEY}&key=${KEY}&trace=1`;
    const res = await rawRequest(`${proxy.base}/v1/chat/completions?${query}`, {
      method: 'POST',
      headers: {
        origin: APP,
        referer: `${APP}/page`,
        cookie: 'session=secret-cookie',
        'content-type': 'application/json',
      },
      body: JSON.stringify(CHAT),
    });
    expect(res.status).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe(APP);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    const seen = fake.last('/chat/completions');
    expect(seen.headers.cookie).toBeUndefined();
    expect(seen.headers.origin).toBeUndefined();
    expect(seen.headers.referer).toBeUndefined();
    expect(seen.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
    expect([...seen.query.keys()]).toEqual(['trace']);
    expect(JSON.stringify([...seen.query.values()])).not.toContain(KEY);
  });

  it('keyed requests take any Host (LAN names); a keyless one (/healthz here) only loopback names', async () => {
    const models = await rawRequest(`${proxy.base}/v1/models`, {
      headers: { host: 'my-desktop.lan', authorization: `Bearer ${KEY}` },
    });
    expect(models.status).toBe(200);
    const rebound = await rawRequest(`${proxy.base}/healthz`, { headers: { host: 'evil.example' } });
    expect(rebound.status).toBe(403);
    expect(JSON.parse(rebound.text)).toEqual({ error: expect.stringMatching(/"evil\.example".*proxy\.allowed_hosts/) });
    expect((await rawRequest(`${proxy.base}/healthz`)).status).toBe(200);
  });
});

describe('proxy on loopback with no key (auth_mode auto): DNS rebinding', () => {
  let proxy: ProxyContainer;
  beforeAll(async () => {
    proxy = await startProxyContainer({ proxy: { allowed_hosts: ['proxy.lan'] } });
  });
  afterAll(async () => {
    await (proxy as ProxyContainer | undefined)?.stop();
  });

  /** From inside the container: the proxy binds 127.0.0.1 there. */
  async function inside(path: string, options: RawRequestOptions = {}): Promise<string> {
    const script = rawRequestScript(`http://127.0.0.1:8045${path}`, options);
    const { output, exitCode } = await proxy.container.exec(['node', '-e', script]);
    expect(exitCode).toBe(0);
    return output.trim();
  }

  it('a page rebound to 127.0.0.1 gets 403 naming the setting; loopback and allowed hosts are served', async () => {
    const rebound = await inside('/v1/chat/completions', {
      method: 'POST',
      headers: { host: 'evil.example:8045', 'content-type': 'text/plain' },
      body: JSON.stringify(CHAT),
    });
    expect(rebound).toMatch(/^403 nosniff \{"error":\{"message":"Host \\"evil\.example:8045\\" is not served/);
    expect(rebound).toContain('proxy.allowed_hosts');
    const evil = { headers: { host: 'evil.example' } };
    expect(await inside('/v1/models', evil)).toMatch(/^403 nosniff .*"code":"host_not_allowed"/);
    expect(await inside('/v1beta/models', evil)).toMatch(/^403 nosniff .*"status":"PERMISSION_DENIED"/);
    for (const host of ['localhost:8045', '127.0.0.1:8045', '[::1]:8045', 'proxy.lan:8045']) {
      expect(await inside('/v1/models', { headers: { host } })).toBe('200 nosniff {"object":"list","data":[]}');
    }
  });

  it("refuses another site's POST even with a loopback Host", async () => {
    const answer = await inside('/v1/chat/completions', {
      method: 'POST',
      headers: { origin: EVIL, 'content-type': 'text/plain' },
      body: JSON.stringify(CHAT),
    });
    expect(answer).toMatch(/^403 nosniff .*"code":"origin_not_allowed"/);
  });
});

describe('unsafe browser and key settings refuse to start', () => {
  async function start(env: string[]): Promise<{ code: number; stderr: string }> {
    try {
      await run('docker', ['run', '--rm', ...env.flatMap((e) => ['-e', e]), IMAGE, 'proxy'], { timeout: 30_000 });
      return { code: 0, stderr: '' };
    } catch (error) {
      const e = error as { code: number; stderr: string };
      return { code: e.code, stderr: e.stderr };
    }
  }

  it.each([
    [['PROXY_AUTH_MODE=strict', 'PROXY_API_KEY= '], /proxy\.api_key: PROXY_API_KEY must not be blank/],
    [['PROXY_AUTH_MODE=strict', 'PROXY_API_KEY= padded-key-0123'], /proxy\.api_key: .* begin or end with whitespace/],
    [['PROXY_ALLOW_LAN_ACCESS=true', 'PROXY_API_KEY=short-key'], /proxy\.api_key: .* at least 16 characters/],
    [['PROXY_CORS_ALLOWED_ORIGINS=*'], /proxy\.cors\.allowed_origins\[0\]: \* lets any web page use the proxy/],
    [['PROXY_CORS_ALLOWED_ORIGINS=http://app.example/path'], /proxy\.cors\.allowed_origins\[0\]: must be an origin/],
  ])('%j', async (env, message) => {
    const { code, stderr } = await start(env);
    expect(code).not.toBe(0);
    expect(stderr).toMatch(message);
  });
});
