/**
 * MCP calls as their own spans (OpenTelemetry's MCP conventions), through the
 * whole proxy app in process, exported by the SDK to an OTLP receiver: a
 * stdio server and a remote one, driven by the official MCP client; a call
 * that fails; a caller's trace context in `params._meta`; content only when
 * asked for.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { telemetryConfig } from '../../../src/config/telemetry.ts';
import { createProxyApp, type ProxyApp } from '../../../src/proxy/app.ts';
import { loadProxyConfig } from '../../../src/proxy/config/index.ts';
import { startTracing, type Tracing } from '../../../src/telemetry/tracing.ts';
import { connectMcp, firstText } from '../../support/mcp-client.ts';
import { startRemoteMcpServer, type RemoteMcpFixture } from '../../support/mcp-remote-server.ts';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../../support/otlp-receiver.ts';

const KEY = 'proxy-key-in-process';
const AUTH = { authorization: `Bearer ${KEY}` };
const FIXTURE = path.resolve(import.meta.dirname, '../../support/mcp-stdio-server.ts');
const CLIENT = 3;
const ERROR = 2;
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';

let receiver: OtlpReceiver;
let tracing: Tracing;
let remote: RemoteMcpFixture;
const running: { proxy: ProxyApp; server: Server }[] = [];

/** A proxy app serving `local` (stdio) and `web_reader` (remote), tracing with `tracing`; its base URL. */
async function startProxy(traced: Tracing): Promise<string> {
  const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-mcp-tracing-'));
  const file = path.join(dir, 'proxy.json');
  const servers = { web_reader: { url: remote.url }, local: { command: process.execPath, args: [FIXTURE] } };
  writeFileSync(file, JSON.stringify({ proxy: { auth_mode: 'strict', api_key: KEY, mcp: { servers } } }));
  const env = { PATH: process.env['PATH'] };
  const config = loadProxyConfig({ argv: ['--config', file], env, cwd: dir });
  const proxy = createProxyApp(config, { env, log: pino({ level: 'silent' }), tracing: traced });
  const server = proxy.app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  running.push({ proxy, server });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  receiver = await startOtlpReceiver('127.0.0.1');
  remote = await startRemoteMcpServer();
  const values = {
    endpoint: `http://127.0.0.1:${receiver.port}`,
    traces_endpoint: '',
    headers: '',
    service_name: 'gatehouse-test',
    max_queue_size: 2048,
    schedule_delay: 50,
    export_timeout: 10_000,
    capture_content: false,
  };
  tracing = startTracing(telemetryConfig(values), () => undefined) as Tracing;
});
afterAll(async () => {
  for (const { proxy, server } of running) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await proxy.endMcpSessions();
    await proxy.close();
  }
  await tracing.shutdown();
  await remote.close();
  await receiver.close();
});

/** The MCP span named `name` for server `server` (and `traceId`), once exported: the first not taken yet. */
async function mcpSpan(server: string, name: string, traceId?: string): Promise<ReceivedSpan> {
  let found: ReceivedSpan | undefined;
  await expect
    .poll(() => {
      found = receiver.spans.find(
        (s) =>
          s.name === name &&
          s.attributes['gatehouse.mcp.server'] === server &&
          (traceId === undefined || s.traceId === traceId) &&
          !taken.has(s.spanId),
      );
      return found !== undefined;
    })
    .toBe(true);
  taken.add((found as ReceivedSpan).spanId);
  return found as ReceivedSpan;
}
const taken = new Set<string>();

describe('MCP calls as spans', () => {
  let base: string;
  beforeAll(async () => {
    base = await startProxy(tracing);
  });

  it('a stdio session: initialize, tools/list and a tool call, each its own span under its HTTP request', async () => {
    const { client, transport } = await connectMcp(`${base}/mcp/local/mcp`, AUTH);
    await client.listTools();
    expect(firstText(await client.callTool({ name: 'add', arguments: { a: 19, b: 23 } }))).toBe('42');
    const session = transport.sessionId as string;
    await transport.terminateSession();
    await client.close();

    const initialize = await mcpSpan('local', 'initialize');
    expect(initialize).toMatchObject({
      kind: CLIENT,
      attributes: {
        'mcp.method.name': 'initialize',
        'jsonrpc.request.id': '0',
        'network.transport': 'pipe',
        'mcp.session.id': session,
        'mcp.protocol.version': expect.any(String),
      },
    });
    const call = await mcpSpan('local', 'tools/call add');
    expect(call).toMatchObject({
      kind: CLIENT,
      status: 0,
      attributes: {
        'mcp.method.name': 'tools/call',
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': 'add',
        'jsonrpc.request.id': '2',
        'network.transport': 'pipe',
        'mcp.session.id': session,
      },
    });
    expect(call.attributes).not.toHaveProperty('error.type');
    // Content is not recorded unless asked for.
    expect(call.attributes).not.toHaveProperty('gen_ai.tool.call.arguments');
    expect(call.attributes).not.toHaveProperty('gen_ai.tool.call.result');
    await mcpSpan('local', 'tools/list');
    // Its parent is the span of the HTTP request that carried it.
    const parent = receiver.spans.find((s) => s.spanId === call.parentSpanId);
    expect(parent?.attributes['url.path']).toBe('/mcp/local/mcp');
  });

  it('a remote server: the same spans, with its address', async () => {
    const { client, transport } = await connectMcp(`${base}/mcp/web_reader/mcp`, AUTH);
    expect(firstText(await client.callTool({ name: 'echo', arguments: { text: 'traced' } }))).toBe('traced');
    const session = transport.sessionId;
    await transport.terminateSession();
    await client.close();
    const call = await mcpSpan('web_reader', 'tools/call echo');
    expect(call.attributes).toMatchObject({
      'gen_ai.tool.name': 'echo',
      'network.transport': 'tcp',
      'network.protocol.name': 'http',
      'server.address': '127.0.0.1',
      'server.port': remote.port,
      'mcp.session.id': session,
    });
  });

  it("a call answered with a JSON-RPC error is the span's error.type", async () => {
    const { client } = await connectMcp(`${base}/mcp/local/mcp`, AUTH);
    await expect(client.callTool({ name: 'crash', arguments: {} })).rejects.toThrow(/exited with code 3/);
    await client.close();
    const call = await mcpSpan('local', 'tools/call crash');
    expect(call.status).toBe(ERROR);
    expect(call.attributes['error.type']).toMatch(/^-32\d{3}$/);
    expect(call.attributes['rpc.response.status_code']).toBe(call.attributes['error.type']);
  });

  it("a caller's trace context in params._meta is the call's parent", async () => {
    const headers = { ...AUTH, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const res = await fetch(`${base}/mcp/web_reader/mcp`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 'init-1',
        method: 'initialize',
        params: {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'raw', version: '1' },
          _meta: { traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01` },
        },
      }),
    });
    await res.text();
    const span = await mcpSpan('web_reader', 'initialize', TRACE_ID);
    expect(span).toMatchObject({
      traceId: TRACE_ID,
      parentSpanId: '00f067aa0ba902b7',
      attributes: { 'jsonrpc.request.id': 'init-1', 'mcp.protocol.version': '2025-06-18' },
    });
  });
});

describe('MCP calls with capture_content on', () => {
  it("record a tool call's arguments and result", async () => {
    const base = await startProxy({ ...tracing, captureContent: true });
    const { client } = await connectMcp(`${base}/mcp/local/mcp`, AUTH);
    await client.callTool({ name: 'echo', arguments: { text: 'recorded' } });
    await client.close();
    const call = await mcpSpan('local', 'tools/call echo');
    expect(JSON.parse(String(call.attributes['gen_ai.tool.call.arguments']))).toEqual({ text: 'recorded' });
    expect(JSON.parse(String(call.attributes['gen_ai.tool.call.result']))).toMatchObject({
      content: [{ type: 'text', text: 'recorded' }],
    });
  });
});
