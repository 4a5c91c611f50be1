import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { resolveMcpServers } from '../../../src/proxy/config/mcp.ts';
import { connectMcp, firstText, type ConnectedMcp } from '../../support/mcp-client.ts';
import { startGateway, type GatewayApp } from '../../support/mcp-gateway.ts';

const FIXTURE = path.resolve(import.meta.dirname, '../../support/mcp-stdio-server.ts');
const NODE = process.execPath;

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};
const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

describe('MCP gateway, stdio servers', () => {
  let app: GatewayApp;
  const open: ConnectedMcp[] = [];

  beforeAll(async () => {
    const servers = resolveMcpServers(
      {
        local: { command: NODE, args: [FIXTURE], env: { FIXTURE_GREETING: '${GREETING}' } },
        // Long enough for a cold start of the fixture on a busy machine: initialize is bounded too.
        quick: { command: NODE, args: [FIXTURE], timeout_ms: '3s' },
        limited: { command: NODE, args: [FIXTURE], max_sessions: 1 },
        idle: { command: NODE, args: [FIXTURE], idle_timeout_ms: 300 },
        missing: { command: '/nonexistent/mcp-server-binary' },
        dies: { command: NODE, args: ['-e', 'process.exit(7)'] },
      },
      { GREETING: 'hello from env' },
    );
    app = await startGateway(servers);
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map(({ client }) => client.close()));
  });
  afterAll(async () => {
    await app.close();
  });

  async function connect(name: string): Promise<ConnectedMcp> {
    const connected = await connectMcp(app.url(name));
    open.push(connected);
    return connected;
  }

  it('lists and calls the tools of a stdio server through a real MCP client', async () => {
    const { client, transport } = await connect('local');
    expect(transport.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['add', 'crash', 'echo', 'env', 'slow']);
    expect(firstText(await client.callTool({ name: 'add', arguments: { a: 2, b: 40 } }))).toBe('42');
    expect(firstText(await client.callTool({ name: 'echo', arguments: { text: 'héllo ✓' } }))).toBe('héllo ✓');
  });

  it('gives the process only its configured env (resolved from the env passed in) plus PATH and HOME', async () => {
    const { client } = await connect('local');
    const seen = JSON.parse(firstText(await client.callTool({ name: 'env', arguments: {} }))) as {
      greeting: string;
      names: string[];
    };
    expect(seen.greeting).toBe('hello from env');
    expect(seen.names).toEqual(['FIXTURE_GREETING', 'HOME', 'PATH']);
  });

  it('runs one process per session, and two sessions do not share state', async () => {
    const a = await connect('local');
    const b = await connect('local');
    expect(a.transport.sessionId).not.toBe(b.transport.sessionId);
    const [x, y] = await Promise.all([
      a.client.callTool({ name: 'echo', arguments: { text: 'a' } }),
      b.client.callTool({ name: 'echo', arguments: { text: 'b' } }),
    ]);
    expect([firstText(x), firstText(y)]).toEqual(['a', 'b']);
  });

  it('ends the session on DELETE: the session id is unknown afterwards', async () => {
    const { transport } = await connect('local');
    const sessionId = transport.sessionId as string;
    await transport.terminateSession();
    const res = await fetch(app.url('local'), {
      method: 'POST',
      headers: { ...MCP_HEADERS, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
    });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: expect.stringContaining('MCP session not found') });
  });

  it('answers a call whose process crashes with a JSON-RPC error, and the session is gone afterwards', async () => {
    const { client, transport } = await connect('local');
    await expect(client.callTool({ name: 'crash', arguments: {} })).rejects.toThrow(/process exited with code 3/);
    const res = await fetch(app.url('local'), {
      method: 'POST',
      headers: { ...MCP_HEADERS, 'mcp-session-id': transport.sessionId as string },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
    });
    expect(res.status).toBe(404);
  });

  it('answers an initialize whose process exits at once with a JSON-RPC error, not a hang', async () => {
    await expect(connectMcp(app.url('dies'))).rejects.toThrow(/exited with code 7/);
  });

  it('answers a request the process sits on past timeout_ms with a JSON-RPC timeout error', async () => {
    const { client } = await connect('quick');
    await expect(client.callTool({ name: 'slow', arguments: { ms: 30_000 } })).rejects.toThrow(
      /did not answer within 3000 ms/,
    );
    // The session survives: the next call is answered.
    expect(firstText(await client.callTool({ name: 'add', arguments: { a: 1, b: 1 } }))).toBe('2');
  });

  it('answers 502 when the command cannot be started', async () => {
    const res = await fetch(app.url('missing'), {
      method: 'POST',
      headers: MCP_HEADERS,
      body: JSON.stringify(INITIALIZE),
    });
    expect(res.status).toBe(502);
    expect(await res.json()).toEqual({
      error: expect.stringMatching(/^MCP server "missing" could not be started: .*ENOENT/),
    });
  });

  it('refuses a session over max_sessions with 503 and accepts one again after a DELETE', async () => {
    const first = await connect('limited');
    await expect(connectMcp(app.url('limited'))).rejects.toThrow(/503|already has 1 open sessions/);
    await first.transport.terminateSession();
    const second = await connect('limited');
    expect(firstText(await second.client.callTool({ name: 'add', arguments: { a: 3, b: 4 } }))).toBe('7');
  });

  it('closes a session left idle (no open request) after idle_timeout_ms', async () => {
    const res = await fetch(app.url('idle'), {
      method: 'POST',
      headers: MCP_HEADERS,
      body: JSON.stringify(INITIALIZE),
    });
    expect(res.status).toBe(200);
    await res.text();
    const sessionId = res.headers.get('mcp-session-id') as string;
    expect(sessionId).toBeTruthy();
    await sleep(900);
    const later = await fetch(app.url('idle'), {
      method: 'POST',
      headers: { ...MCP_HEADERS, 'mcp-session-id': sessionId },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    });
    expect(later.status).toBe(404);
  });

  it('needs an initialize request or a session id: 400 otherwise', async () => {
    const post = await fetch(app.url('local'), {
      method: 'POST',
      headers: MCP_HEADERS,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(post.status).toBe(400);
    expect(await post.json()).toEqual({ error: expect.stringContaining('initialize') });
    const get = await fetch(app.url('local'), { headers: { accept: 'text/event-stream' } });
    expect(get.status).toBe(400);
  });

  it('answers malformed JSON with 400 in the {"error"} shape', async () => {
    const res = await fetch(app.url('local'), { method: 'POST', headers: MCP_HEADERS, body: '{"jsonrpc":' });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: 'Invalid JSON body' });
  });
});

describe('MCP gateway shutdown', () => {
  it('ends every stdio process on close() and answers pending calls with a JSON-RPC error', async () => {
    const app = await startGateway(resolveMcpServers({ local: { command: NODE, args: [FIXTURE] } }, {}));
    const { client } = await connectMcp(app.url('local'));
    const { pid } = JSON.parse(firstText(await client.callTool({ name: 'env', arguments: {} }))) as { pid: number };
    const pending = client.callTool({ name: 'slow', arguments: { ms: 60_000 } });
    const outcome = pending.then(
      () => 'answered',
      (error: unknown) => (error instanceof Error ? error.message : String(error)),
    );
    await sleep(200);
    await app.gateway.close();
    expect(await outcome).toMatch(/shutting down/);
    expect(() => process.kill(pid, 0)).toThrow(/ESRCH/);
    const res = await fetch(app.url('local'), {
      method: 'POST',
      headers: MCP_HEADERS,
      body: JSON.stringify(INITIALIZE),
    });
    expect(res.status).toBe(503);
    await client.close();
    await app.close();
  });
});
