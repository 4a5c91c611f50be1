import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/config/errors.ts';
import { MCP_DEFAULTS, resolveMcpServers } from '../../../src/proxy/config/mcp.ts';
import { loadProxyConfig } from '../../../src/proxy/config/index.ts';

function rejects(config: unknown, env: NodeJS.ProcessEnv = {}): string {
  try {
    resolveMcpServers(config, env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('proxy.mcp.servers', () => {
  it('resolves a remote server: api_key_env becomes a bearer header, ${VAR} in headers is filled in', () => {
    const servers = resolveMcpServers(
      {
        web_reader: {
          url: 'https://mcp.example.com/reader/mcp',
          api_key_env: 'READER_KEY',
          headers: { 'X-Team': '${TEAM}-1' },
          timeout_ms: '30s',
        },
      },
      { READER_KEY: 'secret', TEAM: 'blue' },
    );
    expect(servers).toEqual({
      web_reader: {
        kind: 'remote',
        url: 'https://mcp.example.com/reader/mcp',
        headers: { authorization: 'Bearer secret', 'x-team': 'blue-1' },
        timeoutMs: 30_000,
      },
    });
  });

  it('sends the key raw in another header when api_key_header names one', () => {
    const servers = resolveMcpServers({ s: { url: 'http://h/mcp', api_key: 'k', api_key_header: 'X-API-Key' } }, {});
    expect(servers['s']).toMatchObject({ headers: { 'x-api-key': 'k' } });
  });

  it('resolves a stdio server with defaults, its env filled in from the env passed in only', () => {
    process.env['GATEHOUSE_TEST_ONLY_IN_PROCESS_ENV'] = 'x';
    const servers = resolveMcpServers(
      { 'files-mcp-server': { command: 'npx', args: ['-y', 'srv'], env: { TOKEN: '${GH}' }, cwd: '/srv' } },
      { GH: 'gh-token' },
    );
    expect(servers['files-mcp-server']).toEqual({
      kind: 'stdio',
      command: 'npx',
      args: ['-y', 'srv'],
      env: { TOKEN: 'gh-token' },
      cwd: '/srv',
      timeoutMs: MCP_DEFAULTS.timeoutMs,
      maxSessions: MCP_DEFAULTS.maxSessions,
      idleTimeoutMs: MCP_DEFAULTS.idleTimeoutMs,
    });
    expect(rejects({ s: { command: 'x', env: { A: '${GATEHOUSE_TEST_ONLY_IN_PROCESS_ENV}' } } })).toContain(
      'environment variable GATEHOUSE_TEST_ONLY_IN_PROCESS_ENV is not set',
    );
    delete process.env['GATEHOUSE_TEST_ONLY_IN_PROCESS_ENV'];
  });

  it.each([
    [{ web_reader: { url: 'ftp://x/mcp' } }, 'proxy.mcp.servers.web_reader.url: must be an absolute http(s) URL'],
    [{ web_reader: { url: 'not a url' } }, 'proxy.mcp.servers.web_reader.url: must be an absolute http(s) URL'],
    [{ 'bad/name': { command: 'x' } }, 'proxy.mcp.servers.bad/name: server names use'],
    [{ s: { command: 'x', url: 'http://h' } }, 'proxy.mcp.servers.s: needs exactly one of `url`'],
    [{ s: {} }, 'proxy.mcp.servers.s: needs exactly one of `url`'],
    [{ s: 'http://h' }, 'proxy.mcp.servers.s: must be an object'],
    [{ s: { command: 'x', url_: 1 } }, 'proxy.mcp.servers.s.url_: is not a setting of a stdio MCP server'],
    [{ s: { url: 'http://h', args: [] } }, 'proxy.mcp.servers.s.args: is not a setting of a remote MCP server'],
    [
      { s: { url: 'http://h', api_key: 'a', api_key_env: 'B' } },
      'proxy.mcp.servers.s.api_key: give either api_key or api_key_env',
    ],
    [
      { s: { url: 'http://h', api_key_env: 'not-a-name' } },
      'proxy.mcp.servers.s.api_key_env: must be an environment variable name',
    ],
    [
      { s: { url: 'http://h', headers: { 'Mcp-Session-Id': 'x' } } },
      'proxy.mcp.servers.s.headers.Mcp-Session-Id: is set by the proxy',
    ],
    [{ s: { url: 'http://h', headers: { 'X-A': 1 } } }, 'proxy.mcp.servers.s.headers.X-A: must be a string'],
    [
      { s: { url: 'http://h', headers: { 'X-A': '${1BAD}' } } },
      'proxy.mcp.servers.s.headers.X-A: ${1BAD} is not a valid environment variable reference',
    ],
    [{ s: { url: 'http://h', timeout_ms: 'soon' } }, 'proxy.mcp.servers.s.timeout_ms: must be a positive duration'],
    [{ s: { command: '' } }, 'proxy.mcp.servers.s.command: must be a non-empty string'],
    [{ s: { command: 'x', args: 'a b' } }, 'proxy.mcp.servers.s.args: must be a list of strings'],
    [{ s: { command: 'x', cwd: 'relative' } }, 'proxy.mcp.servers.s.cwd: must be an absolute path'],
    [{ s: { command: 'x', max_sessions: 0 } }, 'proxy.mcp.servers.s.max_sessions: must be a positive integer'],
    [
      { s: { command: 'x', env: { 'A-B': 'x' } } },
      'proxy.mcp.servers.s.env.A-B: is not a valid environment variable name',
    ],
    [
      { s: { url: 'http://h', api_key_env: 'UNSET_KEY' } },
      'proxy.mcp.servers.s.api_key_env: environment variable UNSET_KEY is not set',
    ],
  ])('rejects %j naming the key', (config, message) => {
    expect(rejects(config)).toContain(`invalid configuration: ${message}`);
  });

  it('accepts the example configuration file', () => {
    const file = path.resolve(import.meta.dirname, '../../../config/proxy-mcp.example.yaml');
    const config = loadProxyConfig({
      argv: ['--config', file],
      env: { SEARCH_MCP_KEY: 'k', FILES_TOKEN: 't' },
      cwd: '/',
    });
    expect(Object.keys(config.mcpServers)).toEqual(['web_search_prime', 'web_reader', 'files-mcp-server']);
    expect(config.mcpServers['files-mcp-server']).toMatchObject({
      kind: 'stdio',
      env: { FILES_TOKEN: 't' },
      maxSessions: 4,
      idleTimeoutMs: 600_000,
    });
  });

  it('is part of the proxy configuration file, and errors there name the key', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gatehouse-mcp-config-'));
    const file = path.join(dir, 'proxy.yaml');
    writeFileSync(
      file,
      'proxy:\n  mcp:\n    servers:\n      web_search_prime:\n        url: https://search.example/mcp\n        api_key_env: SEARCH_KEY\n      local:\n        command: node\n        args: [server.mjs]\n',
    );
    const config = loadProxyConfig({ argv: ['--config', file], env: { SEARCH_KEY: 's' }, cwd: dir });
    expect(Object.keys(config.mcpServers)).toEqual(['web_search_prime', 'local']);
    expect(config.mcpServers['web_search_prime']).toMatchObject({
      kind: 'remote',
      headers: { authorization: 'Bearer s' },
    });
    writeFileSync(file, 'proxy:\n  mcp:\n    servers:\n      web_reader:\n        url: 42\n');
    expect(() => loadProxyConfig({ argv: ['--config', file], env: {}, cwd: dir })).toThrow(
      'proxy.mcp.servers.web_reader.url: must be an absolute http(s) URL',
    );
  });
});
