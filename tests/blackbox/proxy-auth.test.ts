import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IMAGE } from '../support/image.ts';
import { startProxyContainer, type ProxyContainer } from '../support/proxy-container.ts';

const KEY = 'the-right-key-0123456789';
const WRONG = 'the-wrong-key-0123456789';
const run = promisify(execFile);

type Credential = 'bearer' | 'x-api-key' | 'x-goog-api-key' | 'key-param' | 'none';
const CREDENTIALS: Credential[] = ['bearer', 'x-api-key', 'x-goog-api-key', 'key-param'];

const UNAUTHORIZED = {
  openai: {
    error: { message: expect.any(String), type: 'invalid_request_error', param: null, code: 'invalid_api_key' },
  },
  anthropic: { type: 'error', error: { type: 'authentication_error', message: expect.any(String) } },
  gemini: { error: { code: 401, message: expect.any(String), status: 'UNAUTHENTICATED' } },
  other: { error: expect.any(String) },
};

/**
 * One path of each family, and the 401 body that family answers with. On
 * `/v1/models`, which every SDK calls, a Gemini-style credential means a
 * Gemini client.
 */
const PATHS: { path: string; method?: string; unauthorized: (credential: Credential) => unknown }[] = [
  {
    path: '/v1/models',
    unauthorized: (c) => (c === 'x-goog-api-key' || c === 'key-param' ? UNAUTHORIZED.gemini : UNAUTHORIZED.openai),
  },
  { path: '/v1/models/claude', unauthorized: () => UNAUTHORIZED.anthropic },
  { path: '/v1beta/models', unauthorized: () => UNAUTHORIZED.gemini },
  { path: '/v1/api/event_logging', method: 'POST', unauthorized: () => UNAUTHORIZED.other },
];

function request(credential: Credential, key: string): { query: string; headers: Record<string, string> } {
  switch (credential) {
    case 'bearer':
      return { query: '', headers: { authorization: `Bearer ${key}` } };
    case 'x-api-key':
      return { query: '', headers: { 'x-api-key': key } };
    case 'x-goog-api-key':
      return { query: '', headers: { 'x-goog-api-key': key } };
    case 'key-param':
      return { query: `?key=${key}`, headers: {} };
    case 'none':
      return { query: '', headers: {} };
  }
}

async function call(
  base: string,
  path: string,
  credential: Credential,
  key = KEY,
  method = 'GET',
): Promise<{ status: number; body: unknown }> {
  const { query, headers } = request(credential, key);
  const res = await fetch(`${base}${path}${query}`, {
    method,
    headers: { ...headers, 'content-type': 'application/json' },
    ...(method === 'POST' ? { body: '{}' } : {}),
  });
  return { status: res.status, body: await res.json() };
}

/** The modes whose proxy is reachable from outside its container (LAN access on). */
describe.each([
  { mode: 'strict', healthNeedsKey: true },
  { mode: 'all_except_health', healthNeedsKey: false },
  { mode: 'auto', healthNeedsKey: false },
])('auth_mode $mode with allow_lan_access', ({ mode, healthNeedsKey }) => {
  let proxy: ProxyContainer;
  beforeAll(async () => {
    // Browsers from any origin, as keys are required (the preflight test below).
    const config = { proxy: { auth_mode: mode, cors: { allowed_origins: ['*'] } } };
    proxy = await startProxyContainer(config, { PROXY_API_KEY: KEY, PROXY_ALLOW_LAN_ACCESS: 'true' });
  });
  afterAll(async () => {
    await (proxy as ProxyContainer | undefined)?.stop();
  });

  it.each(CREDENTIALS)('the right key in %s opens every path, /healthz included', async (credential) => {
    expect(await call(proxy.base, '/healthz', credential)).toEqual({ status: 200, body: { status: 'ok' } });
    for (const { path, method } of PATHS)
      expect((await call(proxy.base, path, credential, KEY, method)).status).toBe(200);
  });

  it.each([...CREDENTIALS, 'none' as const])(
    "a wrong or missing key in %s → 401 in each family's shape",
    async (credential) => {
      for (const { path, method, unauthorized } of PATHS) {
        expect(await call(proxy.base, path, credential, WRONG, method)).toEqual({
          status: 401,
          body: unauthorized(credential),
        });
      }
      const health = await call(proxy.base, '/healthz', credential, WRONG);
      expect(health).toEqual(
        healthNeedsKey ? { status: 401, body: { error: expect.any(String) } } : { status: 200, body: { status: 'ok' } },
      );
    },
  );

  it('a key that is a prefix of the right one is refused', async () => {
    expect((await call(proxy.base, '/v1/models', 'bearer', KEY.slice(0, -1))).status).toBe(401);
  });

  it('OPTIONS passes without a key (CORS preflight answered)', async () => {
    const res = await fetch(`${proxy.base}/v1/chat/completions`, {
      method: 'OPTIONS',
      headers: {
        origin: 'http://localhost:3000',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,content-type',
      },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-headers')).toContain('authorization');
  });
});

/**
 * Without LAN access the proxy binds 127.0.0.1 inside its container, so these
 * requests are made from inside it.
 */
describe.each([
  { mode: 'off', key: KEY },
  { mode: 'auto', key: '' },
])('auth_mode $mode on loopback (no key needed)', ({ mode, key }) => {
  let proxy: ProxyContainer;
  beforeAll(async () => {
    proxy = await startProxyContainer({ proxy: { auth_mode: mode } }, key ? { PROXY_API_KEY: key } : {});
  });
  afterAll(async () => {
    await (proxy as ProxyContainer | undefined)?.stop();
  });

  async function inside(path: string, headers: Record<string, string> = {}): Promise<string> {
    const script = `fetch('http://127.0.0.1:8045${path}', { headers: ${JSON.stringify(headers)} }).then(async (r) => console.log(r.status, await r.text()))`;
    const { output, exitCode } = await proxy.container.exec(['node', '-e', script]);
    expect(exitCode).toBe(0);
    return output.trim();
  }

  it('every path answers without a key, and with a wrong one', async () => {
    expect(await inside('/healthz')).toBe('200 {"status":"ok"}');
    expect(await inside('/v1/models')).toBe('200 {"object":"list","data":[]}');
    expect(await inside('/v1beta/models', { 'x-goog-api-key': WRONG })).toBe('200 {"models":[]}');
  });

  it('is not reachable from outside the container', async () => {
    await expect(fetch(`${proxy.base}/healthz`, { signal: AbortSignal.timeout(3_000) })).rejects.toThrow();
  });
});

describe('unsafe configurations refuse to start', () => {
  async function start(env: string[]): Promise<{ code: number; stderr: string }> {
    const args = ['run', '--rm', ...env.flatMap((e) => ['-e', e]), IMAGE, 'proxy'];
    try {
      await run('docker', args, { timeout: 30_000 });
      return { code: 0, stderr: '' };
    } catch (error) {
      const e = error as { code: number; stderr: string };
      return { code: e.code, stderr: e.stderr };
    }
  }

  it.each([
    [['PROXY_AUTH_MODE=strict'], /proxy\.api_key: auth_mode strict needs a key/],
    [['PROXY_AUTH_MODE=all_except_health'], /proxy\.api_key: auth_mode all_except_health needs a key/],
    [['PROXY_ALLOW_LAN_ACCESS=true'], /proxy\.api_key: auth_mode auto \(with allow_lan_access\) needs a key/],
    [
      ['PROXY_AUTH_MODE=off', 'PROXY_ALLOW_LAN_ACCESS=true', `PROXY_API_KEY=${KEY}`],
      /proxy\.auth_mode: off with allow_lan_access true/,
    ],
    [['PROXY_AUTH_MODE=sometimes'], /proxy\.auth_mode: must be one of the possible values/],
    [['PROXY_PORT=99999'], /proxy\.port/],
  ])('%j → exit 1 naming the key', async (env, message) => {
    const { code, stderr } = await start(env);
    expect(code).toBe(1);
    expect(stderr).toMatch(message);
    expect(stderr).not.toContain(KEY);
  });
});
