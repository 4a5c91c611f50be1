/**
 * The scaled deployment as users run it: docker-compose.scale.yml with three proxy replicas sharing their state
 * through Redis, behind HAProxy (config/haproxy.cfg). The redis and haproxy images are the local stand-ins
 * (tests/support/redis, tests/support/haproxy); tests/support/compose.scale-ports.yml also publishes each replica's
 * port, so a test can send each request to the replica it chooses.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { chmodSync, copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import OpenAI from 'openai';
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
import { CHAT_ONLY_MODEL } from '../support/sdk-matrix.ts';
import { startScriptedUpstream, type ScriptedUpstream } from '../support/scripted-upstream.ts';
import { translationConfig } from '../support/translating-proxy.ts';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const HAPROXY_IMAGE = 'gatehouse-haproxy:test';
const KEY = 'scale-operator-key-0123456789';
/** Keys with limits, by name (their digests are in the configuration). */
const KEYS = {
  ten: 'ten-rpm-key-0123456789abcdef',
  budget: 'budget-key-0123456789abcdef',
  one: 'one-rpm-key-0123456789',
};
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
  let scripted: ScriptedUpstream;
  let broken: Server;
  let brokenHits = 0;
  let configDir: string;
  let compose: StartedDockerComposeEnvironment;
  let lb: string;
  /** Each replica's own address, replica i at replicas[i]. */
  let replicas: string[];
  /** Replica i's address, counting round the replicas. */
  const via = (i: number): string => replicas[i % REPLICAS] ?? '';
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
    scripted = await startScriptedUpstream('0.0.0.0');
    broken = createServer((_req, res) => {
      brokenHits += 1;
      res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":{"message":"down"}}');
    });
    broken.listen(0, '0.0.0.0');
    await once(broken, 'listening');
    const lbPort = await closedPort();
    configDir = mkdtempSync(path.join(tmpdir(), 'gatehouse-scale-'));
    // The image runs as `node`: the mounted folder must be readable by others, as a checkout's is.
    chmodSync(configDir, 0o755);
    const at = (port: number, suffix: string) => `http://${HOST_FROM_CONTAINER}:${port}${suffix}`;
    // The scripted upstream's Anthropic and chat-only (no Responses API) upstreams: translated conversations.
    const translated = (
      translationConfig(at(scripted.port, ''), true) as { proxy: { upstreams: { name: string }[] } }
    ).proxy.upstreams.filter((u) => u.name === 'anthropic-up' || u.name === 'chat-only-up');
    const sha = (key: string) => createHash('sha256').update(key).digest('hex');
    // In the mounted config folder, under /app: it resolves the MCP SDK from the image's node_modules.
    copyFileSync(path.join(ROOT, 'tests/support/mcp-stdio-server.ts'), path.join(configDir, 'mcp-stdio-server.ts'));
    chmodSync(path.join(configDir, 'mcp-stdio-server.ts'), 0o644);
    const config = {
      proxy: {
        mcp: { servers: { local: { command: 'node', args: ['/app/config/mcp-stdio-server.ts'] } } },
        routing: { failures_to_cool: 1, cooldown: '2m' },
        upstreams: [
          { name: 'broken', protocol: 'openai', base_url: at(portOf(broken), '/v1'), api_key: 'u', models: ['cool-*'] },
          {
            name: 'fake',
            protocol: 'openai',
            base_url: at(fake.port, '/openai/v1'),
            api_key: 'u',
            models: ['gpt-*', 'cool-*'],
          },
          ...translated,
        ],
        keys: [
          { name: 'ten', key_sha256: sha(KEYS.ten), rpm: 10 },
          // The fake upstream reports 10 tokens per answer.
          { name: 'budget', key_sha256: sha(KEYS.budget), budget_tokens: 30, budget_period: 'day' },
          { name: 'one', key_sha256: sha(KEYS.one), rpm: 1 },
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
      .withWaitStrategy('lb-1', Wait.forLogMessage(/Loading success/))
      .withStartupTimeout(60_000)
      .up();
    lb = `http://127.0.0.1:${lbPort}`;
    replicas = Array.from({ length: REPLICAS }, (_, i) => `http://127.0.0.1:${replica(i).getMappedPort(8045)}`);
  });
  afterAll(async () => {
    await (compose as StartedDockerComposeEnvironment | undefined)?.down({ timeout: 10_000, removeVolumes: true });
    await (fake as FakeUpstream | undefined)?.close();
    await (scripted as ScriptedUpstream | undefined)?.close();
    broken.close();
    if (configDir) rmSync(configDir, { recursive: true, force: true });
  });

  const openai = (base: string, key = KEY) => new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 });
  /** A plain chat request with `key` to `base`; its status. */
  const chat = async (base: string, key: string, model = 'gpt-4o') => {
    const res = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
    });
    return { status: res.status, upstream: res.headers.get('x-gatehouse-upstream'), body: await res.text() };
  };
  /** A Responses request continuing `previous` on `base`, as raw HTTP (the status and body as sent). */
  const continuation = async (base: string, previous: string) => {
    const res = await fetch(`${base}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: CHAT_ONLY_MODEL, previous_response_id: previous, input: 'And now?' }),
    });
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.json() };
  };

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

  it('a Responses conversation of ten turns continues, each turn on the next replica', async () => {
    const history: { role: string; content: string }[] = [];
    let previous: string | undefined;
    const ids = new Set<string>();
    for (let turn = 0; turn < 10; turn++) {
      const input = `Turn ${turn}: remember ${turn * 7}.`;
      const answer = await openai(via(turn)).responses.create({
        model: CHAT_ONLY_MODEL,
        input,
        ...(previous ? { previous_response_id: previous } : {}),
      });
      history.push({ role: 'user', content: input });
      // Every answer has an id of the proxy's own (the scripted upstream repeats its ids): ten distinct ids.
      // The upstream (chat completions only) got the whole conversation, read from the store in Redis.
      expect(scripted.requests.at(-1)?.body.messages).toEqual(history);
      history.push({ role: 'assistant', content: answer.output_text });
      expect(answer.previous_response_id ?? undefined).toBe(previous);
      previous = answer.id;
      ids.add(answer.id);
    }
    expect(history).toHaveLength(20);
    expect(ids.size).toBe(10);
  });

  it('signed reasoning carried for a chat client survives a hop to another replica', async () => {
    const tools: OpenAI.Chat.ChatCompletionTool[] = [
      { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: {} } } },
    ];
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Paris?' }];
    // An Anthropic upstream thinks (signed) before its tool call; a chat client has no place for that signature.
    const first = await openai(via(0)).chat.completions.create({ model: 'claude-test', messages, tools });
    const message = first.choices[0]?.message;
    const call = message?.tool_calls?.[0];
    expect(call?.type).toBe('function');
    if (!message || !call) return;
    const second = await openai(via(1)).chat.completions.create({
      model: 'claude-test',
      messages: [...messages, message, { role: 'tool', tool_call_id: call.id, content: 'sunny' }],
      tools,
    });
    expect(second.choices[0]?.message.content).toBe('It is sunny in Paris.');
    // Replica 2 put back the thinking replica 1 remembered for that call.
    expect(JSON.stringify(scripted.requests.at(-1)?.body)).toContain('"signature":"sig-anthropic-1"');
  });

  it('an rpm: 10 key gets exactly 10 answers across the replicas, then 429 on each', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 13; i++) statuses.push((await chat(via(i), KEYS.ten)).status);
    expect(statuses).toEqual([...Array<number>(10).fill(200), 429, 429, 429]);
  });

  it('a budget is shared: 30 tokens spent over three replicas are refused on every one', async () => {
    let sent = 0;
    // The poll below may get one more answer while the last tokens are still on their way to Redis.
    let answered = 0;
    const spend = async (base: string) => {
      sent += 1;
      const { status } = await chat(base, KEYS.budget);
      if (status === 200) answered += 1;
      return status;
    };
    // Each request reserves its estimate (about 1,000 tokens: it names no max_tokens) until its answer has been
    // settled, which a request sent at once to another replica may not see yet: 429 until it does.
    for (const base of replicas) await expect.poll(() => spend(base)).toBe(200);
    // Tokens are counted once an answer has ended.
    await expect.poll(() => spend(via(0))).toBe(429);
    for (const base of replicas) expect(await spend(base)).toBe(429);
    // Usage sums are the team's too: every replica tells the same totals (written once a second).
    const usage = async (base: string) => {
      const res = await fetch(`${base}/internal/usage?key=budget&by=key`, {
        headers: { authorization: `Bearer ${KEY}` },
      });
      return ((await res.json()) as { rows: { requests: number; output_tokens: number }[] }).rows;
    };
    // Each replica writes its sums once a second: poll for longer than one write, not vitest's default second.
    await expect
      .poll(() => usage(via(0)), { timeout: 5_000 })
      .toEqual([expect.objectContaining({ requests: sent, errors: sent - answered, output_tokens: 5 * answered })]);
    const totals = await usage(via(0));
    for (const base of replicas.slice(1)) expect(await usage(base)).toEqual(totals);
    // `gatehouse usage` in any replica reads the same sums (docs/scale-out.md tells users to run it so).
    const cli = await run('docker', ['exec', replica(2).getId(), 'gatehouse', 'usage', '--key', 'budget', '--json']);
    expect((JSON.parse(cli.stdout) as { rows: unknown }).rows).toEqual(totals);
  });

  it('a cooldown decided on one replica is seen by the others', async () => {
    const first = await chat(via(0), KEY, 'cool-model');
    expect(first).toMatchObject({ status: 200, upstream: 'fake' });
    expect(brokenHits).toBe(1);
    for (const base of replicas.slice(1)) {
      expect(await chat(base, KEY, 'cool-model')).toMatchObject({ status: 200, upstream: 'fake' });
    }
    // Replicas 2 and 3 left the cooled-down upstream out.
    expect(brokenHits).toBe(1);
  });

  it('Redis stopped for 10 s under load: no crash, limits follow on_unavailable, continuation 503, then normal', async () => {
    // A fourth replica outside the load balancer, as the compose file runs them but with on_unavailable: deny.
    const denying = await new GenericContainer(IMAGE)
      .withCommand(['proxy'])
      .withNetworkMode(network)
      .withExtraHosts([{ host: HOST_FROM_CONTAINER, ipAddress: 'host-gateway' }])
      .withBindMounts([{ source: configDir, target: '/app/config', mode: 'ro' }])
      .withEnvironment({
        PROXY_CONFIG: '/app/config/proxy.yaml',
        PROXY_ALLOW_LAN_ACCESS: 'true',
        PROXY_API_KEY: KEY,
        PROXY_STATE_BACKEND: 'redis',
        PROXY_REDIS_URL: 'redis://redis:6379/0',
        PROXY_STATE_ON_UNAVAILABLE: 'deny',
      })
      .withExposedPorts(8045)
      .withWaitStrategy(Wait.forLogMessage(/proxy listening/))
      .start();
    const deny = `http://127.0.0.1:${denying.getMappedPort(8045)}`;
    try {
      const stored = (await openai(via(0)).responses.create({ model: CHAT_ONLY_MODEL, input: 'Keep this.' })).id;
      expect((await chat(via(0), KEYS.one)).status).toBe(200);
      expect((await chat(via(1), KEYS.one)).status).toBe(429);
      const redis = compose.getContainer('redis-1');
      const traffic = load(lb, 8);
      await run('docker', ['stop', redis.getId()]);
      const stoppedAt = Date.now();
      for (const base of replicas) {
        expect((await fetch(`${base}/healthz`)).status).toBe(200);
        // on_unavailable: allow (the compose default): the key's used-up minute is not enforced meanwhile.
        await expect.poll(async () => (await chat(base, KEYS.one)).status).toBe(200);
        const refused = await continuation(base, stored);
        expect(refused).toMatchObject({ status: 503, body: { error: { code: 'state_unavailable' } } });
        expect(Number(refused.retryAfter)).toBeGreaterThan(0);
      }
      const denied = await chat(deny, KEYS.one);
      expect(denied.status).toBe(503);
      expect(JSON.parse(denied.body)).toMatchObject({ error: { code: 'state_unavailable' } });
      await sleep(10_000 - (Date.now() - stoppedAt));
      await run('docker', ['start', redis.getId()]);
      for (const base of [...replicas, deny]) {
        await expect.poll(async () => (await continuation(base, stored)).status, { timeout: 20_000 }).toBe(200);
        // The minute counted before the outage is in Redis again (AOF).
        expect((await chat(base, KEYS.one)).status).toBe(429);
      }
      const outcomes = await traffic.stop();
      expect(outcomes.filter((o) => !o.ok)).toEqual([]);
      expect(outcomes.length).toBeGreaterThan(50);
      for (let i = 0; i < REPLICAS; i++) {
        const state = await run('docker', [
          'inspect',
          replica(i).getId(),
          '--format',
          '{{.State.Running}} {{.RestartCount}}',
        ]);
        expect(state.stdout.trim()).toBe('true 0');
      }
    } finally {
      await denying.stop({ timeout: 5_000 });
    }
  });

  it('docker kill of one replica under a 64-client load: only its requests in flight fail, at the connection', async () => {
    const victim = replica(1);
    const traffic = load(lb, 64);
    await sleep(2_000);
    // The victim dies somewhere inside `docker kill`'s run (about 450 ms here): a request sent meanwhile may
    // still reach it and fail with it.
    const killStartedAt = Date.now();
    await run('docker', ['kill', victim.getId()]);
    const killedAt = Date.now();
    await sleep(4_000);
    const outcomes = await traffic.stop();
    const failures = outcomes.filter((o) => !o.ok);
    const failedBeforeKill = failures.filter((f) => f.started < killStartedAt).length;
    console.log(
      `[scale] ${outcomes.length} requests, ${failures.length} failed, ${failedBeforeKill} sent before the kill`,
    );
    expect(outcomes.filter((o) => o.started > killedAt).length).toBeGreaterThan(100);
    // The load balancer spreads the 64 clients evenly: the victim had about a third of them under way.
    expect(failures.length).toBeGreaterThan(0);
    expect(failedBeforeKill).toBeLessThanOrEqual(Math.ceil(64 / REPLICAS) + 4);
    for (const f of failures) {
      expect(f.kind).toMatch(/^(TypeError|HTTP 502 from the load balancer)$/);
      expect(f.started).toBeLessThan(killedAt);
    }
  });
});

function portOf(server: Server): number {
  return (server.address() as AddressInfo).port;
}
