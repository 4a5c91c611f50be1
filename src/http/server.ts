import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * node:http's createServer, taken without importing node:http as an ES module:
 * such an import reads every export of it, and one of them loads Node's
 * bundled undici (its fetch), which a server does not use.
 */
export const createServer = process.getBuiltinModule('node:http').createServer;

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
 * Stops accepting, lets in-flight responses finish for up to `graceMs`, then
 * runs `beforeDrop` (which may end the answers still open in some orderly
 * way) and drops whatever connection is left (idle keep-alive sockets would
 * otherwise hold the process open).
 */
export async function close(
  server: Server,
  graceMs = 2_000,
  beforeDrop: () => Promise<void> = () => Promise.resolve(),
): Promise<void> {
  if (!server.listening) return;
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const timer = setTimeout(() => void beforeDrop().finally(() => server.closeAllConnections()), graceMs);
  timer.unref();
  await closed;
  clearTimeout(timer);
}
