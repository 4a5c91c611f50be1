import type { IncomingHttpHeaders, IncomingMessage, Server } from 'node:http';
import { duplexPair } from 'node:stream';

const http = process.getBuiltinModule('node:http');

/** One HTTP exchange with the proxy's own server, in memory. */
export interface Exchange {
  /** The answer's status and headers; its body streams, paused by the reader's backpressure. */
  readonly answer: Promise<IncomingMessage>;
  /** Hangs up: the request's response closes unfinished, as when a client's connection drops. */
  cancel(): void;
}

export interface LoopbackRequest {
  method: 'GET' | 'POST';
  path: string;
  headers: IncomingHttpHeaders;
  body?: string;
}

/**
 * Sends a request through `server` as if a client had connected: Node's
 * 'connection' event takes any Duplex, and the client side is node:http's own
 * request over the other end of the pair. So a request made this way meets
 * every middleware a network request meets (log line, origin, host, key,
 * limits, routing, fallback, usage, metrics) and its answer is read as a
 * client reads it, backpressure included. Nothing is copied of the HTTP
 * path: the WebSocket transport is a client of it.
 */
export function loopback(server: Server, request: LoopbackRequest): Exchange {
  const [client, served] = duplexPair();
  server.emit('connection', served);
  const sent = http.request({
    method: request.method,
    path: request.path,
    headers: { ...request.headers, connection: 'close' },
    createConnection: () => client,
  });
  const answer = new Promise<IncomingMessage>((resolve, reject) => {
    sent.once('response', resolve);
    sent.once('error', reject);
  });
  // Observed by the caller; a cancelled exchange's rejection is expected.
  answer.catch(() => undefined);
  sent.end(request.body);
  return {
    answer,
    cancel: () => {
      served.destroy();
      client.destroy();
    },
  };
}
