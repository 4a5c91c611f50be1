import type { Server, ServerResponse } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { once } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { close, createServer } from '../../../src/http/server.ts';

const servers: Server[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.closeAllConnections();
});

async function serve(handler: (res: ServerResponse, path: string) => void): Promise<{ server: Server; port: number }> {
  const server = createServer({}, (req, res) => handler(res, req.url ?? ''));
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, port: (server.address() as AddressInfo).port };
}

/** A raw client connection, accepted by the server when this resolves. */
async function accepted(server: Server, port: number): Promise<Socket> {
  const socket = connect(port, '127.0.0.1');
  // A dropped connection may be reset: what the client sees of it is its answer (or none), asserted by each test.
  socket.on('error', () => undefined);
  await Promise.all([once(socket, 'connect'), once(server, 'connection')]);
  return socket;
}

/** Everything the server sends on `socket` until it closes it. */
function received(socket: Socket): Promise<string> {
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
  return new Promise((resolve) => socket.once('close', () => resolve(text)));
}

const get = (socket: Socket, path: string) => socket.write(`GET ${path} HTTP/1.1\r\nHost: test\r\n\r\n`);

describe('close', () => {
  it("answers the requests of connections accepted before it, sent after it began, with 'Connection: close'", async () => {
    let closing: Promise<void> | undefined;
    const { server, port } = await serve((res, path) => {
      // As a review does: the first decision ends it; every later one is refused.
      if (closing === undefined) {
        closing = close(server);
        res.end('first');
      } else res.writeHead(409).end(`late ${path}`);
    });
    const sockets: Socket[] = [];
    // One at a time: each accepted before the next connects.
    for (let i = 0; i < 5; i++) sockets.push(await accepted(server, port));
    const [first, ...others] = sockets as [Socket, ...Socket[]];
    const answers = others.map(received);
    get(first, '/first');
    await vi.waitFor(() => expect(closing).toBeDefined());
    expect(server.listening).toBe(false);
    others.forEach((socket, i) => get(socket, `/${i}`));
    for (const [i, answer] of (await Promise.all(answers)).entries()) {
      expect(answer).toMatch(/^HTTP\/1\.1 409 /);
      expect(answer).toMatch(/\r\nConnection: close\r\n/i);
      expect(answer).toMatch(new RegExp(`late /${i}\\r\\n`));
    }
    await closing;
  });

  it('closes an idle keep-alive connection at once, not one that has not sent its first request yet', async () => {
    const { server, port } = await serve((res) => res.end('ok'));
    const [idle, fresh] = [await accepted(server, port), await accepted(server, port)];
    const idleClosed = once(idle, 'close');
    get(idle, '/one');
    await once(idle, 'data');
    const closing = close(server, 60_000);
    await idleClosed;
    // Only now does the other connection send: it was not dropped with the idle one.
    const answer = received(fresh);
    get(fresh, '/two');
    expect(await answer).toMatch(/^HTTP\/1\.1 200 [^]*\r\nConnection: close\r\n[^]*ok$/i);
    await closing;
  });

  it('lets the responses under way finish, then closes their connections without waiting for the grace', async () => {
    const respond: (() => void)[] = [];
    const { server, port } = await serve((res, path) => {
      if (path === '/stream') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('streamed ');
      }
      respond.push(() => res.end(`${path} to the end`));
    });
    const [plain, streamed] = [await accepted(server, port), await accepted(server, port)];
    const answers = [received(plain), received(streamed)];
    get(plain, '/plain');
    get(streamed, '/stream');
    await vi.waitFor(() => expect(respond).toHaveLength(2));
    const closing = close(server, 60_000);
    for (const end of respond) end();
    const [plainAnswer, streamedAnswer] = await Promise.all(answers);
    expect(plainAnswer).toMatch(/^HTTP\/1\.1 200 [^]*\r\nConnection: close\r\n[^]*\/plain to the end$/i);
    // Its headers went out before the close, keep-alive: its connection ends once the response has.
    expect(streamedAnswer).toMatch(/\r\nConnection: keep-alive\r\n[^]*streamed [^]*\/stream to the end/i);
    await closing;
  });

  it('after the grace, runs beforeDrop, then drops what is still open', async () => {
    const { server, port } = await serve((res) => res.write('never ends'));
    const silent = await accepted(server, port);
    const hanging = await accepted(server, port);
    const answers = [received(silent), received(hanging)];
    get(hanging, '/hang');
    await once(hanging, 'data');
    const beforeDrop = vi.fn(() => {
      expect(silent.destroyed || hanging.destroyed).toBe(false);
      return Promise.resolve();
    });
    await close(server, 300, beforeDrop);
    expect(beforeDrop).toHaveBeenCalledOnce();
    const [silentAnswer, hangingAnswer] = await Promise.all(answers);
    expect(silentAnswer).toBe('');
    expect(hangingAnswer).toMatch(/never ends/);
  });
});
