/**
 * EventStream between real sockets: a Koa app whose handler writes through one, and a node:http client.
 */
import { once } from 'node:events';
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { HttpError } from '../../../src/http/errors.ts';
import { clientGone } from '../../../src/proxy/client-gone.ts';
import type { ProxyContext, ProxyState } from '../../../src/proxy/context.ts';
import { EventStream, type EventStreamOptions } from '../../../src/proxy/event-stream.ts';
import { OpenStreams } from '../../../src/proxy/open-streams.ts';

const servers: Server[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) server.closeAllConnections();
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
});

const failure = (error: Error) => new HttpError(502, `upstream failed: ${error.message}`, { kind: 'upstream_error' });
const errorEvent = (error: HttpError) => `event: error\ndata: ${error.message}\n\n`;

/** Serves one handler that gets an EventStream on its request (the app's `state` kept for the test to read). */
async function serve(
  options: Partial<EventStreamOptions>,
  handler: (stream: EventStream, ctx: ProxyContext, streams: OpenStreams) => void | Promise<void>,
): Promise<{ port: number; states: ProxyState[]; streams: OpenStreams }> {
  const states: ProxyState[] = [];
  const streams = new OpenStreams();
  const app = new Koa<ProxyState>().use(async (ctx) => {
    states.push(ctx.state);
    const stream = new EventStream(ctx, clientGone(ctx), streams, { errorEvent, failure, ...options });
    stream.open(200, { 'content-type': 'text/event-stream' });
    await handler(stream, ctx, streams);
  });
  app.silent = true;
  const handle = app.callback();
  const server = createServer((req, res) => void handle(req, res));
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { port: (server.address() as AddressInfo).port, states, streams };
}

/** A GET: its body, and whether the response ended before it was complete. */
function get(port: number, onData: (chunk: string, res: IncomingMessage) => void = () => undefined) {
  return new Promise<{ body: string; cut: boolean }>((resolve, reject) => {
    request({ port, host: '127.0.0.1', path: '/', agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
        onData(chunk, res);
      });
      res.on('close', () => resolve({ body, cut: !res.complete }));
    })
      .on('error', reject)
      .end();
  });
}

describe('EventStream', () => {
  it('ends with its closing once; a later end or cut writes nothing', async () => {
    let closings = 0;
    const closing = () => ({ bytes: `closing ${String(++closings)}\n\n` });
    const { port, states } = await serve({ closing }, (stream) => {
      stream.write('data: one\n\n');
      stream.end('data: two\n\n');
      stream.end('data: three\n\n');
      stream.cut(new HttpError(503, 'late'));
    });
    expect(await get(port)).toEqual({ body: 'data: one\n\ndata: two\n\nclosing 1\n\n', cut: false });
    expect(closings).toBe(1);
    expect(states[0]?.cut).toBeUndefined();
  });

  it("cuts with the client protocol's error event, ending an event the upstream's bytes left open first", async () => {
    let written = '';
    const write = (stream: EventStream, text: string) => {
      written += text;
      stream.write(text);
    };
    const lastBytes = (count: number) => written.slice(-count);
    const { port, states } = await serve({ lastBytes }, (stream) => {
      write(stream, 'data: one\n\ndata: tw');
      stream.cut(new HttpError(503, 'shutting down', { kind: 'shutdown' }));
    });
    expect(await get(port)).toEqual({
      body: 'data: one\n\ndata: tw\n\nevent: error\ndata: shutting down\n\n',
      cut: false,
    });
    expect(states[0]?.cut).toBe('shutdown');
  });

  it('is cut by a shutdown through OpenStreams, and stops what feeds it', async () => {
    let stopped = 0;
    let feeding: EventStream | undefined;
    // A stopped source fails after the cut, as an undici body destroyed before its end does; with the client's
    // socket still full, the error event must go out all the same.
    const stop = () => {
      stopped += 1;
      process.nextTick(() => feeding?.destroy(new Error('aborted')));
    };
    const big = `data: ${'x'.repeat(4 * 1024 * 1024)}\n\n`;
    const { port, states, streams } = await serve({ stop }, (stream) => {
      feeding = stream;
      stream.write(big);
    });
    const received = await get(port, () => void streams.cutAll(new HttpError(503, 'bye')));
    expect(received.cut).toBe(false);
    expect(received.body).toBe(`${big}event: error\ndata: bye\n\n`);
    expect(stopped).toBe(1);
    expect(states[0]?.cut).toBe('503');
  });

  it('drops the connection on a cut when the protocol has no error event', async () => {
    const { port } = await serve({ errorEvent: () => undefined }, (stream) => {
      stream.write('data: one\n\n');
      setTimeout(() => stream.cut(new HttpError(502, 'gone')), 20);
    });
    expect(await get(port)).toEqual({ body: 'data: one\n\n', cut: true });
  });

  it("turns an upstream's failure into the error event, and only lets go of a client that left", async () => {
    const { port, states } = await serve({}, (stream) => {
      stream.write('data: one\n\n');
      stream.destroy(new Error('socket hang up'));
    });
    expect(await get(port)).toEqual({
      body: 'data: one\n\nevent: error\ndata: upstream failed: socket hang up\n\n',
      cut: false,
    });
    expect(states[0]?.cut).toBe('upstream_error');

    const left = await serve({}, (stream, ctx) => {
      stream.write('data: one\n\n');
      ctx.res.once('close', () => stream.destroy(new Error('aborted')));
    });
    expect(await get(left.port, (_chunk, res) => res.destroy())).toMatchObject({ cut: true });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(left.states[0]?.cut).toBeUndefined();
  });

  it("pauses its source while the client's socket is full and resumes it once drained", async () => {
    const calls: string[] = [];
    const source = { pause: () => calls.push('pause'), resume: () => calls.push('resume') };
    const big = `data: ${'x'.repeat(4 * 1024 * 1024)}\n\n`;
    const { port } = await serve({}, async (stream, ctx) => {
      stream.writeFrom(source, big);
      expect(calls).toEqual(['pause']);
      await once(ctx.res, 'drain');
      stream.end();
    });
    const received = await get(port);
    expect(received.body.length).toBe(big.length);
    expect(calls).toEqual(['pause', 'resume']);
  });

  it("writes its last bytes only once its closing's wait is over (the answer's tokens settled)", async () => {
    const counted = Promise.withResolvers<undefined>();
    const closing = () => ({ bytes: 'data: [DONE]\n\n', counted: counted.promise });
    const { port } = await serve({ closing }, (stream) => {
      stream.write('data: one\n\n');
      stream.end('data: two\n\n');
    });
    let received = '';
    const answer = get(port, (chunk) => (received += chunk));
    await vi.waitFor(() => expect(received).toBe('data: one\n\n'));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(received).toBe('data: one\n\n');
    counted.resolve(undefined);
    expect(await answer).toEqual({ body: 'data: one\n\ndata: two\n\ndata: [DONE]\n\n', cut: false });
  });
});
