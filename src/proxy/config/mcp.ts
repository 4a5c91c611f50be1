import path from 'node:path';
import { ENV_NAME, HEADER_NAME, ITEM_NAME, stringMapFormat } from '../../config/formats.ts';
import { validateItem } from '../../config/items.ts';
import { apiKeyOf, apiKeySchema, fail, record } from '../../config/shape.ts';

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

/** A validated map's `${VAR}` references resolved, every value checked before any is resolved. */
function resolveMap(key: string, map: Record<string, string>, env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(
    Object.entries(map).map(([name, value]) => [name, resolveText(`${key}.${name}`, value, env)]),
  );
}

const timeoutSchema = {
  timeout_ms: { doc: 'Time allowed for an answer.', format: 'duration', default: MCP_DEFAULTS.timeoutMs as number },
};

const remoteSchema = {
  url: { doc: 'The Streamable HTTP endpoint.', format: 'http-url', default: '' },
  headers: {
    doc: 'Extra headers, with ${VAR} references.',
    format: stringMapFormat(
      HEADER_NAME,
      'header name',
      RESERVED_HEADERS,
      'is set by the proxy and cannot be configured',
    ),
    default: {} as Record<string, string>,
    sensitive: true,
  },
  ...apiKeySchema,
  api_key_header: {
    doc: 'The header that carries the key raw (default: authorization, as Bearer).',
    format: (value: unknown): void => {
      if (value === undefined) return;
      if (typeof value !== 'string' || !HEADER_NAME.test(value) || RESERVED_HEADERS.has(value.toLowerCase())) {
        throw new Error('must be a header name the proxy does not set itself');
      }
    },
    default: undefined as string | undefined,
  },
  ...timeoutSchema,
};

const stdioSchema = {
  command: { doc: 'The program to spawn.', format: 'non-empty-string', default: '' },
  args: { doc: 'Its arguments.', format: 'strings', default: [] as string[] },
  env: {
    doc: 'Its environment besides PATH and HOME, with ${VAR} references.',
    format: stringMapFormat(ENV_NAME, 'environment variable name'),
    default: {} as Record<string, string>,
    sensitive: true,
  },
  cwd: {
    doc: 'Its working directory.',
    format: (value: unknown): void => {
      if (value !== undefined && (typeof value !== 'string' || !path.isAbsolute(value))) {
        throw new Error('must be an absolute path');
      }
    },
    default: undefined as string | undefined,
  },
  ...timeoutSchema,
  max_sessions: {
    doc: 'Live sessions (processes) at once.',
    format: 'positive-int',
    default: MCP_DEFAULTS.maxSessions as number,
  },
  idle_timeout_ms: {
    doc: 'An unused session is closed after this.',
    format: 'duration',
    default: MCP_DEFAULTS.idleTimeoutMs,
  },
};

function remoteServer(key: string, raw: unknown, env: NodeJS.ProcessEnv): RemoteMcpServer {
  const server = validateItem(key, raw, remoteSchema, 'a remote MCP server');
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(resolveMap(`${key}.headers`, server.headers, env))) {
    headers[name.toLowerCase()] = value;
  }
  const apiKey = apiKeyOf(key, server, env);
  const header = server.api_key_header?.toLowerCase() ?? 'authorization';
  if (apiKey !== undefined) headers[header] = header === 'authorization' ? `Bearer ${apiKey}` : apiKey;
  return { kind: 'remote', url: server.url, headers, timeoutMs: server.timeout_ms };
}

function stdioServer(key: string, raw: unknown, env: NodeJS.ProcessEnv): StdioMcpServer {
  const server = validateItem(key, raw, stdioSchema, 'a stdio MCP server');
  return {
    kind: 'stdio',
    command: server.command,
    args: server.args,
    env: resolveMap(`${key}.env`, server.env, env),
    cwd: server.cwd,
    timeoutMs: server.timeout_ms,
    maxSessions: server.max_sessions,
    idleTimeoutMs: server.idle_timeout_ms,
  };
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
    servers[name] = remote ? remoteServer(at, server, env) : stdioServer(at, server, env);
  }
  return servers;
}
