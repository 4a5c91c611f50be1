import { mkdtempSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadProxyConfig } from '../../../src/proxy/config/index.ts';
import { createProxyApp, type ProxyApp } from '../../../src/proxy/app.ts';
import { REDACTED_PATHS } from '../../../src/proxy/request-log.ts';
import { connectMcp, firstText } from '../../support/mcp-client.ts';
import { startRemoteMcpServer, type RemoteMcpFixture } from '../../support/mcp-remote-server.ts';

const KEY = 'proxy-key-in-process';
const FIXTURE = path.resolve(import.meta.dirname, '../../support/mcp-stdio-server.ts');

/** The gateway inside the whole proxy app: authentication in front, the request log around it. */
describe('MCP gateway mounted in the proxy', () => {
  let remote: RemoteMcpFixture;
  let proxy: ProxyApp;
  let server: Server;
  let base: string;
  const lines: Record<string, unknown>[] = [];
  let logged = '';

  beforeAll(async () => {
    remote = await startRemoteMcpServer({ requiredAuthorization: 'Bearer remote-secret' });
    const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-mcp-app-'));
    const file = path.join(dir, 'proxy.json');
    writeFileSync(
      file,
      JSON.stringify({
        proxy: {
          auth_mode: 'strict',
          api_key: KEY,
          mcp: {
            servers: {
              web_reader: { url: remote.url, api_key_env: 'REMOTE_KEY' },
              local: { command: process.execPath, args: [FIXTURE] },
            },
          },
        },
      }),
    );
    const env = { REMOTE_KEY: 'remote-secret', PATH: process.env['PATH'] };
    const config = loadProxyConfig({ argv: ['--config', file], env, cwd: dir });
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        logged += chunk.toString('utf8');
        for (const line of chunk.toString('utf8').split('\n').filter(Boolean))
          lines.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    });
    const log = pino({ level: 'info', redact: { paths: REDACTED_PATHS, censor: '[redacted]' } }, sink);
    proxy = createProxyApp(config, { env, log });
    server = proxy.app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await proxy.endMcpSessions();
    await proxy.close();
    await remote.close();
  });

  it('needs the proxy key: 401 {"error"} without it, and the MCP server is never reached', async () => {
    const before = remote.requests.length;
    const res = await fetch(`${base}/mcp/web_reader/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ error: expect.any(String) });
    expect(remote.requests.length).toBe(before);
  });

  it('serves both kinds of server to a client holding the key, logging one line per request without secrets', async () => {
    for (const [name, expected] of [
      ['web_reader', 'remote ok'],
      ['local', 'local ok'],
    ] as const) {
      const { client, transport } = await connectMcp(`${base}/mcp/${name}/mcp`, { authorization: `Bearer ${KEY}` });
      expect(firstText(await client.callTool({ name: 'echo', arguments: { text: expected } }))).toBe(expected);
      await transport.terminateSession();
      await client.close();
    }
    await expect.poll(() => lines.filter((l) => l['upstream'] === 'mcp:local').length).toBeGreaterThan(2);
    const remoteLines = lines.filter((l) => l['upstream'] === 'mcp:web_reader');
    expect(remoteLines.map((l) => l['method'])).toEqual(expect.arrayContaining(['POST', 'DELETE']));
    expect(remoteLines.every((l) => l['family'] === 'other' && typeof l['status'] === 'number')).toBe(true);
    expect(logged).not.toContain(KEY);
    expect(logged).not.toContain('remote-secret');
  });
});
