import type { ProxyContext } from '../context.ts';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  isJSONRPCErrorResponse,
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import type { StdioMcpServer } from '../config/mcp.ts';
import type { Logger } from '../../log.ts';
import type { ChildExit, StdioChild } from './child.ts';
import { RPC_SERVER_EXITED, RPC_TIMEOUT, rpcMessages } from './errors.ts';

function describeExit({ code, signal }: ChildExit): string {
  return signal ? `was killed by ${signal}` : `exited with code ${code}`;
}

/**
 * One MCP session: the SDK's Streamable HTTP server transport on the client
 * side, one stdio process on the other, and JSON-RPC messages relayed between
 * them unchanged. Every client request is answered: by the process, or with a
 * JSON-RPC error when the process dies or outlives `timeout_ms`.
 */
export class StdioSession {
  readonly id: string;
  readonly #name: string;
  readonly #server: StdioMcpServer;
  readonly #child: StdioChild;
  readonly #transport: StreamableHTTPServerTransport;
  readonly #log: Logger;
  /** Client requests the process has not answered yet, with their deadline timers. */
  readonly #pending = new Map<RequestId, NodeJS.Timeout>();
  /** Progress tokens → the request they report on, so progress rides that request's stream. */
  readonly #progress = new Map<string | number, RequestId>();
  #initialized = false;
  #inflight = 0;
  #idleTimer: NodeJS.Timeout | undefined;
  #ended = false;
  /** Called once when the session ends for any reason. */
  onend: (() => void) | undefined;

  constructor(id: string, name: string, server: StdioMcpServer, child: StdioChild, log: Logger) {
    this.id = id;
    this.#name = name;
    this.#server = server;
    this.#child = child;
    this.#log = log.child({ mcp_server: name, mcp_session: id, pid: child.pid });
    this.#transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => id,
      onsessioninitialized: () => {
        this.#initialized = true;
      },
    });
    this.#transport.onmessage = (message) => this.#fromClient(message);
    this.#transport.onclose = () => void this.close();
    this.#transport.onerror = (error) => this.#log.debug({ err: error }, 'MCP transport rejected a request');
    child.onmessage = (message) => this.#fromProcess(message);
    child.onerror = (error) => {
      this.#log.warn({ err: error }, 'MCP server process wrote something that is not JSON-RPC');
    };
    child.onexit = (exit) => this.#exited(exit);
  }

  get initialized(): boolean {
    return this.#initialized;
  }

  /** Hands one HTTP request to the transport, which writes the response itself. */
  async handle(ctx: ProxyContext, parsedBody: unknown): Promise<void> {
    this.#inflight++;
    this.#armIdle();
    ctx.res.once('close', () => {
      this.#inflight--;
      this.#armIdle();
    });
    ctx.respond = false;
    await this.#transport.handleRequest(ctx.req, ctx.res, parsedBody);
  }

  #fromClient(message: JSONRPCMessage): void {
    if (isJSONRPCRequest(message)) {
      const { id } = message;
      const timer = setTimeout(() => this.#timedOut(id), this.#server.timeoutMs);
      timer.unref();
      this.#pending.set(id, timer);
      const token = (message.params?._meta as { progressToken?: string | number } | undefined)?.progressToken;
      if (token !== undefined) this.#progress.set(token, id);
    }
    this.#child.send(message);
  }

  #fromProcess(message: JSONRPCMessage): void {
    if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) {
      // An answer to a request already failed by timeout has no stream left to go to.
      if (message.id === undefined || !this.#settle(message.id)) return;
      this.#deliver(message);
      return;
    }
    const progress = isJSONRPCNotification(message) && message.method === 'notifications/progress';
    const token = progress ? (message.params?.['progressToken'] as string | number | undefined) : undefined;
    const related = token === undefined ? undefined : this.#progress.get(token);
    // Requests and notifications of the process's own go out on the session's GET stream.
    this.#deliver(message, related !== undefined && this.#pending.has(related) ? related : undefined);
  }

  #deliver(message: JSONRPCMessage, relatedRequestId?: RequestId): void {
    const options = relatedRequestId === undefined ? undefined : { relatedRequestId };
    this.#transport.send(message, options).catch((error: unknown) => {
      this.#log.debug({ err: error }, 'MCP message had no open stream to go to');
    });
  }

  /** Forgets a pending request; false when it was not pending. */
  #settle(id: RequestId): boolean {
    const timer = this.#pending.get(id);
    if (timer === undefined) return false;
    clearTimeout(timer);
    this.#pending.delete(id);
    for (const [token, request] of this.#progress) if (request === id) this.#progress.delete(token);
    return true;
  }

  #fail(id: RequestId, code: number, message: string): void {
    if (this.#settle(id)) this.#deliver({ jsonrpc: '2.0', id, error: { code, message } });
  }

  #timedOut(id: RequestId): void {
    const message = rpcMessages.timeout(this.#name, this.#server.timeoutMs);
    this.#log.warn({ request_id: id }, message);
    this.#fail(id, RPC_TIMEOUT, message);
    const params = { requestId: id, reason: 'timeout' };
    this.#child.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params });
  }

  #exited(exit: ChildExit): void {
    if (!this.#ended) {
      const fields = { code: exit.code, signal: exit.signal, stderr: exit.stderr };
      this.#log.warn(fields, `MCP server "${this.#name}" process ${describeExit(exit)}`);
    }
    void this.close(rpcMessages.exited(this.#name, describeExit(exit)));
  }

  /** An idle session is one with no open HTTP request (not even a GET stream) for `idle_timeout_ms`. */
  #armIdle(): void {
    clearTimeout(this.#idleTimer);
    if (this.#inflight > 0 || this.#ended) return;
    this.#idleTimer = setTimeout(() => {
      this.#log.info(`MCP session idle for ${this.#server.idleTimeoutMs} ms; closing it`);
      void this.close();
    }, this.#server.idleTimeoutMs);
    this.#idleTimer.unref();
  }

  /**
   * Ends the session once: answers what is still pending, closes the
   * client's streams and stops the process.
   */
  async close(reason = `MCP session of "${this.#name}" closed`): Promise<void> {
    if (this.#ended) return;
    this.#ended = true;
    clearTimeout(this.#idleTimer);
    for (const id of [...this.#pending.keys()]) this.#fail(id, RPC_SERVER_EXITED, reason);
    this.onend?.();
    await this.#transport.close();
    await this.#child.close();
    this.#log.info('MCP session closed');
  }
}
