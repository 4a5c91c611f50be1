import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveMcpServers } from '../../../src/proxy/config/mcp.ts';
import { connectMcp, firstText } from '../../support/mcp-client.ts';
import { startGateway, type GatewayApp } from '../../support/mcp-gateway.ts';
import { startRemoteMcpServer, type RemoteMcpFixture } from '../../support/mcp-remote-server.ts';

const CLIENT_KEYS = {
  authorization: 'Bearer client-proxy-key',
  'x-api-key': 'client-proxy-key',
  'x-goog-api-key': 'client-proxy-key',
  cookie: 'session=1',
};

describe('MCP gateway, remote Streamable HTTP servers', () => {
  let remote: RemoteMcpFixture;
  let keyed: RemoteMcpFixture;
  let silent: Server;
  let closedPort: number;
  let app: GatewayApp;

  beforeAll(async () => {
    remote = await startRemoteMcpServer();
    keyed = await startRemoteMcpServer({ requiredAuthorization: 'Bearer upstream-secret' });
    // Accepts connections and never answers: the timeout case.
    silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const spare = createServer();
    await new Promise<void>((resolve) => spare.listen(0, '127.0.0.1', resolve));
    closedPort = (spare.address() as AddressInfo).port;
    await new Promise<void>((resolve) => spare.close(() => resolve()));
    const servers = resolveMcpServers(
      {
        web_reader: { url: remote.url, headers: { 'X-Tenant': 'team-${TENANT}' } },
        keyed: { url: keyed.url, api_key_env: 'UPSTREAM_KEY' },
        wrong_key: { url: keyed.url, api_key: 'not-the-key' },
        down: { url: `http://127.0.0.1:${closedPort}/mcp` },
        slow: { url: `http://127.0.0.1:${(silent.address() as AddressInfo).port}/mcp`, timeout_ms: 300 },
      },
      { UPSTREAM_KEY: 'upstream-secret', TENANT: 'blue' },
    );
    app = await startGateway(servers);
  });
  afterAll(async () => {
    await app.close();
    await remote.close();
    await keyed.close();
    silent.closeAllConnections();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  });

  it('lists and calls tools through the gateway with a real MCP client, relaying the session id both ways', async () => {
    const before = remote.requests.length;
    const { client, transport } = await connectMcp(app.url('web_reader'), CLIENT_KEYS);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['add', 'echo', 'gate', 'hang']);
    expect(firstText(await client.callTool({ name: 'add', arguments: { a: 20, b: 22 } }))).toBe('42');
    // The client holds the upstream's session id, and sends it back on every later request.
    expect(transport.sessionId).toBe(remote.sessions.at(-1));
    const later = remote.requests.slice(before + 1);
    expect(later.length).toBeGreaterThan(0);
    for (const { headers } of later) {
      expect(headers['mcp-session-id']).toBe(transport.sessionId);
      expect(headers['mcp-protocol-version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    }
    await transport.terminateSession();
    expect(remote.requests.at(-1)?.method).toBe('DELETE');
    await client.close();
  });

  it("never forwards the client's proxy credentials or cookies, and adds the configured headers", async () => {
    const before = remote.requests.length;
    const { client } = await connectMcp(app.url('web_reader'), CLIENT_KEYS);
    await client.callTool({ name: 'echo', arguments: { text: 'x' } });
    await client.close();
    const seen = remote.requests.slice(before);
    expect(seen.length).toBeGreaterThan(1);
    for (const { headers } of seen) {
      expect(headers.authorization).toBeUndefined();
      expect(headers['x-api-key']).toBeUndefined();
      expect(headers['x-goog-api-key']).toBeUndefined();
      expect(headers.cookie).toBeUndefined();
      expect(headers['x-tenant']).toBe('team-blue');
    }
  });

  it("injects the server's own API key (from api_key_env) in place of the client's", async () => {
    const { client } = await connectMcp(app.url('keyed'), CLIENT_KEYS);
    expect(firstText(await client.callTool({ name: 'echo', arguments: { text: 'authorized' } }))).toBe('authorized');
    await client.close();
    expect(keyed.requests.every(({ headers }) => headers.authorization === 'Bearer upstream-secret')).toBe(true);
  });

  it('answers 502 when the remote server rejects the configured credentials, without its challenge', async () => {
    const res = await fetch(app.url('wrong_key'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      }),
    });
    expect(res.status).toBe(502);
    expect(res.headers.get('www-authenticate')).toBeNull();
    expect(await res.json()).toEqual({ error: 'MCP server "wrong_key" rejected the proxy\'s credentials (HTTP 401)' });
  });

  it('streams SSE events as they come: a progress event arrives while the tool is still running', async () => {
    const { client } = await connectMcp(app.url('web_reader'));
    const progress: number[] = [];
    const result = await client.callTool({ name: 'gate', arguments: {} }, undefined, {
      onprogress: ({ progress: p }) => {
        progress.push(p);
        // The tool finishes only once the relay has delivered this event.
        remote.openGate();
      },
    });
    expect(progress).toEqual([1]);
    expect(firstText(result)).toMatch(/^gate passed/);
    await client.close();
  });

  it('aborts the upstream request when the client goes away', async () => {
    const { client } = await connectMcp(app.url('web_reader'));
    const abandonedBefore = remote.abandoned;
    const controller = new AbortController();
    const call = client
      .callTool({ name: 'hang', arguments: {} }, undefined, { signal: controller.signal })
      .catch(() => 'aborted');
    await sleep(200);
    await client.close();
    controller.abort();
    expect(await call).toBe('aborted');
    await expect.poll(() => remote.abandoned, { timeout: 5_000 }).toBeGreaterThan(abandonedBefore);
  });

  it('answers 404 in the {"error"} shape for a server that is not configured', async () => {
    const res = await fetch(app.url('nope'), { method: 'POST', body: '{}' });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: 'MCP server "nope" is not configured' });
  });

  it('leaves other paths to the next middleware', async () => {
    const res = await fetch(`${app.origin}/mcp/web_reader/other`);
    expect(res.status).toBe(404);
    expect(await res.text()).toBe('Not Found');
  });

  it('answers 405 with Allow for methods Streamable HTTP does not use', async () => {
    const res = await fetch(app.url('web_reader'), { method: 'PUT', body: '{}' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, POST, DELETE');
    expect(await res.json()).toEqual({ error: expect.stringContaining('Method not allowed') });
  });

  it('refuses browser requests from other origins (DNS rebinding) with 403, and lets local pages through', async () => {
    const init = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    });
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const before = remote.requests.length;
    for (const origin of ['http://evil.example', 'http://127.0.0.1.evil.example:8045', 'null']) {
      const res = await fetch(app.url('web_reader'), { method: 'POST', headers: { ...headers, origin }, body: init });
      expect(res.status).toBe(403);
      expect(await res.json()).toEqual({ error: expect.stringContaining('may not use the MCP endpoints') });
    }
    expect(remote.requests.length).toBe(before);
    for (const origin of ['http://localhost:6274', 'http://127.0.0.1:3000', 'http://[::1]:8080']) {
      const res = await fetch(app.url('web_reader'), { method: 'POST', headers: { ...headers, origin }, body: init });
      expect(res.status).toBe(200);
      await res.body?.cancel();
    }
  });

  it('answers 502 when the remote server is down', async () => {
    await expect(connectMcp(app.url('down'))).rejects.toThrow(/502|unreachable/);
    const res = await fetch(app.url('down'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(502);
    expect(await res.json()).toEqual({ error: 'MCP server "down" is unreachable' });
  });

  it('answers 504 when the remote server does not answer within timeout_ms', async () => {
    const res = await fetch(app.url('slow'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(504);
    expect(await res.json()).toEqual({ error: 'MCP server "slow" did not answer within 300 ms' });
  });

  it('answers 413 for a body over the limit', async () => {
    const small = await startGateway(resolveMcpServers({ web_reader: { url: remote.url } }, {}), { maxBodyBytes: 64 });
    const res = await fetch(small.url('web_reader'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ padding: 'x'.repeat(200) }),
    });
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ error: expect.stringContaining('larger than 64 bytes') });
    await small.close();
  });
});
