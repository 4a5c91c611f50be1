/**
 * The Responses API's WebSocket mode (`GET /v1/responses` with `Upgrade:
 * websocket`), as Codex CLI speaks it with `supports_websockets = true`. The
 * upgrade and every turn go through the proxy's own HTTP path in memory (see
 * loopback.ts): the upgrade is admitted by the same origin, host and key
 * rules as a POST, and each `response.create` is a streamed POST to the route.
 */
import type { IncomingHttpHeaders, IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { WebSocketServer } from 'ws';
import type { HttpError } from '../../http/errors.ts';
import type { Logger } from '../../log.ts';
import { proxyErrors } from '../errors.ts';
import type { ProtocolRecord } from '../protocols/registry.ts';
import { loopback } from './loopback.ts';
import { CLOSE_GOING_AWAY, CLOSE_NORMAL, ResponsesSocket } from './socket.ts';

/** Marks the in-memory request that asks the route whether an upgrade may go ahead (answered 204 if so). */
export const UPGRADE_CHECK_HEADER = 'x-gatehouse-websocket-upgrade';

/** Headers of the upgrade request that belong to the handshake, not to the requests made on its behalf. */
const HANDSHAKE = /^(?:connection|upgrade|content-length|transfer-encoding|sec-websocket-.*)$/;

/** How long sockets still open after the shutdown grace get to see their close frame out. */
const CLOSE_FLUSH_MS = 1_000;

const STATUS_CODES = process.getBuiltinModule('node:http').STATUS_CODES;

export interface WebSocketRoute {
  path: string;
  /** The route's error body (its protocol's shape) for one of the proxy's own errors. */
  errorBody(error: HttpError): unknown;
}

export interface WebSocketSettings {
  /** Largest frame taken: the HTTP route's body limit. */
  maxPayload: number;
  /** How long one connection may stay open. */
  maxConnectionMs: number;
}

/** What the connections tell: one more turn sent on. */
export interface WebSocketEvents {
  turn(): void;
}

function turnHeaders(upgrade: IncomingHttpHeaders): IncomingHttpHeaders {
  const headers: IncomingHttpHeaders = {};
  for (const name in upgrade) if (!HANDSHAKE.test(name)) headers[name] = upgrade[name];
  return headers;
}

/** Answers an upgrade request with a plain HTTP answer on the raw socket, and closes it. */
function refuse(socket: Duplex, status: number, headers: IncomingHttpHeaders, body: Buffer): void {
  const lines = [`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}`];
  for (const name of ['content-type', 'retry-after', 'www-authenticate']) {
    const value = headers[name];
    if (typeof value === 'string') lines.push(`${name}: ${value}`);
  }
  lines.push(`content-length: ${body.length}`, 'connection: close', '', '');
  socket.end(Buffer.concat([Buffer.from(lines.join('\r\n')), body]));
}

/** Refuses an upgrade with the answer the route gave its check. */
async function relayRefusal(socket: Duplex, answer: IncomingMessage): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of answer) chunks.push(chunk as Buffer);
  refuse(socket, answer.statusCode ?? 500, answer.headers, Buffer.concat(chunks));
}

/** The routes a protocol also serves over a WebSocket, each with its protocol's error shape. */
export function webSocketRoutes(protocols: ProtocolRecord): WebSocketRoute[] {
  return Object.values(protocols).flatMap((spec) =>
    spec.routes.flatMap((route) =>
      'websocket' in route && route.websocket
        ? [{ path: route.path, errorBody: (error: HttpError) => spec.errors.body(error) }]
        : [],
    ),
  );
}

/**
 * The WebSocket connections of one server: their upgrades, their 60-minute
 * (configurable) limit, and their end on shutdown.
 */
export class ResponsesWebSockets {
  readonly #routes: ReadonlyMap<string, WebSocketRoute>;
  readonly #settings: () => WebSocketSettings;
  readonly #log: Logger;
  readonly #open = new Set<ResponsesSocket>();
  readonly #wss: WebSocketServer;
  #draining = false;
  /** Called when the last connection has closed (while shutdown waits for it). */
  #emptied: (() => void) | undefined;

  readonly #events: WebSocketEvents;

  constructor(
    routes: readonly WebSocketRoute[],
    settings: () => WebSocketSettings,
    log: Logger,
    events: WebSocketEvents = { turn: () => undefined },
  ) {
    this.#events = events;
    this.#routes = new Map(routes.map((r) => [r.path, r]));
    this.#settings = settings;
    this.#log = log;
    // Codex offers permessage-deflate; frames are checked against the body limit one by one (maxPayload below).
    this.#wss = new WebSocketServer({ noServer: true, perMessageDeflate: true, maxPayload: settings().maxPayload });
  }

  get size(): number {
    return this.#open.size;
  }

  /** Whether an upgrade request is one of ours (node:http's shouldUpgradeCallback); others stay plain requests. */
  readonly accepts = (req: IncomingMessage): boolean =>
    req.headers.upgrade?.toLowerCase() === 'websocket' && this.#routes.has(this.#path(req));

  /**
   * Takes `server`'s upgrades (those `accepts` lets through, as its shouldUpgradeCallback). Turns are requests to
   * that same server.
   */
  serve(server: Server): void {
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      socket.on('error', () => socket.destroy());
      this.#upgrade(server, req, socket, head).catch((error: unknown) => {
        this.#log.warn({ err: (error as Error).message }, 'websocket upgrade failed');
        socket.destroy();
      });
    });
  }

  #path(req: IncomingMessage): string {
    const url = req.url ?? '/';
    const query = url.indexOf('?');
    return query < 0 ? url : url.slice(0, query);
  }

  async #upgrade(server: Server, req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const path = this.#path(req);
    const route = this.#routes.get(path);
    const headers = turnHeaders(req.headers);
    if (route && this.#draining) {
      const error = proxyErrors.shuttingDown();
      const body = Buffer.from(JSON.stringify(route.errorBody(error)));
      refuse(socket, error.status, { 'content-type': 'application/json' }, body);
      return;
    }
    const check = loopback(server, {
      method: 'GET',
      path: req.url ?? path,
      headers: route ? { ...headers, [UPGRADE_CHECK_HEADER]: '1' } : headers,
    });
    const answer = await check.answer;
    if (answer.statusCode !== 204 || !route) return relayRefusal(socket, answer);
    answer.resume();
    this.#wss.handleUpgrade(req, socket, head, (ws) => {
      const settings = this.#settings();
      const send = (body: string) => {
        this.#events.turn();
        return loopback(server, {
          method: 'POST',
          path: req.url ?? path,
          headers: {
            ...headers,
            'content-type': 'application/json',
            accept: 'text/event-stream',
            'content-length': String(Buffer.byteLength(body)),
          },
          body,
        });
      };
      const client = new ResponsesSocket(ws, { send, errorBody: (error) => route.errorBody(error) });
      this.#open.add(client);
      const minutes = Math.round(settings.maxConnectionMs / 60_000);
      const limit = setTimeout(
        () => client.end(CLOSE_NORMAL, 'connection limit reached', proxyErrors.connectionLimit(minutes)),
        settings.maxConnectionMs,
      );
      limit.unref();
      ws.once('close', () => {
        clearTimeout(limit);
        this.#open.delete(client);
        if (this.#open.size === 0) this.#emptied?.();
      });
      if (this.#draining) client.end(CLOSE_GOING_AWAY, 'the proxy is shutting down', proxyErrors.shuttingDown());
    });
  }

  /**
   * Shutdown has begun: idle connections close now, each with a close frame
   * saying why; one with a response under way closes when it ends (the
   * shutdown grace cuts it like any stream). New upgrades are refused.
   */
  drain(): void {
    this.#draining = true;
    for (const client of this.#open) {
      client.end(CLOSE_GOING_AWAY, 'the proxy is shutting down', proxyErrors.shuttingDown());
    }
  }

  /** Resolves once every connection has closed, dropping those still open after `graceMs` (and a flush). */
  async closed(graceMs: number): Promise<void> {
    if (this.#open.size > 0) {
      const emptied = new Promise<void>((resolve) => (this.#emptied = resolve));
      await Promise.race([emptied, sleep(graceMs + CLOSE_FLUSH_MS, undefined, { ref: false })]);
    }
    for (const client of this.#open) client.terminate();
    this.#wss.close();
  }
}
