import { HttpError } from '../../http/errors.ts';

/**
 * Every answer the MCP gateway writes itself, in one place (body errors, 400
 * and 413, are the proxy's own from ../errors.ts). They render as
 * `{"error": "<message>"}`, the proxy's "other" family; protocol errors an MCP
 * transport raises (JSON-RPC bodies) pass through untouched.
 */
export const mcpErrors = {
  originRefused: (origin: string) =>
    new HttpError(
      403,
      `Origin ${JSON.stringify(origin)} may not use the MCP endpoints: only pages served from this machine (localhost) may`,
      { kind: 'forbidden' },
    ),
  notConfigured: (server: string) =>
    new HttpError(404, `MCP server "${server}" is not configured`, { kind: 'not_found' }),
  methodNotAllowed: () =>
    new HttpError(405, 'Method not allowed: MCP endpoints take GET, POST and DELETE', {
      kind: 'method_not_allowed',
      headers: { allow: 'GET, POST, DELETE' },
    }),
  noSession: () =>
    new HttpError(
      400,
      'Bad request: send an initialize request first, or the Mcp-Session-Id header of an open session',
      { kind: 'bad_request' },
    ),
  sessionNotFound: () =>
    new HttpError(404, 'MCP session not found: it ended or never existed; initialize a new one', {
      kind: 'session_not_found',
    }),
  tooManySessions: (server: string, max: number) =>
    new HttpError(503, `MCP server "${server}" already has ${max} open sessions; close one or try again later`, {
      kind: 'overloaded',
      headers: { 'retry-after': '5' },
    }),
  spawnFailed: (server: string, cause: unknown) =>
    new HttpError(502, `MCP server "${server}" could not be started: ${(cause as Error).message}`, {
      kind: 'bad_gateway',
      cause,
    }),
  unreachable: (server: string, cause: unknown) =>
    new HttpError(502, `MCP server "${server}" is unreachable`, { kind: 'bad_gateway', cause }),
  rejectedCredentials: (server: string, status: number) =>
    new HttpError(502, `MCP server "${server}" rejected the proxy's credentials (HTTP ${status})`, {
      kind: 'bad_gateway',
    }),
  timeout: (server: string, ms: number) =>
    new HttpError(504, `MCP server "${server}" did not answer within ${ms} ms`, { kind: 'timeout' }),
  shuttingDown: () => new HttpError(503, 'The proxy is shutting down', { kind: 'unavailable' }),
} as const;

/** JSON-RPC error codes the stdio bridge answers a pending request with. */
export const RPC_SERVER_EXITED = -32000;
export const RPC_TIMEOUT = -32001;
/** The code of a request the proxy refuses for its key (a server it may not use, its rpm used up). */
export const RPC_REFUSED = -32003;

export const rpcMessages = {
  exited: (server: string, how: string) => `MCP server "${server}" process ${how} before answering`,
  timeout: (server: string, ms: number) => `MCP server "${server}" did not answer within ${ms} ms`,
} as const;
