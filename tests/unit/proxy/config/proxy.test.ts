import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadProxyConfig } from '../../../../src/proxy/config/index.ts';
import { configFailure } from '../../../support/config-failure.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-proxy-config-'));
let files = 0;

function file(content: unknown, ext = 'json'): string {
  const name = path.join(dir, `config-${files++}.${ext}`);
  writeFileSync(name, typeof content === 'string' ? content : JSON.stringify(content));
  return name;
}

const load = (env: Record<string, string> = {}, argv: string[] = []) => loadProxyConfig({ argv, env, cwd: dir });
const withProxy = (proxy: Record<string, unknown>, env: Record<string, string> = {}) =>
  load(env, ['--config', file({ proxy })]);
const upstream = (extra: Record<string, unknown> = {}) => ({
  name: 'oa',
  protocol: 'openai',
  base_url: 'https://api.openai.com/v1',
  models: ['gpt-*'],
  ...extra,
});

describe('loadProxyConfig', () => {
  it('defaults: port 8045, loopback, auto → off, 50 MiB bodies, no upstreams', () => {
    const c = load();
    expect(c).toMatchObject({
      port: 8045,
      host: '127.0.0.1',
      allowLanAccess: false,
      authMode: 'auto',
      effectiveAuthMode: 'off',
      apiKey: '',
      maxBodyBytes: 50 * 1024 * 1024,
      upstreams: [],
      modelAliases: {},
      mcpServers: {},
      logLevel: 'info',
    });
    expect(c.warnings).toEqual([expect.stringContaining('no proxy.upstreams')]);
  });

  it('auto with LAN access is all_except_health and binds 0.0.0.0', () => {
    expect(load({ PROXY_ALLOW_LAN_ACCESS: 'true', PROXY_API_KEY: 'k-0123456789abcdef' })).toMatchObject({
      host: '0.0.0.0',
      effectiveAuthMode: 'all_except_health',
      apiKey: 'k-0123456789abcdef',
    });
  });

  it('env vars override the file, which overrides the defaults', () => {
    const config = file({
      proxy: { port: 9000, auth_mode: 'strict', api_key: 'from-file-0123456789', allow_lan_access: true },
    });
    expect(load({}, ['--config', config])).toMatchObject({
      port: 9000,
      effectiveAuthMode: 'strict',
      apiKey: 'from-file-0123456789',
      host: '0.0.0.0',
    });
    expect(
      load({ PROXY_PORT: '9100', PROXY_API_KEY: 'from-env-0123456789', PROXY_AUTH_MODE: 'all_except_health' }, [
        '--config',
        config,
      ]),
    ).toMatchObject({ port: 9100, apiKey: 'from-env-0123456789', effectiveAuthMode: 'all_except_health' });
  });

  it('reads the file from PROXY_CONFIG, and YAML as well as JSON', () => {
    const yaml = file(
      [
        'proxy:',
        '  port: 9200',
        '  model_aliases:',
        '    fast: gpt-4o-mini',
        '  upstreams:',
        '    - name: oa',
        '      protocol: openai',
        '      base_url: https://api.openai.com/v1/',
        '      api_key: sk-test',
        '      models: ["gpt-*"]',
        '      timeout_ms: 30s',
        '',
      ].join('\n'),
      'yaml',
    );
    const c = load({ PROXY_CONFIG: yaml });
    expect(c.port).toBe(9200);
    expect(c.modelAliases).toEqual({ fast: 'gpt-4o-mini' });
    expect(c.upstreams).toEqual([
      {
        name: 'oa',
        protocol: 'openai',
        baseUrl: 'https://api.openai.com/v1',
        apiKey: 'sk-test',
        models: ['gpt-*'],
        headers: {},
        timeoutMs: 30_000,
        responsesApi: true,
      },
    ]);
  });

  it('responses_api: true unless an OpenAI upstream says false', () => {
    const c = withProxy({
      upstreams: [
        upstream(),
        upstream({ name: 'vllm', responses_api: false }),
        upstream({ name: 'oa2', responses_api: true }),
      ],
    });
    expect(c.upstreams.map((u) => u.responsesApi)).toEqual([true, false, true]);
  });

  it("api_key_env reads the command's env", () => {
    const c = withProxy(
      { upstreams: [upstream({ api_key_env: 'MY_OPENAI_KEY', headers: { 'OpenAI-Organization': 'org-1' } })] },
      { MY_OPENAI_KEY: 'sk-from-env' },
    );
    expect(c.upstreams[0]).toMatchObject({
      apiKey: 'sk-from-env',
      headers: { 'openai-organization': 'org-1' },
      timeoutMs: 600_000,
    });
  });

  it.each([
    [{ port: 70000 }, /proxy\.port/],
    [{ auth_mode: 'sometimes' }, /proxy\.auth_mode/],
    [{ allow_lan_access: 'perhaps' }, /proxy\.allow_lan_access/],
    [{ max_body_bytes: -1 }, /proxy\.max_body_bytes/],
    [{ surprise: 1 }, /proxy\.surprise/],
    [{ upstreams: 'openai' }, /proxy\.upstreams/],
    [{ upstreams: [upstream(), 'x'] }, /proxy\.upstreams\[1\]: must be an object/],
    [{ upstreams: [upstream({ name: '' })] }, /proxy\.upstreams\[0\]\.name: must be a non-empty string/],
    [{ upstreams: [upstream(), upstream()] }, /proxy\.upstreams\[1\]\.name: "oa" is used by an earlier upstream/],
    [
      { upstreams: [upstream({ protocol: 'cohere' })] },
      /proxy\.upstreams\[0\]\.protocol: must be one of openai, anthropic, gemini/,
    ],
    [
      { upstreams: [upstream({ base_url: 'api.openai.com' })] },
      /proxy\.upstreams\[0\]\.base_url: must be an absolute http\(s\) URL/,
    ],
    [{ upstreams: [upstream({ base_url: 'ftp://x' })] }, /proxy\.upstreams\[0\]\.base_url/],
    [
      { upstreams: [upstream({ base_url: 'https://x/v1?key=1' })] },
      /proxy\.upstreams\[0\]\.base_url: must not carry a query/,
    ],
    [{ upstreams: [upstream({ models: [] })] }, /proxy\.upstreams\[0\]\.models: must be a non-empty list/],
    [{ upstreams: [upstream({ models: ['gpt-*', 3] })] }, /proxy\.upstreams\[0\]\.models\[1\]/],
    [
      { upstreams: [upstream({ api_key: 'a', api_key_env: 'B' })] },
      /proxy\.upstreams\[0\]\.api_key: give either api_key or api_key_env/,
    ],
    [
      { strict_keys: true, upstreams: [upstream({ api_key_env: 'NOT_SET_ANYWHERE' })] },
      /proxy\.upstreams\[0\]\.api_key_env: environment variable NOT_SET_ANYWHERE is not set/,
    ],
    [
      { upstreams: [upstream({ api_key_env: 'not a name' })] },
      /proxy\.upstreams\[0\]\.api_key_env: must be an environment variable name/,
    ],
    [
      { upstreams: [upstream({ headers: { Authorization: 'Bearer x' } })] },
      /proxy\.upstreams\[0\]\.headers\.Authorization: is set by the proxy/,
    ],
    [
      { upstreams: [upstream({ headers: { 'bad header': 'x' } })] },
      /proxy\.upstreams\[0\]\.headers\.bad header: is not a valid header name/,
    ],
    [{ upstreams: [upstream({ timeout_ms: 'soon' })] }, /proxy\.upstreams\[0\]\.timeout_ms/],
    [{ upstreams: [upstream({ retries: 3 })] }, /proxy\.upstreams\[0\]\.retries: is not a setting of an upstream/],
    [{ upstreams: [upstream({ responses_api: 'no' })] }, /proxy\.upstreams\[0\]\.responses_api: must be true or false/],
    [{ upstreams: [upstream({ responses_api: null })] }, /proxy\.upstreams\[0\]\.responses_api: must be true or false/],
    [
      { upstreams: [upstream({ protocol: 'anthropic', base_url: 'https://api.anthropic.com', responses_api: false })] },
      /proxy\.upstreams\[0\]\.responses_api: applies to protocol openai only/,
    ],
    [{ model_aliases: { fast: 3 } }, /proxy\.model_aliases\.fast: must be a non-empty string/],
    [{ mcp: { servers: { 'bad name!': { url: 'https://x' } } } }, /proxy\.mcp\.servers\.bad name!/],
  ])('%j is a startup error naming the key', (proxy, message) => {
    expect(configFailure(() => withProxy(proxy))).toMatch(message);
  });

  describe('an upstream whose api_key_env is not set', () => {
    const proxy = {
      upstreams: [
        upstream({ api_key_env: 'OPENAI_KEY' }),
        upstream({ name: 'an', protocol: 'anthropic', models: ['claude-*'], api_key_env: 'ANTHROPIC_KEY' }),
      ],
    };

    it('is kept without a key, its variable named, with a startup warning', () => {
      const c = withProxy(proxy, { OPENAI_KEY: 'sk-set', ANTHROPIC_KEY: '' });
      expect(c.upstreams).toMatchObject([
        { name: 'oa', apiKey: 'sk-set', missingKeyEnv: undefined },
        { name: 'an', apiKey: undefined, missingKeyEnv: 'ANTHROPIC_KEY' },
      ]);
      expect(c.warnings).toEqual([
        'proxy.upstreams[1] (an): environment variable ANTHROPIC_KEY is not set: its models answer 503 until it ' +
          'is set and the proxy restarted (proxy.strict_keys: true refuses to start instead)',
      ]);
    });

    it('refuses to start with --check, proxy.strict_keys or PROXY_STRICT_KEYS', () => {
      const message = /proxy\.upstreams\[1\]\.api_key_env: environment variable ANTHROPIC_KEY is not set/;
      const env = { OPENAI_KEY: 'sk-set' };
      expect(configFailure(() => load(env, ['--config', file({ proxy }), '--check']))).toMatch(message);
      expect(configFailure(() => withProxy({ ...proxy, strict_keys: true }, env))).toMatch(message);
      expect(configFailure(() => withProxy(proxy, { ...env, PROXY_STRICT_KEYS: 'true' }))).toMatch(message);
    });

    it('still refuses api_key and api_key_env together', () => {
      expect(configFailure(() => withProxy({ upstreams: [upstream({ api_key: 'a', api_key_env: 'B' })] }))).toMatch(
        /give either api_key or api_key_env/,
      );
    });
  });

  it('never prints an upstream key in an error', () => {
    const message = configFailure(() =>
      withProxy({ upstreams: [upstream({ api_key: 'sk-very-secret', base_url: 'nope' })] }),
    );
    expect(message).not.toContain('sk-very-secret');
  });

  it.each([
    [{ auth_mode: 'strict' }, /proxy\.api_key: auth_mode strict needs a key/],
    [{ auth_mode: 'all_except_health' }, /proxy\.api_key: auth_mode all_except_health needs a key/],
    [{ allow_lan_access: true }, /proxy\.api_key: auth_mode auto \(with allow_lan_access\) needs a key/],
    [{ auth_mode: 'off', allow_lan_access: true, api_key: 'k' }, /proxy\.auth_mode: off with allow_lan_access true/],
  ])('%j refuses to start', (proxy, message) => {
    expect(configFailure(() => withProxy(proxy))).toMatch(message);
  });

  it.each([
    [{ auth_mode: 'strict', api_key: ' ' }, /proxy\.api_key: PROXY_API_KEY must not be blank/],
    [{ auth_mode: 'strict', api_key: 'padded-key-0123456789\n' }, /proxy\.api_key: .* begin or end with whitespace/],
    [{ allow_lan_access: true, api_key: 'fifteen-chars-x' }, /proxy\.api_key: .* at least 16 characters/],
    [{ cors: { allowed_origins: ['*'] } }, /proxy\.cors\.allowed_origins\[0\]: \* lets any web page use the proxy/],
    [{ cors: { allowed_origins: ['app.example'] } }, /proxy\.cors\.allowed_origins\[0\]: must be an absolute http/],
    [{ cors: { allowed_origins: ['http://app.example/ui'] } }, /proxy\.cors\.allowed_origins\[0\]: must be an origin/],
  ])('%j refuses to start (keys and browser origins)', (proxy, message) => {
    expect(configFailure(() => withProxy(proxy))).toMatch(message);
  });

  it('reads browser origins and keyless hosts from the file or the env; * where keys are required', () => {
    expect(load()).toMatchObject({ corsAllowedOrigins: [], allowedHosts: [] });
    const listed = withProxy({ cors: { allowed_origins: ['http://App.example:3000/'] }, allowed_hosts: ['proxy.lan'] });
    expect(listed).toMatchObject({
      corsAllowedOrigins: ['http://app.example:3000'],
      allowedHosts: ['proxy.lan'],
    });
    const env = {
      PROXY_CORS_ALLOWED_ORIGINS: '*',
      PROXY_ALLOWED_HOSTS: 'a.lan, b.lan',
      PROXY_AUTH_MODE: 'all_except_health',
      PROXY_API_KEY: 'short',
    };
    expect(load(env)).toMatchObject({ corsAllowedOrigins: ['*'], allowedHosts: ['a.lan', 'b.lan'] });
  });

  it('warns (and starts) when a key is set that off mode never checks', () => {
    expect(withProxy({ auth_mode: 'off', api_key: 'unused' }).warnings).toContainEqual(
      expect.stringContaining('the key is not checked'),
    );
  });

  it('reports a missing or unparsable file and bad arguments', () => {
    expect(configFailure(() => load({}, ['--config', path.join(dir, 'missing.yaml')]))).toMatch(
      /cannot read the configuration file .*missing\.yaml: ENOENT/,
    );
    expect(configFailure(() => load({}, ['--config', file('proxy: [unclosed', 'yaml')]))).toMatch(
      /neither JSON nor YAML/,
    );
    expect(configFailure(() => load({}, ['--config', file('[1, 2]')]))).toMatch(/must hold an object/);
    // One whole line: yaml's own message ends with "column 6:" and a code frame below it.
    expect(configFailure(() => load({}, ['--config', file('proxy:\n  port: 1\n  a: b: c\n', 'yaml')]))).toMatch(
      /neither JSON nor YAML: Nested mappings are not allowed in compact mappings at line 3, column 6: "a: b: c"$/,
    );
    expect(configFailure(() => load({}, ['--verbose']))).toMatch(/unknown argument "--verbose"/);
    expect(configFailure(() => load({}, ['--config']))).toMatch(/--config needs a file/);
    expect(load({}, [`--config=${file({ proxy: { port: 9300 } })}`]).port).toBe(9300);
  });
});

describe('what translation remembers, and model lists: limits and times as keys', () => {
  it('defaults: 2,000 answers (128 MiB) and 10,000 reasonings (32 MiB) for an hour; model lists for 5 minutes', () => {
    expect(load()).toMatchObject({
      stores: {
        responses: { maxEntries: 2_000, maxBytes: 128 * 1024 * 1024, ttlMs: 3_600_000 },
        reasoning: { maxEntries: 10_000, maxBytes: 32 * 1024 * 1024, ttlMs: 3_600_000 },
      },
      modelLists: { ttlMs: 300_000, failureTtlMs: 30_000, fetchTimeoutMs: 10_000 },
    });
  });

  it('reads durations as text or milliseconds', () => {
    const c = withProxy({
      stores: { responses: { ttl: '10m', max_entries: 5 }, reasoning: { ttl: 90_000 } },
      model_lists: { ttl: '1h' },
    });
    expect(c.stores.responses).toMatchObject({ ttlMs: 600_000, maxEntries: 5 });
    expect(c.stores.reasoning.ttlMs).toBe(90_000);
    expect(c.modelLists.ttlMs).toBe(3_600_000);
  });

  it.each([
    [{ stores: { responses: { ttl: 'soon' } } }, 'proxy.stores.responses.ttl'],
    [{ stores: { reasoning: { ttl: 0 } } }, 'proxy.stores.reasoning.ttl'],
    [{ stores: { responses: { max_entries: -1 } } }, 'proxy.stores.responses.max_entries'],
    [{ stores: { responses: { max_bites: 1 } } }, 'proxy.stores.responses.max_bites'],
    [{ model_lists: { timeout: '5 minutes' } }, 'proxy.model_lists.timeout'],
  ])('refuses %j naming %s', (proxy, key) => {
    expect(configFailure(() => withProxy(proxy))).toContain(key);
  });
});
