/**
 * relayResponse between real sockets: an upstream (node:http) answered through
 * an undici Pool and relayed by a node:http server, as the proxy does.
 */
import { once } from 'node:events';
import { createServer, request, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Context } from 'koa';
import { Pool, type Dispatcher } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { relayResponse } from '../../../src/proxy/passthrough.ts';

const servers: Server[] = [];
const pools: Pool[] = [];

afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.destroy()));
  for (const server of servers.splice(0)) server.closeAllConnections();
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
});

async function serve(handler: (res: ServerResponse) => void): Promise<number> {
  const server = createServer((_req, res) => handler(res));
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

/** A relay in front of `upstreamPort`; `relayed` gets each upstream response it relays. */
async function relay(upstreamPort: number, relayed: (body: Dispatcher.ResponseData['body']) => void): Promise<number> {
  const pool = new Pool(`http://127.0.0.1:${upstreamPort}`);
  pools.push(pool);
  const server = createServer(async (_req, res) => {
    const response = await pool.request({ method: 'GET', path: '/' });
    relayed(response.body);
    relayResponse({ res, respond: true } as unknown as Context, response);
  });
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

interface Received {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  /** The response ended before its body was complete. */
  cut: boolean;
}

/** A client GET: what it received, and whether its response was cut short. */
function get(port: number): Promise<Received> {
  return new Promise((resolve, reject) => {
    request({ port, host: '127.0.0.1', path: '/', agent: false }, (res) => {
      let body = '';
      const received = (cut: boolean) => resolve({ status: res.statusCode ?? 0, headers: res.headers, body, cut });
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => received(false));
      res.on('error', () => received(true));
    }).on('error', reject).end();
  });
}

describe('relayResponse', () => {
  it('relays status, headers and body, minus hop-by-hop headers, and lets go of the body once it ended', async () => {
    const upstream = await serve((res) => {
      res.writeHead(201, { 'content-type': 'application/json', 'x-request-id': 'r1', 'keep-alive': 'timeout=5' });
      res.end('{"ok":true}');
    });
    const bodies: Dispatcher.ResponseData['body'][] = [];
    const port = await relay(upstream, (body) => bodies.push(body));
    const answer = await get(port);
    expect(answer).toMatchObject({ status: 201, cut: false });
    expect(answer.headers['x-request-id']).toBe('r1');
    expect(answer.headers['keep-alive']).not.toBe('timeout=5');
    expect(answer.body).toBe('{"ok":true}');
    expect(bodies[0]?.listenerCount('error')).toBe(0);
  });

  it('cuts the client\'s response when the upstream fails mid-body, and keeps serving', async () => {
    const upstream = await serve((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: one\n\n');
      setTimeout(() => res.destroy(), 20);
    });
    const port = await relay(upstream, () => undefined);
    const first = await get(port);
    expect(first).toMatchObject({ status: 200, body: 'data: one\n\n', cut: true });
    // The relay is still up: a second request gets the same treatment, not a refused connection.
    expect(await get(port)).toMatchObject({ status: 200, cut: true });
  });
});
