import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadProxyConfig, loadUsageSettings } from '../../../../src/proxy/config/index.ts';
import { configFailure } from '../../../support/config-failure.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-state-config-'));
let files = 0;

function file(content: unknown): string {
  const name = path.join(dir, `config-${files++}.json`);
  writeFileSync(name, JSON.stringify(content));
  return name;
}

const load = (state: Record<string, unknown> | undefined, env: Record<string, string> = {}) =>
  loadProxyConfig({ argv: state ? ['--config', file({ proxy: { state } })] : [], env, cwd: dir });

describe('proxy.state', () => {
  it('defaults to this process memory, failing open, with a 500 ms command timeout', () => {
    expect(load(undefined).state).toEqual({
      backend: 'memory',
      redisUrl: undefined,
      keyPrefix: 'gatehouse:',
      onUnavailable: 'allow',
      commandTimeoutMs: 500,
    });
  });

  it('reads the file, and env vars over it', () => {
    const state = { backend: 'redis', redis_url: 'redis://a:6379/1', on_unavailable: 'deny', command_timeout: '2s' };
    expect(load(state).state).toEqual({
      backend: 'redis',
      redisUrl: 'redis://a:6379/1',
      keyPrefix: 'gatehouse:',
      onUnavailable: 'deny',
      commandTimeoutMs: 2_000,
    });
    const env = {
      PROXY_STATE_BACKEND: 'redis',
      PROXY_REDIS_URL: 'rediss://user:secret@b:6380',
      PROXY_REDIS_KEY_PREFIX: 'team-a:',
      PROXY_STATE_ON_UNAVAILABLE: 'allow',
    };
    expect(load({ backend: 'memory' }, env).state).toMatchObject({
      backend: 'redis',
      redisUrl: 'rediss://user:secret@b:6380',
      keyPrefix: 'team-a:',
      onUnavailable: 'allow',
    });
  });

  it('needs a Redis URL with backend redis, and says where to put it', () => {
    expect(configFailure(() => load({ backend: 'redis' }))).toMatch(/proxy\.state\.redis_url: .*PROXY_REDIS_URL/);
  });

  it.each([
    [{ backend: 'valkey' }, 'proxy.state.backend'],
    [{ backend: 'redis', redis_url: 'http://redis:6379' }, 'proxy.state.redis_url'],
    [{ backend: 'redis', redis_url: 'not a url' }, 'proxy.state.redis_url'],
    [{ key_prefix: '' }, 'proxy.state.key_prefix'],
    [{ key_prefix: 'a b' }, 'proxy.state.key_prefix'],
    [{ on_unavailable: 'maybe' }, 'proxy.state.on_unavailable'],
    [{ command_timeout: 0 }, 'proxy.state.command_timeout'],
    [{ command_timeout: 'soon' }, 'proxy.state.command_timeout'],
    [{ redis: 'redis://a' }, 'proxy.state.redis'],
  ])('refuses %j naming %s', (state, key) => {
    expect(configFailure(() => load(state))).toContain(key);
  });

  it('refuses a bad value from the environment, naming the key', () => {
    expect(configFailure(() => load(undefined, { PROXY_STATE_ON_UNAVAILABLE: 'open' }))).toContain(
      'proxy.state.on_unavailable',
    );
  });

  it('warns when a Redis URL is set for the memory backend', () => {
    expect(load({ redis_url: 'redis://a:6379' }).warnings).toContainEqual(
      expect.stringContaining('proxy.state.redis_url is set but proxy.state.backend is memory'),
    );
  });
});

describe('loadUsageSettings', () => {
  it('reads proxy.usage and proxy.state of the file and the env, and nothing else of it', () => {
    const config = file({
      proxy: {
        usage: { db: 'usage.db' },
        state: { backend: 'redis', redis_url: 'redis://r:6379' },
        // Only the proxy's environment has this variable: gatehouse usage does not need it.
        upstreams: [{ name: 'x', protocol: 'openai', base_url: 'https://x/v1', api_key_env: 'UNSET', models: ['*'] }],
      },
    });
    expect(loadUsageSettings({ argv: ['--config', config], env: {}, cwd: dir })).toEqual({
      dbPath: path.join(dir, 'usage.db'),
      state: expect.objectContaining({ backend: 'redis', redisUrl: 'redis://r:6379', keyPrefix: 'gatehouse:' }),
    });
    const env = { PROXY_CONFIG: config, PROXY_REDIS_KEY_PREFIX: 'b:', PROXY_USAGE_DB: '/u.db' };
    expect(loadUsageSettings({ argv: [], env, cwd: dir })).toMatchObject({
      dbPath: '/u.db',
      state: { keyPrefix: 'b:' },
    });
  });

  it('refuses a bad state setting naming the key', () => {
    expect(
      configFailure(() => loadUsageSettings({ argv: [], env: { PROXY_STATE_BACKEND: 'redis' }, cwd: dir })),
    ).toContain('proxy.state.redis_url');
  });
});
