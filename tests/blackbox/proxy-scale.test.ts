/**
 * The scaled deployment as users run it: docker-compose.scale.yml with three proxy replicas sharing their state
 * through Redis, behind HAProxy (config/haproxy.cfg). The redis and haproxy images are the local stand-ins
 * (tests/support/redis, tests/support/haproxy); tests/support/compose.scale-ports.yml also publishes each replica's
 * port, so a test can send each request to the replica it chooses.
 */
import { execFile } from 'node:child_process';
import { chmodSync, copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  DockerComposeEnvironment,
  GenericContainer,
  Wait,
  type StartedDockerComposeEnvironment,
  type StartedTestContainer,
} from 'testcontainers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeUpstream } from '../support/fake-upstream.ts';
import { IMAGE } from '../support/image.ts';
import { connectMcp, firstText } from '../support/mcp-client.ts';
import { closedPort, HOST_FROM_CONTAINER, readUntil } from '../support/proxy-container.ts';
import { buildRedisImage, REDIS_IMAGE } from '../support/redis-container.ts';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const HAPROXY_IMAGE = 'gatehouse-haproxy:test';
const KEY = 'scale-operator-key-0123456789';
const REPLICAS = 3;
const run = promisify(execFile);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One streamed chat request through `base`; resolves to what the client saw, never rejects. */
async function streamedChat(base: string, model = 'gpt-load'): Promise<Outcome> {
  const started = Date.now();
  try {
    const res = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    if (res.status === 200 && text.endsWith('data: [DONE]\n\n')) return { ok: true, started };
    const from = res.headers.get('x-content-type-options') === 'nosniff' ? 'gatehouse' : 'load balancer';
    return { ok: false, started, kind: `HTTP ${res.status} from the ${from}`, detail: text.slice(0, 200) };
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    const detail = `${(error as Error).message}: ${cause?.code ?? cause?.message}`;
    return { ok: false, started, kind: (error as Error).name, detail };
  }
}
type Outcome = { started: number } & ({ ok: true } | { ok: false; kind: string; detail: string });

/** `clients` loops of streamedChat through `base` until `stop()`; resolves to every outcome. */
function load(base: string, clients: number) {
  let running = true;
  const outcomes: Outcome[] = [];
  const done = Promise.all(
    Array.from({ length: clients }, async () => {
      while (running) outcomes.push(await streamedChat(base));
    }),
  );
  return {
    outcomes,
    stop: async () => {
      running = false;
      await done;
      return outcomes;
    },
  };
}

describe('docker compose: the proxy scaled out behind a load balancer', () => {
  let fake: FakeUpstream;
  let configDir: string;
  let compose: StartedDockerComposeEnvironment;
  let lb: string;
  const project = `gatehouse-scale-test-${process.pid}`;
  const network = `${project}_default`;
  const replica = (i: number): StartedTestContainer => compose.getContainer(`proxy-${i + 1}`);

  beforeAll(async () => {
    await buildRedisImage();
    await GenericContainer.fromDockerfile(path.join(ROOT, 'tests/support/haproxy'))
      .withCache(true)
      .build(HAPROXY_IMAGE, { deleteOnExit: false });
    // Each streamed answer takes about 350 ms: requests are in flight on every replica during the load tests.
    fake = await FakeUpstream.start({ host: '0.0.0.0', eventDelayMs: 50 });
    const lbPort = await closedPort();
    configDir = mkdtempSync(path.join(tmpdir(), 'gatehouse-scale-'));
    // The image runs as `node`: the mounted folder must be readable by others, as a checkout's is.
    chmodSync(configDir, 0o755);
    const at = (port: number, suffix: string) => `http://${HOST_FROM_CONTAINER}:${port}${suffix}`;
    // In the mounted config folder, under /app: it resolves the MCP SDK from the image's node_modules.
    copyFileSync(path.join(ROOT, 'tests/support/mcp-stdio-server.ts'), path.join(configDir, 'mcp-stdio-server.ts'));
    chmodSync(path.join(configDir, 'mcp-stdio-server.ts'), 0o644);
    const config = {
      proxy: {
        mcp: { servers: { local: { command: 'node', args: ['/app/config/mcp-stdio-server.ts'] } } },
        upstreams: [
          { name: 'fake', protocol: 'openai', base_url: at(fake.port, '/openai/v1'), api_key: 'u', models: ['gpt-*'] },
        ],
      },
    };
    writeFileSync(path.join(configDir, 'proxy.yaml'), JSON.stringify(config));
    compose = await new DockerComposeEnvironment(ROOT, [
      'docker-compose.scale.yml',
      'tests/support/compose.scale-ports.yml',
    ])
      .withProjectName(project)
      .withEnvironment({
        GATEHOUSE_IMAGE: IMAGE,
        GATEHOUSE_CONFIG_DIR: configDir,
        PROXY_HOST_PORT: String(lbPort),
        PROXY_API_KEY: KEY,
        REDIS_IMAGE,
        HAPROXY_IMAGE,
      })
      .withWaitStrategy('redis-1', Wait.forLogMessage(/Ready to accept connections/))
      .withWaitStrategy('proxy-1', Wait.forLogMessage(/proxy listening/))
      .withWaitStrategy('proxy-2', Wait.forLogMessage(/proxy listening/))
      .withWaitStrategy('proxy-3', Wait.forLogMessage(/proxy listening/))
      .withWaitStrategy('lb-1', Wait.forLogMessage(/started|Proxy/i))
      .withStartupTimeout(60_000)
      .up();
    lb = `http://127.0.0.1:${lbPort}`;
  });
  afterAll(async () => {
    await (compose as StartedDockerComposeEnvironment | undefined)?.down({ timeout: 10_000, removeVolumes: true });
    await (fake as FakeUpstream | undefined)?.close();
    if (configDir) rmSync(configDir, { recursive: true, force: true });
  });

  it('the load balancer health-checks every replica and spreads streamed requests over them', async () => {
    const ips = Array.from({ length: REPLICAS }, (_, i) => replica(i).getIpAddress(network));
    const batch = async () => {
      const before = fake.requests.length;
      const outcomes = await Promise.all(Array.from({ length: 12 }, () => streamedChat(lb)));
      expect(outcomes.filter((o) => !o.ok)).toEqual([]);
      return new Set(fake.requests.slice(before).map((r) => r.remote));
    };
    // Until HAProxy has found all three through Docker's DNS and checked them.
    await expect.poll(batch, { timeout: 20_000 }).toEqual(new Set(ips));
  });

  it('a stream passes through the load balancer event by event, not buffered', async () => {
    const res = await fetch(`${lb}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-gated', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(200);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    // The upstream holds the rest of its answer until released: the first event got here on its own.
    const first = await readUntil(reader, (text) => text.includes('\n\n'));
    expect(first).not.toContain('[DONE]');
    fake.release();
    expect(await readUntil(reader, (text) => text.includes('data: [DONE]'), first)).toContain('Hello');
  });

  it("a local MCP server's session stays on the replica that opened it", async () => {
    const { client } = await connectMcp(`${lb}/mcp/local/mcp`, { authorization: `Bearer ${KEY}` });
    // Each call is a request of its own, balanced anew; only the session's replica knows the session.
    for (let i = 0; i < 6; i++) {
      expect(firstText(await client.callTool({ name: 'echo', arguments: { text: `call ${i}` } }))).toBe(`call ${i}`);
    }
    await client.close();
  });

  it('docker kill of one replica under a 64-client load: only its requests in flight fail, at the connection', async () => {
    const victim = replica(1);
    const traffic = load(lb, 64);
    await sleep(2_000);
    await run('docker', ['kill', victim.getId()]);
    const killedAt = Date.now();
    await sleep(4_000);
    const outcomes = await traffic.stop();
    const failures = outcomes.filter((o) => !o.ok);
    console.log(`[scale] ${outcomes.length} requests, ${failures.length} failed`);
    expect(outcomes.filter((o) => o.started > killedAt).length).toBeGreaterThan(200);
    // The load balancer spreads the 64 clients evenly: the victim had about a third of them under way.
    expect(failures.length).toBeGreaterThan(0);
    expect(failures.length).toBeLessThanOrEqual(Math.ceil(64 / REPLICAS) + 4);
    for (const f of failures) {
      expect(f.kind).toMatch(/^(TypeError|HTTP 502 from the load balancer)$/);
      expect(f.started).toBeLessThan(killedAt);
    }
  });
});
