import path from 'node:path';
import {
  apiKeyOf,
  ENV_NAME,
  fail,
  HEADER_NAME,
  httpUrl,
  ITEM_NAME,
  nonEmptyString,
  positiveDuration,
  record,
} from './shape.ts';

/**
 * `proxy.mcp.servers`: name → MCP server served at `/mcp/<name>/mcp`.
 *
 * A remote server is a Streamable HTTP URL; its credential comes from
 * `api_key_env` (or `api_key`) and `${VAR}` references in header values, so no
 * secret has to be written in the file. A local server is a stdio command the
 * proxy spawns once per MCP session; it sees only its `env` plus PATH and HOME.
 */

export const MCP_KEY = 'proxy.mcp.servers';

const ENV_REFERENCE = /\$\{([^}]*)\}/g;

/** Headers the proxy owns on the way to a remote MCP server. */
const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'connection',
  'transfer-encoding',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
]);

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
  default: {} as Record<string, unknown>,
};

/** `${VAR}` references filled in from the env; a malformed or missing one names the key. */
function resolveText(key: string, text: string, env: NodeJS.ProcessEnv): string {
  return text.replace(ENV_REFERENCE, (_match, name: string) => {
    if (!ENV_NAME.test(name)) fail(key, `\${${name}} is not a valid environment variable reference`);
    const value = env[name];
    if (value === undefined) fail(key, `environment variable ${name} is not set`);
    return value;
  });
}

/** A map of names (checked by `nameRule`) to strings with `${VAR}` references, resolved. */
function stringMap(
  key: string,
  value: unknown,
  nameRule: RegExp,
  what: string,
  env: NodeJS.ProcessEnv,
): Record<string, string> {
  const map = record(key, value ?? {}, `must be a map of ${what} to strings`);
  const out: Record<string, string> = {};
  for (const [name, item] of Object.entries(map)) {
    if (!nameRule.test(name)) fail(`${key}.${name}`, `is not a valid ${what.replace(/s$/, '')}`);
    if (typeof item !== 'string') fail(`${key}.${name}`, 'must be a string');
    out[name] = item;
  }
  // Every value checked before any is resolved, so a shape error wins over an unset variable.
  for (const [name, item] of Object.entries(out)) out[name] = resolveText(`${key}.${name}`, item, env);
  return out;
}

function remoteServer(key: string, server: Record<string, unknown>, env: NodeJS.ProcessEnv): RemoteMcpServer {
  httpUrl(`${key}.url`, server['url']);
  const url = String(server['url']);
  let header = 'authorization';
  if (server['api_key_header'] !== undefined) {
    header = nonEmptyString(`${key}.api_key_header`, server['api_key_header']).toLowerCase();
    if (!HEADER_NAME.test(header) || RESERVED_HEADERS.has(header)) {
      fail(`${key}.api_key_header`, 'must be a header name the proxy does not set itself');
    }
  }
  const configured = stringMap(`${key}.headers`, server['headers'], HEADER_NAME, 'header names', env);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(configured)) {
    if (RESERVED_HEADERS.has(name.toLowerCase()))
      fail(`${key}.headers.${name}`, 'is set by the proxy and cannot be configured');
    headers[name.toLowerCase()] = value;
  }
  const timeoutMs = positiveDuration(`${key}.timeout_ms`, server['timeout_ms'], MCP_DEFAULTS.timeoutMs);
  const apiKey = apiKeyOf(key, server, env);
  if (apiKey !== undefined) headers[header] = header === 'authorization' ? `Bearer ${apiKey}` : apiKey;
  return { kind: 'remote', url, headers, timeoutMs };
}

function stdioServer(key: string, server: Record<string, unknown>, env: NodeJS.ProcessEnv): StdioMcpServer {
  const command = nonEmptyString(`${key}.command`, server['command']);
  const args = server['args'] ?? [];
  if (!Array.isArray(args) || args.some((a) => typeof a !== 'string')) fail(`${key}.args`, 'must be a list of strings');
  const timeoutMs = positiveDuration(`${key}.timeout_ms`, server['timeout_ms'], MCP_DEFAULTS.timeoutMs);
  const childEnv = stringMap(`${key}.env`, server['env'], ENV_NAME, 'environment variable names', env);
  let cwd: string | undefined;
  if (server['cwd'] !== undefined) {
    cwd = nonEmptyString(`${key}.cwd`, server['cwd']);
    if (!path.isAbsolute(cwd)) fail(`${key}.cwd`, 'must be an absolute path');
  }
  const maxSessions = server['max_sessions'] ?? MCP_DEFAULTS.maxSessions;
  if (typeof maxSessions !== 'number' || !Number.isInteger(maxSessions) || maxSessions < 1) {
    fail(`${key}.max_sessions`, 'must be a positive integer');
  }
  const idleTimeoutMs = positiveDuration(
    `${key}.idle_timeout_ms`,
    server['idle_timeout_ms'],
    MCP_DEFAULTS.idleTimeoutMs,
  );
  return { kind: 'stdio', command, args: args as string[], env: childEnv, cwd, timeoutMs, maxSessions, idleTimeoutMs };
}

/**
 * Checks and resolves `proxy.mcp.servers` against `env` (the command's env,
 * never process.env), in one pass: credentials and `${VAR}` references become
 * plain values. Anything invalid, or a missing variable, is a ConfigError
 * naming the key.
 */
export function resolveMcpServers(config: unknown, env: NodeJS.ProcessEnv, key = MCP_KEY): McpServers {
  const map = record(key, config, 'must be a map of server names to MCP servers');
  const servers: McpServers = {};
  for (const [name, value] of Object.entries(map)) {
    const at = `${key}.${name}`;
    if (!ITEM_NAME.test(name)) {
      fail(at, 'server names use letters, digits, "_", "-" and "." (at most 64, starting with a letter or digit)');
    }
    const server = record(at, value, 'must be an object with either `url` (remote) or `command` (stdio)');
    const remote = server['url'] !== undefined;
    if (remote === (server['command'] !== undefined)) {
      fail(at, 'needs exactly one of `url` (a remote Streamable HTTP server) or `command` (a local stdio server)');
    }
    const allowed = remote ? REMOTE_KEYS : STDIO_KEYS;
    for (const field of Object.keys(server)) {
      if (!allowed.has(field))
        fail(`${at}.${field}`, `is not a setting of a ${remote ? 'remote' : 'stdio'} MCP server`);
    }
    servers[name] = remote ? remoteServer(at, server, env) : stdioServer(at, server, env);
  }
  return servers;
}
