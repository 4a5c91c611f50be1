import { describe, expect, it } from 'vitest';
import { TokenSet } from '../../../src/hub/access.ts';
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
});

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
    const submitOnly = { ...remote, HUB_SUBMIT_TOKENS: 'a' };
    expect(() => loadHubConfig({ args: [], env: submitOnly, cwd: '/w' })).toThrow(/HUB_REVIEWER_TOKENS/);
    const c = loadHubConfig({
      args: [],
      env: {
        ...env,
        SERVICE_REMOTE: '1',
        SERVICE_PORT: '8000',
        HUB_SUBMIT_TOKENS: 'a, b',
        HUB_REVIEWER_TOKENS: 'r',
        HUB_DB_PATH: '/data/hub.db',
        HUB_PUBLIC_URL: 'https://Hub.Example.com/',
        HUB_ALLOWED_HOSTS: 'Review.Internal',
        HUB_WEBHOOK_URLS: 'http://a.example/hook',
        HUB_SLACK_WEBHOOK_URLS: 'https://hooks.slack.example/x',
        HUB_NTFY_URLS: 'https://ntfy.example/topic',
      },
      cwd: '/w',
    });
    expect(c).toMatchObject({ host: '0.0.0.0', port: 8000, submitTokens: ['a', 'b'], reviewerTokens: ['r'] });
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
});
