import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/config/errors.ts';
import { loadHubConfig } from '../../../src/config/hub.ts';
import { loadReviewConfig, openUrl, servedHosts } from '../../../src/config/review.ts';
import { parseReviewArgs } from '../../../src/review/args.ts';

const projectDir = '/work/project';
const load = (env: Record<string, string> = {}, args: string[] = []) =>
  loadReviewConfig({ args, env: { HOME: '/home/reviewer', ...env }, projectDir });

describe('loadReviewConfig', () => {
  it('defaults to local mode: 127.0.0.1, a random port, claude-code, sharing on, no timeout', () => {
    const c = load();
    expect(c).toMatchObject({
      remote: false,
      host: '127.0.0.1',
      port: 0,
      origin: 'claude-code',
      sharingEnabled: true,
      timeoutMs: null,
      decisionFile: null,
    });
    expect(c.planDir).toBe('/home/reviewer/.gatehouse/plans');
    expect(c.allowedRoots).toEqual(['/home/reviewer', projectDir]);
    expect(c.uploadDir).toBe('/tmp/gatehouse');
    expect(c.notememoUrlTemplate).toBe('notememo://x-callback-url/create?title={title}&text={text}');
  });

  it.each(['1', 'true', 'TRUE', 'yes', 'Yes', 'on', 'ON'])(
    'SERVICE_REMOTE=%s is remote mode: 0.0.0.0:19432',
    (value) => {
      expect(load({ SERVICE_REMOTE: value })).toMatchObject({ remote: true, host: '0.0.0.0', port: 19432 });
    },
  );

  it.each(['0', 'false', 'no', 'off', '', 'maybe'])('SERVICE_REMOTE=%s stays local', (value) => {
    expect(load({ SERVICE_REMOTE: value })).toMatchObject({ remote: false, port: 0 });
  });

  it('SERVICE_PORT overrides the port in both modes', () => {
    expect(load({ SERVICE_PORT: '20000' }).port).toBe(20000);
    expect(load({ SERVICE_REMOTE: '1', SERVICE_PORT: '1' }).port).toBe(1);
    expect(load({ SERVICE_REMOTE: '1', SERVICE_PORT: '65535' }).port).toBe(65535);
    expect(load({}, ['--port=4242']).port).toBe(4242);
  });

  it.each(['0', '65536', '-1', 'abc', '12.5', '80x'])('SERVICE_PORT=%s is a startup error naming the key', (value) => {
    expect(() => load({ SERVICE_PORT: value })).toThrow(ConfigError);
    expect(() => load({ SERVICE_PORT: value })).toThrow(/review\.port/);
  });

  it('SERVICE_ORIGIN is claude-code or opencode; --origin too; anything else is a startup error', () => {
    expect(load({ SERVICE_ORIGIN: 'opencode' }).origin).toBe('opencode');
    expect(load({}, ['--origin=opencode']).origin).toBe('opencode');
    expect(() => load({ SERVICE_ORIGIN: 'aider' })).toThrow(/review\.origin/);
    expect(() => load({}, ['--origin=Claude'])).toThrow(/review\.origin/);
  });

  it.each(['0', 'false', 'FALSE', 'no', 'off', 'Off', 'disabled', 'DISABLED'])(
    'SERVICE_SHARE=%s turns sharing off',
    (value) => {
      expect(load({ SERVICE_SHARE: value }).sharingEnabled).toBe(false);
    },
  );

  it.each(['1', 'true', 'yes', 'on', 'anything'])('SERVICE_SHARE=%s keeps sharing on', (value) => {
    expect(load({ SERVICE_SHARE: value }).sharingEnabled).toBe(true);
  });

  it('SERVICE_TIMEOUT and --timeout take durations; invalid ones are startup errors', () => {
    expect(load({ SERVICE_TIMEOUT: '30m' }).timeoutMs).toBe(30 * 60_000);
    expect(load({ SERVICE_TIMEOUT: '90s' }).timeoutMs).toBe(90_000);
    expect(load({ SERVICE_TIMEOUT: '2h' }).timeoutMs).toBe(7_200_000);
    expect(load({}, ['--timeout=500ms']).timeoutMs).toBe(500);
    expect(() => load({ SERVICE_TIMEOUT: 'soon' })).toThrow(/review\.timeout_ms/);
    expect(() => load({ SERVICE_TIMEOUT: '0s' })).toThrow(/review\.timeout_ms/);
  });

  it('resolves --decision-file against the project and honours the path env vars', () => {
    const c = load(
      {
        GATEHOUSE_PLAN_DIR: '/data/plans',
        GATEHOUSE_SAVE_ALLOWED_ROOTS: '/a, /b',
        GATEHOUSE_UPLOAD_DIR: '/var/up',
        OPENCODE_SERVER_URL: 'http://oc:4096/',
        BROWSER: 'firefox',
      },
      ['--decision-file=out/d.json'],
    );
    expect(c.decisionFile).toBe(path.join(projectDir, 'out/d.json'));
    expect(c).toMatchObject({
      planDir: '/data/plans',
      allowedRoots: ['/a', '/b'],
      uploadDir: '/var/up',
      opencodeServerUrl: 'http://oc:4096',
      browser: 'firefox',
    });
    expect(() => load({ GATEHOUSE_UPLOAD_DIR: 'relative' })).toThrow(/upload_dir/);
  });
});

describe('served hosts', () => {
  it('are SERVICE_ALLOWED_HOSTS, plus in a Codespace the forwarded host of the port', () => {
    expect(servedHosts(load(), 19432)).toEqual([]);
    const lan = load({ SERVICE_ALLOWED_HOSTS: 'review.lan, 192.168.1.20' });
    expect(servedHosts(lan, 19432)).toEqual(['review.lan', '192.168.1.20']);
    const codespace = load({
      CODESPACE_NAME: 'fuzzy-space',
      GITHUB_CODESPACES_PORT_FORWARDING_DOMAIN: 'app.github.dev',
    });
    expect(servedHosts(codespace, 19432)).toEqual(['fuzzy-space-19432.app.github.dev']);
    expect(load({ CODESPACE_NAME: 'fuzzy-space' }).codespace).toBeNull();
  });

  it('the URL to open is the forwarded https one in a Codespace, else localhost', () => {
    expect(openUrl(load(), 41000)).toBe('http://localhost:41000/');
    const env = { CODESPACE_NAME: 'fuzzy-space', GITHUB_CODESPACES_PORT_FORWARDING_DOMAIN: 'app.github.dev' };
    expect(openUrl(load(env), 19432)).toBe('https://fuzzy-space-19432.app.github.dev/');
    const hub = loadHubConfig({ args: [], env: { HOME: '/h', ...env }, cwd: '/w' });
    expect(hub.publicUrl?.href).toBe('https://fuzzy-space-19432.app.github.dev/');
    expect(hub.allowedHosts).toEqual(['fuzzy-space-19432.app.github.dev']);
    const own = { HOME: '/h', ...env, HUB_PUBLIC_URL: 'https://review.example.com' };
    expect(loadHubConfig({ args: [], env: own, cwd: '/w' }).publicUrl?.href).toBe('https://review.example.com/');
  });

  it('reads the notify targets the hub reads, naming a bad URL by its key', () => {
    const env = { HUB_NTFY_URLS: 'https://ntfy.example/t', HUB_NOTIFY_ATTEMPTS: '0', HUB_NOTIFY_RETRY_BASE: '250ms' };
    expect(load(env).notify).toEqual({
      targets: [{ format: 'ntfy', url: new URL('https://ntfy.example/t') }],
      attempts: 1,
      retryBaseMs: 250,
    });
    expect(load().notify).toEqual({ targets: [], attempts: 6, retryBaseMs: 1000 });
    expect(() => load({ HUB_SLACK_WEBHOOK_URLS: 'https://ok.example, nope' })).toThrow(
      'invalid configuration: notify.slack_webhooks[1]: must be an absolute http(s) URL',
    );
  });
});

describe('parseReviewArgs', () => {
  const flags = ['port', 'origin', 'timeout', 'decision-file'] as const;

  it('accepts the flags as --flag v and --flag=v, and one positional (including -)', () => {
    expect(parseReviewArgs(['PLAN.md', '--timeout', '30m', '--decision-file=d.json'], flags, 1)).toEqual({
      positionals: ['PLAN.md'],
      configArgs: ['--timeout=30m', '--decision-file=d.json'],
      help: false,
    });
    expect(parseReviewArgs(['-', '--origin', 'opencode'], flags, 1).positionals).toEqual(['-']);
    expect(parseReviewArgs(['--help'], flags, 1).help).toBe(true);
  });

  it('refuses unknown options, missing values and extra arguments clearly', () => {
    expect(() => parseReviewArgs(['--repo', 'x'], flags, 1)).toThrow(
      'unknown option --repo (accepted: --port, --origin, --timeout, --decision-file)',
    );
    expect(() => parseReviewArgs(['--timeout'], flags, 1)).toThrow('option --timeout needs a value');
    expect(() => parseReviewArgs(['a.md', 'b.md'], flags, 1)).toThrow('unexpected argument "b.md"');
  });
});
