import type { IncomingMessage } from 'node:http';

/** How long the rest of a refused body is read and dropped, then the connection is dropped. */
const LINGER_MS = 10_000;

const draining = new WeakSet<IncomingMessage>();

/**
 * Reads and drops the rest of a request body that was refused (a 413), so
 * its client, still sending, can read the answer: a socket closed with input
 * unread answers the client with a reset, and the client then loses the answer
 * it had not read yet. On a connection that closes after the answer
 * (`Connection: close`, HTTP/1.0), Node destroys the socket once the answer
 * is written (destroySoon); here it only closes its sending side instead, and
 * keeps reading until the client has finished or LINGER_MS have passed.
 */
export function dropRestOfBody(req: IncomingMessage): void {
  if (req.readableEnded || req.destroyed || draining.has(req)) return;
  draining.add(req);
  const timer = setTimeout(() => req.destroy(), LINGER_MS);
  timer.unref();
  // A request without a socket is a stream in a test: nothing to linger on.
  const socket = req.socket as IncomingMessage['socket'] | null;
  if (socket) {
    socket.once('close', () => clearTimeout(timer));
    socket.destroySoon = () => {
      if (socket.writable) socket.end();
    };
  }
  // Whoever was reading (a data handler, an async iterator, a paused body parser) is done with it.
  req.removeAllListeners('readable');
  req.removeAllListeners('data');
  req.on('data', () => undefined);
  req.resume();
}
