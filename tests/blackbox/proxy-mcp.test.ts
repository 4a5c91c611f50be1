import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { GenericContainer, Wait, type StartedTestContainer } from 'testcontainers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IMAGE } from '../support/image.ts';
import { connectMcp, firstText } from '../support/mcp-client.ts';
import { startRemoteMcpServer, type RemoteMcpFixture } from '../support/mcp-remote-server.ts';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.ts';

const PROXY_KEY = 'proxy-key-for-mcp-tests';
const UPSTREAM_KEY = 'remote-mcp-secret';
const AUTH = { authorization: `Bearer ${PROXY_KEY}` };
const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});
// Inside /app so that it resolves the SDK from the image's own production node_modules.
const FIXTURE_IN_IMAGE = '/app/test-fixtures/mcp-stdio-server.ts';
const FIXTURE = readFileSync(path.resolve(import.meta.dirname, '../support/mcp-stdio-server.ts'));
const run = promisify(execFile);

/** The proxy container with `config` as its configuration file and the stdio fixture in place. */
function proxyContainer(config: string[], env: Record<string, string> = {}): GenericContainer {
  return new GenericContainer(IMAGE)
    .withCommand(['proxy', '--config', '/config/proxy.yaml'])
    .withEnvironment({ PROXY_API_KEY: PROXY_KEY, PROXY_ALLOW_LAN_ACCESS: 'true', ...env })
    .withCopyContentToContainer([
      { content: [...config, ''].join('\n'), target: '/config/proxy.yaml', mode: 0o644 },
      { content: FIXTURE, target: FIXTURE_IN_IMAGE, mode: 0o644 },
    ])
    .withExposedPorts(8045)
    .withWaitStrategy(Wait.forLogMessage(/proxy listening/))
    .withStartupTimeout(30_000);
}

/** A port on the host that nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('proxy MCP endpoints (container)', () => {
  let remote: RemoteMcpFixture;
  let receiver: OtlpReceiver;
  let container: StartedTestContainer;
  let base: string;

  beforeAll(async () => {
    remote = await startRemoteMcpServer({ host: '0.0.0.0', requiredAuthorization: `Bearer ${UPSTREAM_KEY}` });
    receiver = await startOtlpReceiver();
    const config = [
      'proxy:',
      '  telemetry:',
      `    endpoint: http://host.docker.internal:${receiver.port}`,
      '    schedule_delay: 100',
      '  mcp:',
      '    servers:',
      '      web_reader:',
      `        url: http://host.docker.internal:${remote.port}/mcp`,
      '        api_key_env: WEB_READER_KEY',
      '      local-mcp-server:',
      '        command: node',
      `        args: [${FIXTURE_IN_IMAGE}]`,
      '        env:',
      '          FIXTURE_GREETING: "${GREETING}"',
      '      missing:',
      '        command: /nonexistent/mcp-server',
      '      down:',
      `        url: http://host.docker.internal:${await closedPort()}/mcp`,
    ];
    container = await proxyContainer(config, { WEB_READER_KEY: UPSTREAM_KEY, GREETING: 'hi from the container env' })
      .withExtraHosts([{ host: 'host.docker.internal', ipAddress: 'host-gateway' }])
      .start();
    base = `http://${container.getHost()}:${container.getMappedPort(8045)}`;
  });
  afterAll(async () => {
    await (container as StartedTestContainer | undefined)?.stop({ timeout: 10_000 });
    await (remote as RemoteMcpFixture | undefined)?.close();
    await (receiver as OtlpReceiver | undefined)?.close();
  });

  const url = (name: string) => `${base}/mcp/${name}/mcp`;

  /** How many processes in the container run the stdio fixture. */
  async function fixtureProcesses(): Promise<number> {
    // The bracket keeps this shell's own command line from matching.
    const { output } = await container.exec([
      'sh',
      '-c',
      "grep -al 'mcp-stdio-serve[r]' /proc/[0-9]*/cmdline 2>/dev/null | wc -l",
    ]);
    return Number(output.trim());
  }

  it('refuses an MCP request without the proxy key: 401 {"error"}', async () => {
    const res = await fetch(url('local-mcp-server'), { method: 'POST', headers: MCP_HEADERS, body: INITIALIZE });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ error: expect.any(String) });
  });

  it('serves a stdio MCP server to a real MCP client: tools listed and called', async () => {
    const { client, transport } = await connectMcp(url('local-mcp-server'), AUTH);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['add', 'crash', 'echo', 'env', 'slow']);
    expect(firstText(await client.callTool({ name: 'add', arguments: { a: 19, b: 23 } }))).toBe('42');
    const seen = JSON.parse(firstText(await client.callTool({ name: 'env', arguments: {} }))) as {
      greeting: string;
      names: string[];
    };
    expect(seen.greeting).toBe('hi from the container env');
    expect(seen.names).toEqual(['FIXTURE_GREETING', 'HOME', 'PATH']);
    expect(await fixtureProcesses()).toBe(1);
    await transport.terminateSession();
    await expect.poll(fixtureProcesses, { timeout: 10_000 }).toBe(0);
    await client.close();
  });

  it('answers a call whose stdio process crashes with a JSON-RPC error', async () => {
    const { client } = await connectMcp(url('local-mcp-server'), AUTH);
    await expect(client.callTool({ name: 'crash', arguments: {} })).rejects.toThrow(/exited with code 3/);
    await client.close();
  });

  it('relays a remote Streamable HTTP server with its own key injected and the client key stripped', async () => {
    const before = remote.requests.length;
    const { client, transport } = await connectMcp(url('web_reader'), { ...AUTH, 'x-api-key': PROXY_KEY });
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toContain('echo');
    expect(firstText(await client.callTool({ name: 'echo', arguments: { text: 'through the container' } }))).toBe(
      'through the container',
    );
    expect(transport.sessionId).toBe(remote.sessions.at(-1));
    const seen = remote.requests.slice(before);
    expect(seen.length).toBeGreaterThan(2);
    for (const { headers } of seen) {
      expect(headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
      expect(headers['x-api-key']).toBeUndefined();
    }
    await transport.terminateSession();
    await client.close();
  });

  it('exports each MCP call as its own span, stdio and remote, without its content', async () => {
    for (const [name, tool, args] of [
      ['local-mcp-server', 'add', { a: 1, b: 2 }],
      ['web_reader', 'echo', { text: 'traced in the container' }],
    ] as const) {
      const { client, transport } = await connectMcp(url(name), AUTH);
      await client.callTool({ name: tool, arguments: args });
      const session = transport.sessionId;
      await transport.terminateSession();
      await client.close();
      await expect
        .poll(() =>
          receiver.spans.find((s) => s.attributes['mcp.session.id'] === session && s.name === `tools/call ${tool}`),
        )
        .toMatchObject({
          kind: 3,
          attributes: {
            'mcp.method.name': 'tools/call',
            'gen_ai.operation.name': 'execute_tool',
            'gen_ai.tool.name': tool,
            'gatehouse.mcp.server': name,
            'network.transport': name === 'web_reader' ? 'tcp' : 'pipe',
          },
        });
      const spans = receiver.spans.filter((s) => s.attributes['mcp.session.id'] === session);
      expect(spans.map((s) => s.name)).toContain('initialize');
      expect(JSON.stringify(spans)).not.toContain('gen_ai.tool.call.arguments');
    }
  });

  it('answers 404 {"error"} for an MCP server that is not configured', async () => {
    const res = await fetch(url('web_search_prime'), {
      method: 'POST',
      headers: { ...MCP_HEADERS, ...AUTH },
      body: INITIALIZE,
    });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: 'MCP server "web_search_prime" is not configured' });
  });

  it('answers 502 {"error"} when a stdio command cannot be started or a remote server is down', async () => {
    const missing = await fetch(url('missing'), {
      method: 'POST',
      headers: { ...MCP_HEADERS, ...AUTH },
      body: INITIALIZE,
    });
    expect(missing.status).toBe(502);
    expect(await missing.json()).toEqual({
      error: expect.stringMatching(/^MCP server "missing" could not be started/),
    });
    const down = await fetch(url('down'), { method: 'POST', headers: { ...MCP_HEADERS, ...AUTH }, body: INITIALIZE });
    expect(down.status).toBe(502);
    expect(await down.json()).toEqual({ error: 'MCP server "down" is unreachable' });
  });
});

describe('proxy MCP shutdown (container)', () => {
  it('ends the stdio processes of open sessions on SIGTERM and exits 0', async () => {
    const container = await proxyContainer([
      'proxy:',
      '  mcp:',
      '    servers:',
      '      local:',
      '        command: node',
      `        args: [${FIXTURE_IN_IMAGE}]`,
    ]).start();
    const id = container.getId();
    try {
      const base = `http://${container.getHost()}:${container.getMappedPort(8045)}`;
      const { client } = await connectMcp(`${base}/mcp/local/mcp`, AUTH);
      // A call still running when the signal comes is answered with an error
      // at once (not left to the client's own timeout) and does not hold the shutdown up.
      const pending = client.callTool({ name: 'slow', arguments: { ms: 60_000 } }, undefined, { timeout: 10_000 }).then(
        () => 'answered',
        (error: unknown) => (error instanceof Error ? error.message : String(error)),
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      await container.stop({ timeout: 15_000, remove: false });
      expect(await pending).toContain('The proxy is shutting down');
      const { stdout: exitCode } = await run('docker', ['inspect', '-f', '{{.State.ExitCode}}', id]);
      expect(exitCode.trim()).toBe('0');
      const { stderr } = await run('docker', ['logs', id]);
      expect(stderr).toContain('MCP session closed');
      await client.close();
    } finally {
      await run('docker', ['rm', '-f', id]).catch(() => {});
    }
  });
});
