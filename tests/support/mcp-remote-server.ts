import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

export interface RemoteMcpFixture {
  url: string;
  port: number;
  /** Method, headers and session of every request the server received. */
  requests: { method: string; headers: IncomingHttpHeaders }[];
  /** Session ids the server handed out. */
  sessions: string[];
  /** POST requests whose client went away before the answer. */
  abandoned: number;
  /** Lets the `gate` tool finish. */
  openGate(): void;
  close(): Promise<void>;
}

function tools(fixture: RemoteMcpFixture, gate: { wait: Promise<void> }): McpServer {
  const server = new McpServer({ name: 'fixture-remote', version: '1.0.0' });
  const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] });
  server.registerTool('add', { inputSchema: { a: z.number(), b: z.number() } }, ({ a, b }) => text(String(a + b)));
  server.registerTool('echo', { inputSchema: { text: z.string() } }, ({ text: value }) => text(value));
  // Sends one progress event, then waits until the test has seen it: a relay that
  // buffered the stream would never deliver the event and the call would hang.
  server.registerTool('gate', {}, async (extra) => {
    const token = extra._meta?.progressToken;
    if (token !== undefined)
      await extra.sendNotification({
        method: 'notifications/progress',
        params: { progressToken: token, progress: 1, total: 2 },
      });
    await gate.wait;
    return text(`gate passed after ${fixture.requests.length} requests`);
  });
  server.registerTool('hang', {}, () => new Promise(() => {}));
  return server;
}

/**
 * A stateful Streamable HTTP MCP server made with the SDK, recording what it
 * received. `requiredAuthorization`, when given, must be the request's
 * Authorization header, else 401.
 */
export async function startRemoteMcpServer({
  host = '127.0.0.1',
  requiredAuthorization,
}: { host?: string; requiredAuthorization?: string } = {}): Promise<RemoteMcpFixture> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  let release = () => {};
  const gate = { wait: new Promise<void>((resolve) => (release = resolve)) };
  const serve = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    fixture.requests.push({ method: req.method ?? '', headers: req.headers });
    if (requiredAuthorization !== undefined && req.headers.authorization !== requiredAuthorization) {
      res
        .writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' })
        .end('{"error":"unauthorized"}');
      return;
    }
    res.once('close', () => {
      if (req.method === 'POST' && !res.writableFinished) fixture.abandoned++;
    });
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body: unknown = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    const sessionId = req.headers['mcp-session-id'];
    let transport = typeof sessionId === 'string' ? transports.get(sessionId) : undefined;
    if (!transport && isInitializeRequest(body)) {
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          transports.set(id, created);
          fixture.sessions.push(id);
        },
      });
      await tools(fixture, gate).connect(created);
      transport = created;
    }
    if (!transport) {
      res
        .writeHead(404, { 'content-type': 'application/json' })
        .end('{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}');
      return;
    }
    await transport.handleRequest(req, res, body);
  };
  const http = createServer((req, res) => void serve(req, res));
  await new Promise<void>((resolve) => http.listen(0, host, resolve));
  const { port } = http.address() as AddressInfo;
  const fixture: RemoteMcpFixture = {
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    requests: [],
    sessions: [],
    abandoned: 0,
    openGate: () => release(),
    close: async () => {
      await Promise.all([...transports.values()].map((t) => t.close()));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
  return fixture;
}
