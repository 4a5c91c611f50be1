/**
 * The Responses API's WebSocket mode (`GET /v1/responses` with `Upgrade:
 * websocket`), as Codex CLI speaks it with `supports_websockets = true`. The
 * upgrade and every turn are requests to the proxy's own handler, in memory
 * (see turn.ts): the upgrade is admitted by the same origin, host and key
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
import { CLOSE_GOING_AWAY, CLOSE_NORMAL, ResponsesSocket } from './socket.ts';
import { sendTurn, TurnRequest, TurnResponse, type RequestHandler, type TurnOutput } from './turn.ts';

/** Marks the in-memory request that asks the route whether an upgrade may go ahead (answered 204 if so). */
export const UPGRADE_CHECK_HEADER = 'x-gatehouse-websocket-upgrade';

/**
 * Headers of the upgrade request that belong to the handshake, not to the requests made on its behalf; and
 * accept-encoding: a turn's answer is read here, event by event, so the upstream must not compress it.
 */
const HANDSHAKE = /^(?:connection|upgrade|content-length|transfer-encoding|accept-encoding|sec-websocket-.*)$/;

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

/** An answer the route gave whole. */
interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** Sends a request without a body to the handler and resolves with its answer (a 500 if it gave none). */
function ask(handle: RequestHandler, req: TurnRequest): Promise<Answer> {
  return new Promise((resolve) => {
    const res = new TurnResponse({
      event: () => undefined,
      backlog: 0,
      hold: () => undefined,
      release: () => undefined,
      answer: (status, headers, body) => resolve({ status, headers, body }),
    });
    res.once('close', () => resolve({ status: 500, headers: {}, body: '' }));
    sendTurn(handle, req, res);
  });
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
   * Takes `server`'s upgrades (those `accepts` lets through, as its shouldUpgradeCallback). The upgrade's check and
   * the turns are requests to `handle`, the handler of the server's own requests.
   */
  serve(server: Server, handle: RequestHandler): void {
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      socket.on('error', () => socket.destroy());
      this.#upgrade(handle, req, socket, head).catch((error: unknown) => {
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

  async #upgrade(handle: RequestHandler, req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const path = this.#path(req);
    const url = req.url ?? path;
    const route = this.#routes.get(path);
    const headers = turnHeaders(req.headers);
    if (route && this.#draining) {
      const error = proxyErrors.shuttingDown();
      const body = Buffer.from(JSON.stringify(route.errorBody(error)));
      refuse(socket, error.status, { 'content-type': 'application/json' }, body);
      return;
    }
    const checkHeaders = route ? { ...headers, [UPGRADE_CHECK_HEADER]: '1' } : headers;
    const answer = await ask(handle, new TurnRequest('GET', url, checkHeaders, req.socket));
    if (answer.status !== 204 || !route) {
      refuse(socket, answer.status, answer.headers, Buffer.from(answer.body));
      return;
    }
    const turnHeadersOf = { ...headers, 'content-type': 'application/json', accept: 'text/event-stream' };
    this.#wss.handleUpgrade(req, socket, head, (ws) => {
      const settings = this.#settings();
      const send = (body: Buffer, output: TurnOutput) => {
        this.#events.turn();
        const res = new TurnResponse(output);
        sendTurn(handle, new TurnRequest('POST', url, turnHeadersOf, req.socket, body), res);
        return res;
      };
      const client = new ResponsesSocket(ws, { send, errorBody: (error) => route.errorBody(error), socket });
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
