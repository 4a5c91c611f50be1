import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadProxyConfig } from '../../../../src/proxy/config/index.ts';
import { configFailure } from '../../../support/config-failure.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-keys-config-'));
let files = 0;
const sha = (key: string) => createHash('sha256').update(key).digest('hex');
const ALICE = 'alice-key-0123456789';

function load(proxy: Record<string, unknown>, env: Record<string, string> = { ALICE_KEY: ALICE }, ext = 'json') {
  const file = path.join(dir, `c-${files++}.${ext}`);
  writeFileSync(file, typeof proxy === 'string' ? proxy : JSON.stringify({ proxy }));
  return loadProxyConfig({ argv: ['--config', file], env, cwd: dir });
}

describe('proxy.keys', () => {
  it('resolves each key to its digest, with its limits; key_env is read from the env passed in', () => {
    const config = load({
      auth_mode: 'strict',
      keys: [
        {
          name: 'alice',
          key_env: 'ALICE_KEY',
          models: ['claude-*'],
          mcp_servers: ['git*'],
          rpm: 10,
          tpm: 1000,
          admin: true,
        },
        {
          name: 'ci',
          key_sha256: sha('ci-key').toUpperCase(),
          budget_tokens: 5000,
          budget_usd: 12.5,
          budget_period: 'month',
          expires_at: '2027-01-31T00:00:00Z',
          disabled: true,
        },
      ],
    });
    expect(config.apiKey).toBe('');
    expect(config.keys).toEqual([
      {
        name: 'alice',
        sha256: sha(ALICE),
        models: ['claude-*'],
        mcpServers: ['git*'],
        rpm: 10,
        tpm: 1000,
        budget: undefined,
        budgetUsd: undefined,
        expiresAt: undefined,
        disabled: false,
        admin: true,
      },
      {
        name: 'ci',
        sha256: sha('ci-key'),
        models: undefined,
        mcpServers: undefined,
        rpm: undefined,
        tpm: undefined,
        budget: { tokens: 5000, period: 'month' },
        budgetUsd: { usd: 12.5, period: 'month' },
        expiresAt: Date.UTC(2027, 0, 31),
        disabled: true,
        admin: false,
      },
    ]);
  });

  it('reads an unquoted YAML timestamp as expires_at', () => {
    const yaml = 'proxy:\n  keys:\n    - name: a\n      key_env: ALICE_KEY\n      expires_at: 2027-01-31T00:00:00Z\n';
    expect(load(yaml as never, undefined, 'yaml').keys[0]?.expiresAt).toBe(Date.UTC(2027, 0, 31));
  });

  it('needs a key of some kind when auth is on: proxy.keys is enough', () => {
    expect(configFailure(() => load({ auth_mode: 'strict' }))).toMatch(/proxy\.api_key: auth_mode strict needs a key/);
    expect(load({ allow_lan_access: true, keys: [{ name: 'a', key_env: 'ALICE_KEY' }] }).keys).toHaveLength(1);
  });

  it.each([
    [[{ key_env: 'ALICE_KEY' }], 'proxy.keys[0].name: must be a non-empty string'],
    [[{ name: 'a' }], 'proxy.keys[0]: needs exactly one of key_env'],
    [[{ name: 'a', key_env: 'ALICE_KEY', key_sha256: sha('x') }], 'proxy.keys[0]: needs exactly one of key_env'],
    [[{ name: 'a', key: 'plain' }], 'proxy.keys[0].key: is not a setting of a key'],
    [[{ name: 'a', key_sha256: 'abc' }], 'proxy.keys[0].key_sha256: must be 64 hexadecimal digits'],
    [[{ name: 'a', key_env: 'UNSET_VAR' }], 'proxy.keys[0].key_env: environment variable UNSET_VAR is not set'],
    [[{ name: 'a', key_env: 'ALICE_KEY', rpm: 0 }], 'proxy.keys[0].rpm: must be a positive integer'],
    [[{ name: 'a', key_env: 'ALICE_KEY', tpm: 'lots' }], 'proxy.keys[0].tpm: must be a positive integer'],
    [[{ name: 'a', key_env: 'ALICE_KEY', models: [] }], 'proxy.keys[0].models: must be a non-empty list'],
    [[{ name: 'a', key_env: 'ALICE_KEY', budget_tokens: 5 }], 'proxy.keys[0].budget_period: budget_period goes with'],
    [[{ name: 'a', key_env: 'ALICE_KEY', budget_usd: 5 }], 'proxy.keys[0].budget_period: budget_period goes with'],
    [[{ name: 'a', key_env: 'ALICE_KEY', budget_period: 'day' }], 'proxy.keys[0].budget_period: budget_period goes'],
    [[{ name: 'a', key_env: 'ALICE_KEY', budget_usd: -1 }], 'proxy.keys[0].budget_usd: must be a positive number'],
    [[{ name: 'a', key_env: 'ALICE_KEY', budget_usd: '$5' }], 'proxy.keys[0].budget_usd: must be a positive number'],
    [[{ name: 'a', key_env: 'ALICE_KEY', budget_period: 'week' }], 'proxy.keys[0].budget_period: must be one of'],
    [[{ name: 'a', key_env: 'ALICE_KEY', expires_at: 'next year' }], 'proxy.keys[0].expires_at: must be an ISO'],
    [[{ name: 'a', key_env: 'ALICE_KEY', expires_at: '2027-01-31T00:00' }], 'proxy.keys[0].expires_at: must be'],
    [[{ name: 'a', key_env: 'ALICE_KEY', admin: 'yes please' }], 'proxy.keys[0].admin: must be true or false'],
    [[{ name: 'default', key_env: 'ALICE_KEY' }], 'proxy.keys[0].name: "default" is the name of proxy.api_key'],
    [
      [
        { name: 'a', key_env: 'ALICE_KEY' },
        { name: 'a', key_sha256: sha('other') },
      ],
      'proxy.keys[1].name: "a" is used by an earlier key',
    ],
    [
      [
        { name: 'a', key_env: 'ALICE_KEY' },
        { name: 'b', key_sha256: sha(ALICE) },
      ],
      'proxy.keys[1]: is the same key as "a"',
    ],
    ['alice', 'proxy.keys[0]: must be an object (a key)'],
  ])('%j is a startup error naming the key', (keys, message) => {
    expect(configFailure(() => load({ keys }))).toContain(`invalid configuration: ${message}`);
  });

  it('applies the api_key rules to a key read from the env, and never prints it', () => {
    const message = configFailure(() =>
      load({ allow_lan_access: true, keys: [{ name: 'a', key_env: 'SHORT' }] }, { SHORT: 'short-key' }),
    );
    expect(message).toContain('proxy.keys[0].key_env: SHORT must be at least 16 characters');
    expect(message).not.toContain('short-key');
    expect(configFailure(() => load({ keys: [{ name: 'a', key_env: 'PAD' }] }, { PAD: ' padded ' }))).toContain(
      'PAD must not be blank or begin or end with whitespace',
    );
  });

  it('warns that off mode checks none of them', () => {
    expect(load({ auth_mode: 'off', keys: [{ name: 'a', key_env: 'ALICE_KEY' }] }).warnings).toContainEqual(
      expect.stringContaining('proxy.keys are set but auth_mode resolves to off'),
    );
  });
});
