import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { GuessLimiter, TokenSet, WRONG_TOKENS_PER_MINUTE } from '../../../src/hub/access.ts';
import { loadHubConfig } from '../../../src/config/hub.ts';

describe('TokenSet', () => {
  it('matches whole tokens only, whatever their length', () => {
    const tokens = new TokenSet(['alpha-token', 'b']);
    expect(tokens.has('alpha-token')).toBe(true);
    expect(tokens.has('b')).toBe(true);
    for (const guess of ['alpha', 'alpha-token ', 'alpha-tokenx', '', 'B']) {
      expect(tokens.has(guess), guess).toBe(false);
    }
    expect(new TokenSet([]).empty).toBe(true);
  });

  it('tells the name a token was listed with, and knows a listed token by its digest', () => {
    const tokens = new TokenSet([{ name: 'alice', token: 'alice-token' }, 'plain-token']);
    expect(tokens.find('alice-token')).toBe('alice');
    expect(tokens.find('plain-token')).toBe('');
    expect(tokens.find('alice')).toBeUndefined();
    expect(tokens.hasDigest(createHash('sha256').update('alice-token').digest('hex'))).toBe(true);
    expect(tokens.hasDigest(createHash('sha256').update('gone').digest('hex'))).toBe(false);
    expect(tokens.hasDigest('not hex')).toBe(false);
  });
});

describe('GuessLimiter', () => {
  it('refuses a client past its wrong tokens per minute with the wait, others not, and forgets after a minute', () => {
    let now = 1_000_000;
    const limiter = new GuessLimiter(() => now);
    for (let i = 0; i < WRONG_TOKENS_PER_MINUTE; i++) {
      expect(() => limiter.check('10.0.0.1')).not.toThrow();
      limiter.failed('10.0.0.1');
      now += 1_000;
    }
    expect(() => limiter.check('10.0.0.1')).toThrow(
      expect.objectContaining({ status: 429, headers: { 'retry-after': '50' } }),
    );
    expect(() => limiter.check('10.0.0.2')).not.toThrow();
    now += 50_000;
    expect(() => limiter.check('10.0.0.1')).not.toThrow();
  });
});

const LONG_A = 'a'.repeat(24);
const LONG_B = 'b'.repeat(24);
const LONG_R = 'r'.repeat(24);

describe('loadHubConfig', () => {
  const env = { HOME: '/home/r' };
  it('binds loopback on 19432 by default, tokens optional there', () => {
    const c = loadHubConfig({ args: [], env, cwd: '/w' });
    expect(c).toMatchObject({ host: '127.0.0.1', port: 19432, publicUrl: null });
    expect(c).toMatchObject({ dbPath: '/home/r/.gatehouse/hub.db', uploadRoot: '/home/r/.gatehouse/uploads' });
    expect(c.allowedHosts).toEqual([]);
    expect(loadHubConfig({ args: ['--port=7000'], env, cwd: '/w' }).port).toBe(7000);
  });

  it('refuses remote mode without both token lists, and reads the rest from the environment', () => {
    const remote = { ...env, SERVICE_REMOTE: '1' };
    expect(() => loadHubConfig({ args: [], env: remote, cwd: '/w' })).toThrow(/HUB_SUBMIT_TOKENS/);
    const submitOnly = { ...remote, HUB_SUBMIT_TOKENS: LONG_A };
    expect(() => loadHubConfig({ args: [], env: submitOnly, cwd: '/w' })).toThrow(/HUB_REVIEWER_TOKENS/);
    const c = loadHubConfig({
      args: [],
      env: {
        ...env,
        SERVICE_REMOTE: '1',
        SERVICE_PORT: '8000',
        HUB_SUBMIT_TOKENS: `${LONG_A}, bob:${LONG_B}`,
        HUB_REVIEWER_TOKENS: LONG_R,
        HUB_DB_PATH: '/data/hub.db',
        HUB_PUBLIC_URL: 'https://Hub.Example.com/',
        HUB_ALLOWED_HOSTS: 'Review.Internal',
        HUB_WEBHOOK_URLS: 'http://a.example/hook',
        HUB_SLACK_WEBHOOK_URLS: 'https://hooks.slack.example/x',
        HUB_NTFY_URLS: 'https://ntfy.example/topic',
      },
      cwd: '/w',
    });
    expect(c).toMatchObject({ host: '0.0.0.0', port: 8000, reviewerTokens: [LONG_R] });
    const unnamed = `token-${createHash('sha256').update(LONG_A).digest('hex').slice(0, 8)}`;
    expect(c.submitters).toEqual([
      { name: unnamed, token: LONG_A },
      { name: 'bob', token: LONG_B },
    ]);
    expect(c).toMatchObject({ dbPath: '/data/hub.db', uploadRoot: '/data/uploads' });
    expect(c.allowedHosts).toEqual(['review.internal', 'hub.example.com']);
    expect(c.review.notify.targets.map((t) => [t.format, t.url.href])).toEqual([
      ['json', 'http://a.example/hook'],
      ['slack', 'https://hooks.slack.example/x'],
      ['ntfy', 'https://ntfy.example/topic'],
    ]);
    const ftp = { ...env, HUB_WEBHOOK_URLS: 'ftp://x' };
    expect(() => loadHubConfig({ args: [], env: ftp, cwd: '/w' })).toThrow(/notify\.webhooks\[0\]/);
  });

  it('refuses short, padded or shared tokens when reachable from other machines, not on loopback', () => {
    const remote = { ...env, SERVICE_REMOTE: '1', HUB_SUBMIT_TOKENS: LONG_A, HUB_REVIEWER_TOKENS: LONG_R };
    const load = (over: Record<string, string>) => () =>
      loadHubConfig({ args: [], env: { ...remote, ...over }, cwd: '/w' });
    expect(load({ HUB_SUBMIT_TOKENS: `${LONG_A},x` })).toThrow(
      /hub\.submit_tokens \(HUB_SUBMIT_TOKENS\)\[1\] must be at least 16/,
    );
    expect(load({ HUB_SUBMIT_TOKENS: 'ci:short' })).toThrow(/\[0\] must be at least 16/);
    expect(load({ HUB_REVIEWER_TOKENS: 'r' })).toThrow(/hub\.reviewer_tokens .*\[0\] must be at least 16/);
    expect(load({ HUB_SUBMIT_TOKENS: `ci:${LONG_R}` })).toThrow(/a submitter token too/);
    expect(load({})).not.toThrow();
    const local = { ...env, HUB_SUBMIT_TOKENS: 'x', HUB_REVIEWER_TOKENS: 'x' };
    expect(loadHubConfig({ args: [], env: local, cwd: '/w' }).submitters).toHaveLength(1);
  });

  it('reads named submitters from the config file, the environment overriding it', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'gatehouse-hub-config-'));
    try {
      const file = path.join(dir, 'hub.yaml');
      await writeFile(file, `hub:\n  submit_tokens:\n    - {name: alice, token: ${LONG_A}}\n    - ${LONG_B}\n`);
      const c = loadHubConfig({ args: [], env: { ...env, HUB_CONFIG: file }, cwd: '/w' });
      expect(c.submitters.map((s) => s.name)).toEqual(['alice', expect.stringMatching(/^token-[0-9a-f]{8}$/)]);
      const over = loadHubConfig({ args: [], env: { ...env, HUB_CONFIG: file, HUB_SUBMIT_TOKENS: 'ci:x' }, cwd: '/w' });
      expect(over.submitters).toEqual([{ name: 'ci', token: 'x' }]);
      await writeFile(file, 'hub:\n  submit_tokens:\n    - {name: "not a name", token: t}\n');
      expect(() => loadHubConfig({ args: [], env: { ...env, HUB_CONFIG: file }, cwd: '/w' })).toThrow(/\[0\]\.name/);
      expect(() => loadHubConfig({ args: [], env: { ...env, HUB_CONFIG: `${file}.missing` }, cwd: '/w' })).toThrow(
        /HUB_CONFIG/,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
