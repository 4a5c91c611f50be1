import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { CommandContext } from '../../../src/command.ts';
import { loadProxyConfig } from '../../../src/proxy/config/index.ts';
import { KeyRing } from '../../../src/proxy/keys.ts';
import { runKeys } from '../../../src/proxy/keys-command.ts';
import { capture } from '../../support/review.ts';

function context(argv: string[]) {
  const stdout = capture();
  const ctx: CommandContext = {
    argv,
    env: {},
    cwd: tmpdir(),
    stdin: Readable.from([]),
    stdout,
    stderr: capture(),
    shutdown: new AbortController().signal,
  };
  return { ctx, stdout };
}

async function keysNew(...argv: string[]): Promise<{ key: string; block: string; stdout: string }> {
  const { ctx, stdout } = context(['new', ...argv]);
  expect(await runKeys(ctx)).toBe(0);
  const text = stdout.text();
  const key = /^gh-[\w-]{32}$/m.exec(text)?.[0] ?? '';
  // The entry: the lines indented to sit under `  keys:` in proxy.yaml.
  const block = text
    .split('\n')
    .filter((line) => line.startsWith('    '))
    .join('\n');
  return { key, block, stdout: text };
}

describe('gatehouse keys new', () => {
  it('prints a fresh key once and an entry with its digest that the proxy reads as that key', async () => {
    const { key, block, stdout } = await keysNew('alice', '--models', 'claude-*,gpt-5*', '--rpm', '60', '--admin');
    expect(stdout.split(key)).toHaveLength(2);
    expect(parse(block)).toEqual([
      {
        name: 'alice',
        key_sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
        models: ['claude-*', 'gpt-5*'],
        rpm: 60,
        admin: true,
      },
    ]);
    const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-keys-'));
    const file = path.join(dir, 'proxy.yaml');
    writeFileSync(file, `proxy:\n  allow_lan_access: true\n  keys:\n${block}\n`);
    const config = loadProxyConfig({ argv: ['--config', file], env: {}, cwd: dir });
    const found = new KeyRing('', config.keys).find([key], Date.now());
    expect(found).toMatchObject({ name: 'alice', rpm: 60, admin: true });
    expect(new KeyRing('', config.keys).find([`${key}x`], Date.now())).toBeUndefined();
  });

  it('makes another key each time, of 32 base64url characters after gh-', async () => {
    const keys = new Set(await Promise.all(Array.from({ length: 20 }, async () => (await keysNew('bob')).key)));
    expect(keys.size).toBe(20);
    for (const key of keys) expect(key).toMatch(/^gh-[A-Za-z0-9_-]{32}$/);
  });

  it('writes only the settings given, budget and expiry included', async () => {
    const { block } = await keysNew(
      'ci',
      '--budget-tokens',
      '1000000',
      '--budget-period',
      'day',
      '--budget-usd=12.5',
      '--tpm=5000',
      '--expires-at',
      '2027-03-31T00:00:00Z',
    );
    expect(parse(block)).toEqual([
      {
        name: 'ci',
        key_sha256: expect.any(String),
        tpm: 5000,
        budget_tokens: 1000000,
        budget_usd: 12.5,
        budget_period: 'day',
        expires_at: '2027-03-31T00:00:00Z',
      },
    ]);
  });

  it.each([
    [[], 'usage: gatehouse keys new NAME'],
    [['old', 'x'], 'usage: gatehouse keys new NAME'],
    [['new', 'a', 'b'], 'usage: gatehouse keys new NAME'],
    [['new', 'a b'], 'NAME: uses letters, digits'],
    [['new', 'default'], 'NAME: "default" is the name of proxy.api_key'],
    [['new', 'x', '--rpm', '0'], '--rpm: must be a positive integer'],
    [['new', 'x', '--rpm', 'lots'], '--rpm: must be a positive integer'],
    [['new', 'x', '--budget-tokens', '5'], '--budget-period: budget_period goes with budget_tokens or budget_usd'],
    [['new', 'x', '--budget-usd', '$5', '--budget-period', 'day'], '--budget-usd: must be a positive number'],
    [['new', 'x', '--budget-tokens', '5', '--budget-period', 'week'], '--budget-period: must be one of day, month'],
    [['new', 'x', '--expires-at', 'tomorrow'], '--expires-at: must be an ISO 8601 date'],
    [['new', 'x', '--wat'], "Unknown option '--wat'"],
  ])('%j fails with a clear message and prints no key', async (argv, message) => {
    const { ctx, stdout } = context(argv);
    await expect(runKeys(ctx)).rejects.toThrow(message);
    expect(stdout.text()).toBe('');
  });
});
