import path from 'node:path';
import { parseDuration } from './formats.ts';
import { fail, httpUrl, isRecord, nonEmptyString } from './shape.ts';

/**
 * `proxy.mcp.servers`: name → MCP server served at `/mcp/<name>/mcp`.
 *
 * A remote server is a Streamable HTTP URL; its credential comes from
 * `api_key_env` (or `api_key`) and `${VAR}` references in header values, so no
 * secret has to be written in the file. A local server is a stdio command the
 * proxy spawns once per MCP session; it sees only its `env` plus PATH and HOME.
 */

export const MCP_KEY = 'proxy.mcp.servers';

/** Safe in a URL path segment and a log line. */
export const MCP_SERVER_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const ENV_REFERENCE = /\$\{([^}]*)\}/g;

/** Headers the proxy owns on the way to a remote MCP server. */
const RESERVED_HEADERS = new Set(['host', 'content-length', 'connection', 'transfer-encoding', 'mcp-session-id', 'mcp-protocol-version', 'last-event-id']);

export const MCP_DEFAULTS = {
  timeoutMs: 120_000,
  maxSessions: 16,
  idleTimeoutMs: 15 * 60_000,
} as const;

export interface RemoteMcpServer {
  kind: 'remote';
  url: string;
  /** The credential header, e.g. `authorization: Bearer …`, already resolved. */
  headers: Record<string, string>;
  /** Time allowed until the response headers arrive. */
  timeoutMs: number;
}

export interface StdioMcpServer {
  kind: 'stdio';
  command: string;
  args: string[];
  /** The child's whole environment apart from PATH and HOME, already resolved. */
  env: Record<string, string>;
  cwd: string | undefined;
  /** Time allowed for one JSON-RPC request to be answered. */
  timeoutMs: number;
  /** Live sessions (= processes) at once. */
  maxSessions: number;
  /** A session unused this long is closed and its process ended. */
  idleTimeoutMs: number;
}

export type McpServer = RemoteMcpServer | StdioMcpServer;
export type McpServers = Record<string, McpServer>;

/** The file's shape; checked and resolved by resolveMcpServers. */
export type McpServersConfig = Record<string, Record<string, unknown>>;

const REMOTE_KEYS = new Set(['url', 'headers', 'api_key', 'api_key_env', 'api_key_header', 'timeout_ms']);
const STDIO_KEYS = new Set(['command', 'args', 'env', 'cwd', 'timeout_ms', 'max_sessions', 'idle_timeout_ms']);

function checkStringMap(key: string, value: unknown, nameRule: RegExp, what: string): void {
  if (!isRecord(value)) fail(key, `must be a map of ${what} to strings`);
  for (const [name, item] of Object.entries(value)) {
    if (!nameRule.test(name)) fail(`${key}.${name}`, `is not a valid ${what.replace(/s$/, '')}`);
    if (typeof item !== 'string') fail(`${key}.${name}`, 'must be a string');
    checkReferences(`${key}.${name}`, item);
  }
}

function checkReferences(key: string, text: string): void {
  for (const [, name] of text.matchAll(ENV_REFERENCE)) {
    if (!ENV_NAME.test(name ?? '')) fail(key, `\${${name}} is not a valid environment variable reference`);
  }
}

function checkDuration(key: string, value: unknown): void {
  let ms: number;
  try {
    ms = parseDuration(value as string | number);
  } catch {
    fail(key, 'must be a positive duration such as 30s, 2m or 120000');
  }
  if (!Number.isFinite(ms) || ms <= 0) fail(key, 'must be a positive duration such as 30s, 2m or 120000');
}

function checkRemote(key: string, server: Record<string, unknown>): void {
  httpUrl(`${key}.url`, server['url']);
  if (server['api_key'] !== undefined && server['api_key_env'] !== undefined) {
    fail(`${key}.api_key`, 'give either api_key or api_key_env, not both');
  }
  if (server['api_key'] !== undefined) nonEmptyString(`${key}.api_key`, server['api_key']);
  if (server['api_key_env'] !== undefined && !ENV_NAME.test(nonEmptyString(`${key}.api_key_env`, server['api_key_env']))) {
    fail(`${key}.api_key_env`, 'must be an environment variable name');
  }
  if (server['api_key_header'] !== undefined) {
    const header = nonEmptyString(`${key}.api_key_header`, server['api_key_header']);
    if (!HEADER_NAME.test(header) || RESERVED_HEADERS.has(header.toLowerCase())) fail(`${key}.api_key_header`, 'must be a header name the proxy does not set itself');
  }
  if (server['headers'] !== undefined) {
    checkStringMap(`${key}.headers`, server['headers'], HEADER_NAME, 'header names');
    for (const name of Object.keys(server['headers'] as object)) {
      if (RESERVED_HEADERS.has(name.toLowerCase())) fail(`${key}.headers.${name}`, 'is set by the proxy and cannot be configured');
    }
  }
}

function checkStdio(key: string, server: Record<string, unknown>): void {
  nonEmptyString(`${key}.command`, server['command']);
  const args = server['args'];
  if (args !== undefined && (!Array.isArray(args) || args.some((a) => typeof a !== 'string'))) fail(`${key}.args`, 'must be a list of strings');
  if (server['env'] !== undefined) checkStringMap(`${key}.env`, server['env'], ENV_NAME, 'environment variable names');
  if (server['cwd'] !== undefined && !path.isAbsolute(nonEmptyString(`${key}.cwd`, server['cwd']))) fail(`${key}.cwd`, 'must be an absolute path');
  if (server['max_sessions'] !== undefined) {
    const max = server['max_sessions'];
    if (typeof max !== 'number' || !Number.isInteger(max) || max < 1) fail(`${key}.max_sessions`, 'must be a positive integer');
  }
  if (server['idle_timeout_ms'] !== undefined) checkDuration(`${key}.idle_timeout_ms`, server['idle_timeout_ms']);
}

/** Validates the file's `proxy.mcp.servers` value; a ConfigError names the exact key. */
export function checkMcpServers(value: unknown, key = MCP_KEY): asserts value is McpServersConfig {
  if (!isRecord(value)) fail(key, 'must be a map of server names to MCP servers');
  for (const [name, server] of Object.entries(value)) {
    const at = `${key}.${name}`;
    if (!MCP_SERVER_NAME.test(name)) fail(at, 'server names use letters, digits, "_", "-" and "." (at most 64, starting with a letter or digit)');
    if (!isRecord(server)) fail(at, 'must be an object with either `url` (remote) or `command` (stdio)');
    const remote = server['url'] !== undefined;
    const stdio = server['command'] !== undefined;
    if (remote === stdio) fail(at, 'needs exactly one of `url` (a remote Streamable HTTP server) or `command` (a local stdio server)');
    const allowed = remote ? REMOTE_KEYS : STDIO_KEYS;
    for (const field of Object.keys(server)) {
      if (!allowed.has(field)) fail(`${at}.${field}`, `is not a setting of a ${remote ? 'remote' : 'stdio'} MCP server`);
    }
    if (server['timeout_ms'] !== undefined) checkDuration(`${at}.timeout_ms`, server['timeout_ms']);
    if (remote) checkRemote(at, server);
    else checkStdio(at, server);
  }
}

/**
 * The schema entry for `proxy.mcp.servers`. convict only loads an object-valued
 * key from a file when its format is the built-in `object`, so the shape is
 * checked by resolveMcpServers, whose messages name the exact key.
 */
export const mcpServersSchema = {
  doc: 'MCP servers served at /mcp/<name>/mcp: remote {url, api_key_env, headers} or stdio {command, args, env}.',
  format: Object,
  // May hold an api_key or header secrets.
  sensitive: true,
  default: {} as McpServersConfig,
};

function resolveText(key: string, text: string, env: NodeJS.ProcessEnv): string {
  return text.replace(ENV_REFERENCE, (_match, name: string) => {
    const value = env[name];
    if (value === undefined) fail(key, `environment variable ${name} is not set`);
    return value;
  });
}

function resolveMap(key: string, map: unknown, env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries((map ?? {}) as Record<string, string>)) out[name] = resolveText(`${key}.${name}`, value, env);
  return out;
}

function duration(value: unknown, fallback: number): number {
  return value === undefined ? fallback : parseDuration(value as string | number);
}

/**
 * Validates and resolves the servers against `env` (the command's env, never
 * process.env): credentials and `${VAR}` references become plain values.
 * A missing variable is a ConfigError naming the key.
 */
export function resolveMcpServers(config: unknown, env: NodeJS.ProcessEnv): McpServers {
  checkMcpServers(config);
  const servers: McpServers = {};
  for (const [name, server] of Object.entries(config)) {
    const at = `${MCP_KEY}.${name}`;
    const timeoutMs = duration(server['timeout_ms'], MCP_DEFAULTS.timeoutMs);
    if (server['url'] !== undefined) {
      const headers = Object.fromEntries(Object.entries(resolveMap(`${at}.headers`, server['headers'], env)).map(([h, v]) => [h.toLowerCase(), v]));
      let key = server['api_key'] as string | undefined;
      const keyEnv = server['api_key_env'] as string | undefined;
      if (keyEnv !== undefined) {
        key = env[keyEnv];
        if (!key) fail(`${at}.api_key_env`, `environment variable ${keyEnv} is not set`);
      }
      if (key !== undefined) {
        const header = ((server['api_key_header'] as string | undefined) ?? 'authorization').toLowerCase();
        headers[header] = header === 'authorization' ? `Bearer ${key}` : key;
      }
      servers[name] = { kind: 'remote', url: server['url'] as string, headers, timeoutMs };
    } else {
      servers[name] = {
        kind: 'stdio',
        command: server['command'] as string,
        args: (server['args'] as string[] | undefined) ?? [],
        env: resolveMap(`${at}.env`, server['env'], env),
        cwd: server['cwd'] as string | undefined,
        timeoutMs,
        maxSessions: (server['max_sessions'] as number | undefined) ?? MCP_DEFAULTS.maxSessions,
        idleTimeoutMs: duration(server['idle_timeout_ms'], MCP_DEFAULTS.idleTimeoutMs),
      };
    }
  }
  return servers;
}
