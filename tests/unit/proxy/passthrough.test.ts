/**
 * forward() between real sockets: an upstream (node:http), a Koa app that
 * forwards to it as the proxy's endpoints do, and node:http clients.
 */
import { once } from 'node:events';
import {
  Agent,
  createServer,
  request,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { afterEach, describe, expect, it } from 'vitest';
import { clientGone } from '../../../src/proxy/client-gone.ts';
import { forward } from '../../../src/proxy/passthrough.ts';
import { ClientCredentials } from '../../../src/proxy/credentials.ts';
import { Admission } from '../../../src/proxy/keys.ts';
import { PriceBook } from '../../../src/proxy/prices.ts';
import { Spending } from '../../../src/proxy/spending.ts';
import { memoryState } from '../../../src/proxy/state/shared.ts';
import { createLogger } from '../../../src/log.ts';
import { PROTOCOLS } from '../../../src/proxy/protocols/registry.ts';
import { closeUpstreams, createUpstream, type Upstream } from '../../../src/proxy/upstreams.ts';

const servers: Server[] = [];
const upstreams: Upstream[] = [];

afterEach(async () => {
  await closeUpstreams(upstreams.splice(0));
  for (const server of servers.splice(0)) server.closeAllConnections();
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
});

async function listen(server: Server): Promise<number> {
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

const serve = (handler: (req: IncomingMessage, res: ServerResponse) => void) => listen(createServer(handler));

/** A Koa app forwarding every request's body to `upstreamPort`, as the endpoints do. */
async function proxyTo(upstreamPort: number): Promise<number> {
  const upstream = createUpstream(
    {
      name: 'up',
      protocol: 'openai',
      baseUrl: `http://127.0.0.1:${upstreamPort}/v1`,
      apiKey: 'sk-up',
      models: ['*'],
      headers: {},
      timeoutMs: 5_000,
      responsesApi: true,
    },
    PROTOCOLS.openai,
  );
  upstreams.push(upstream);
  const log = createLogger('silent');
  const spending = new Spending(new Admission(memoryState()), new PriceBook([], [], log), log);
  const app = new Koa().use((ctx) =>
    forward(ctx, {
      upstream,
      path: '/chat/completions',
      body: Buffer.from('{}'),
      signal: clientGone(ctx),
      credentials: new ClientCredentials(PROTOCOLS),
      usage: PROTOCOLS.openai,
      spending,
    }),
  );
  // A cut response's socket error reaches Koa's 'error' event (the proxy logs it at debug).
  app.silent = true;
  const handle = app.callback();
  return listen(createServer((req, res) => void handle(req, res)));
}

interface Received {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  /** The response ended before its body was complete. */
  cut: boolean;
}

/**
 * A client POST: what it received, and whether its response was cut short.
 * `onData` sees each chunk as it arrives, with the response to destroy.
 */
interface PostOptions {
  agent?: Agent | false;
  onData?: (chunk: string, res: IncomingMessage) => void;
}

function post(port: number, { agent = false, onData = () => undefined }: PostOptions = {}): Promise<Received> {
  return new Promise((resolve, reject) => {
    request({ port, host: '127.0.0.1', method: 'POST', path: '/', agent }, (res) => {
      let body = '';
      const received = (cut: boolean) => resolve({ status: res.statusCode ?? 0, headers: res.headers, body, cut });
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
        onData(chunk, res);
      });
      res.on('end', () => received(false));
      res.on('error', () => received(true));
      res.on('close', () => received(!res.complete));
    })
      .on('error', reject)
      .end('{}');
  });
}

describe('forward', () => {
  it("relays status, headers and body, minus hop-by-hop headers, with the upstream's credential", async () => {
    let authorization: string | undefined;
    const upstream = await serve((req, res) => {
      authorization = req.headers.authorization;
      res.writeHead(201, { 'content-type': 'application/json', 'x-request-id': 'r1', 'keep-alive': 'timeout=5' });
      res.end('{"ok":true}');
    });
    const answer = await post(await proxyTo(upstream));
    expect(answer).toMatchObject({ status: 201, body: '{"ok":true}', cut: false });
    expect(answer.headers['x-request-id']).toBe('r1');
    expect(answer.headers['keep-alive']).not.toBe('timeout=5');
    expect(authorization).toBe('Bearer sk-up');
  });

  it("leaves the client's keep-alive connection open for its next request", async () => {
    const upstream = await serve((_req, res) => res.end('{"ok":true}'));
    const port = await proxyTo(upstream);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const sockets = new Set<unknown>();
    agent.on('free', (socket) => sockets.add(socket));
    try {
      for (let i = 0; i < 3; i++)
        expect(await post(port, { agent })).toMatchObject({ status: 200, body: '{"ok":true}', cut: false });
      expect(sockets.size).toBe(1);
    } finally {
      agent.destroy();
    }
  });

  it("cuts the client's response when the upstream fails mid-body, and keeps serving", async () => {
    const upstream = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: one\n\n');
      setTimeout(() => res.destroy(), 20);
    });
    const port = await proxyTo(upstream);
    expect(await post(port)).toMatchObject({ status: 200, body: 'data: one\n\n', cut: true });
    // Still up: a second request gets the same treatment, not a refused connection.
    expect(await post(port)).toMatchObject({ status: 200, cut: true });
  });

  it('aborts the upstream call when the client leaves mid-stream', async () => {
    let upstreamClosed: Promise<boolean> = Promise.resolve(false);
    const upstream = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const timer = setInterval(() => res.write('data: tick\n\n'), 10);
      upstreamClosed = once(res, 'close').then(() => {
        clearInterval(timer);
        return !res.writableFinished;
      });
    });
    const answer = await post(await proxyTo(upstream), { onData: (_chunk, res) => void res.destroy() });
    expect(answer.cut).toBe(true);
    // The upstream's response closed before it finished: the proxy hung up on it.
    expect(await upstreamClosed).toBe(true);
  });

  it('aborts the upstream call when the client leaves before the upstream answered', async () => {
    const arrived = Promise.withResolvers<undefined>();
    let upstreamClosed: Promise<unknown> = new Promise(() => undefined);
    const upstream = await serve((_req, res) => {
      // Never answers: only the proxy hanging up ends this request.
      upstreamClosed = once(res, 'close').then(() => 'closed');
      arrived.resolve(undefined);
    });
    const client = request({
      port: await proxyTo(upstream),
      host: '127.0.0.1',
      method: 'POST',
      path: '/',
      agent: false,
    });
    client.on('error', () => undefined).end('{}');
    await arrived.promise;
    client.destroy();
    const stillOpen = new Promise((resolve) => setTimeout(() => resolve('still open'), 5_000).unref());
    expect(await Promise.race([upstreamClosed, stillOpen])).toBe('closed');
  });

  it('answers 502 when the upstream cannot be reached', async () => {
    const gone = await serve(() => undefined);
    const server = servers.pop();
    await new Promise((resolve) => server?.close(resolve));
    expect(await post(await proxyTo(gone))).toMatchObject({ status: 502, cut: false });
  });
});
