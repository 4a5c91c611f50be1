import type { IncomingMessage, RequestListener, Server, ServerOptions, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * node:http, taken without importing it as an ES module: such an import reads
 * every export of it, and one of them loads Node's bundled undici (its fetch),
 * which a server does not use.
 */
const http = process.getBuiltinModule('node:http');

/** The open connections of each server made by createServer. */
const openConnections = new WeakMap<Server, Set<Socket>>();

/** node:http's createServer, its connections followed for close(). */
export function createServer(options: ServerOptions = {}, listener?: RequestListener): Server {
  const server = http.createServer(options, listener);
  const open = new Set<Socket>();
  openConnections.set(server, open);
  server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  });
  return server;
}

/**
 * The response a connection is sending, if any: node:http's own field on the
 * socket (it has no public accessor), read only while closing so that a
 * request costs nothing more for it.
 */
function responseOn(socket: Socket): ServerResponse | undefined {
  return (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage ?? undefined;
}

const lastOnItsConnection = (_req: IncomingMessage, res: ServerResponse) => {
  res.shouldKeepAlive = false;
};

export interface ListenOptions {
  port: number;
  host: string;
  /** Further attempts after the first bind fails with EADDRINUSE. */
  retries?: number;
  retryDelayMs?: number;
}

function bindOnce(server: Server, port: number, host: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => {
      server.off('listening', onListening);
      reject(error);
    };
    const onListening = () => {
      server.off('error', onError);
      resolve(server.address() as AddressInfo);
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(port, host);
  });
}

/**
 * Binds, retrying a busy port `retries` times `retryDelayMs` apart, then
 * fails with `Port <PORT> in use after 5 retries` (docs/api.md, Startup).
 */
export async function listen(
  server: Server,
  { port, host, retries = 5, retryDelayMs = 500 }: ListenOptions,
): Promise<AddressInfo> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await bindOnce(server, port, host);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
      if (attempt >= retries) throw new Error(`Port ${port} in use after ${retries} retries`, { cause: error });
      await sleep(retryDelayMs);
    }
  }
}

/**
 * Stops accepting and closes idle keep-alive connections at once. A response
 * under way, or to a request of a connection accepted before, is the last on
 * its connection, which then closes (node:http would keep it open for another
 * request). After `graceMs`, `beforeDrop` may end the answers still open in
 * some orderly way, and whatever connection is left is dropped.
 */
export async function close(
  server: Server,
  graceMs = 2_000,
  beforeDrop: () => Promise<void> = () => Promise.resolve(),
): Promise<void> {
  if (!server.listening) return;
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  // First, so that whatever handles it, a request that arrives from now on is answered with `Connection: close`.
  server.prependListener('request', lastOnItsConnection);
  for (const socket of openConnections.get(server) ?? []) {
    const res = responseOn(socket);
    if (res === undefined) continue;
    if (!res.headersSent) res.shouldKeepAlive = false;
    else res.once('finish', () => socket.destroySoon());
  }
  const timer = setTimeout(() => void beforeDrop().finally(() => server.closeAllConnections()), graceMs);
  timer.unref();
  await closed;
  clearTimeout(timer);
}
