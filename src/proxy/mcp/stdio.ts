import { randomUUID } from 'node:crypto';
import type { ProxyContext } from '../context.ts';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { StdioMcpServer } from '../config/mcp.ts';
import type { Logger } from '../../log.ts';
import { proxyErrors } from '../errors.ts';
import { StdioChild } from './child.ts';
import { mcpErrors } from './errors.ts';
import { StdioSession } from './stdio-session.ts';

export interface StdioOptions {
  env: NodeJS.ProcessEnv;
  log: Logger;
}

/** Any JSON: a JSON-RPC message, or a batch of them from clients of older protocol versions. */
function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw proxyErrors.invalidJson();
  }
}

function initializes(body: unknown): boolean {
  return Array.isArray(body) ? body.some(isInitializeRequest) : isInitializeRequest(body);
}

/**
 * A local stdio MCP server bridged to Streamable HTTP: an initialize request
 * spawns a process and opens a session (Mcp-Session-Id), every later request
 * of that session goes to the same process, and the session ends with DELETE,
 * the process's exit, `idle_timeout_ms` without a request, or close().
 */
export class StdioBridge {
  readonly #name: string;
  readonly #server: StdioMcpServer;
  readonly #options: StdioOptions;
  readonly #sessions = new Map<string, StdioSession>();
  /** Sessions whose process is being spawned: they count against the limit. */
  #starting = 0;
  #closing = false;

  constructor(name: string, server: StdioMcpServer, options: StdioOptions) {
    this.#name = name;
    this.#server = server;
    this.#options = options;
  }

  get sessionCount(): number {
    return this.#sessions.size;
  }

  /** `raw`: the request's body (a POST's). */
  async handle(ctx: ProxyContext, raw: Buffer | undefined): Promise<void> {
    if (this.#closing) throw mcpErrors.shuttingDown();
    const body = raw === undefined ? undefined : parseJson(raw);
    const sessionId = ctx.get('mcp-session-id');
    if (sessionId) {
      const session = this.#sessions.get(sessionId);
      if (!session) throw mcpErrors.sessionNotFound();
      await session.handle(ctx, body);
      return;
    }
    if (ctx.method !== 'POST' || !initializes(body)) throw mcpErrors.noSession();
    const session = await this.#open();
    await session.handle(ctx, body);
    // The transport refused the initialize (say, a wrong Accept header): nothing to keep.
    if (!session.initialized) await session.close();
  }

  async #open(): Promise<StdioSession> {
    if (this.#sessions.size + this.#starting >= this.#server.maxSessions) {
      throw mcpErrors.tooManySessions(this.#name, this.#server.maxSessions);
    }
    this.#starting++;
    let child: StdioChild;
    try {
      child = await StdioChild.spawn(this.#server, this.#options.env);
    } catch (error) {
      throw mcpErrors.spawnFailed(this.#name, error);
    } finally {
      this.#starting--;
    }
    const session = new StdioSession(randomUUID(), this.#name, this.#server, child, this.#options.log);
    this.#sessions.set(session.id, session);
    session.onend = () => this.#sessions.delete(session.id);
    this.#options.log.info({ mcp_server: this.#name, mcp_session: session.id, pid: child.pid }, 'MCP session opened');
    if (this.#closing) {
      await session.close();
      throw mcpErrors.shuttingDown();
    }
    return session;
  }

  /** Ends every session and its process; later requests get 503. */
  async close(): Promise<void> {
    this.#closing = true;
    await Promise.all([...this.#sessions.values()].map((session) => session.close('The proxy is shutting down')));
  }
}
