// The review hub as users run it: the image's `gatehouse hub` on a fixed
// host port (so it keeps its address across `docker kill` + `docker start`)
// with its data in a named volume, and CLI clients started from this tree.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer as createHttpServer, type IncomingHttpHeaders } from 'node:http';
import { createServer } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { GenericContainer, Wait, type StartedTestContainer } from 'testcontainers';
import { afterAll, beforeAll } from 'vitest';
import { close, listen } from '../../src/http/server.ts';
import { IMAGE } from './image.ts';

const run = promisify(execFile);
export const ROOT = path.resolve(import.meta.dirname, '..', '..');

export const SUBMIT_TOKEN = `submit-${randomBytes(12).toString('hex')}`;
export const REVIEWER_TOKEN = `review-${randomBytes(12).toString('hex')}`;

/** A free TCP port on this machine. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export interface HubContainer {
  container: StartedTestContainer;
  id: string;
  url: string;
  volume: string;
  logs(): Promise<string>;
  /** `docker kill`, then `docker start`, then waits until the hub answers again. */
  killAndStart(): Promise<void>;
  stop(options?: { keepVolume?: boolean }): Promise<void>;
}

async function answers(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    await response.body?.cancel();
    return true;
  } catch {
    return false;
  }
}

export interface HubOptions {
  env?: Record<string, string>;
  extraHosts?: { host: string; ipAddress: string }[];
  /** The data volume of a hub stopped with `stop({ keepVolume: true })`: the same database, another configuration. */
  volume?: string;
}

export async function startHub(options: HubOptions = {}): Promise<HubContainer> {
  const port = await freePort();
  const volume = options.volume ?? `gatehouse-hub-test-${randomBytes(6).toString('hex')}`;
  let builder = new GenericContainer(IMAGE)
    .withCommand(['hub'])
    .withExposedPorts({ container: 19432, host: port })
    .withEnvironment({ HUB_SUBMIT_TOKENS: SUBMIT_TOKEN, HUB_REVIEWER_TOKENS: REVIEWER_TOKEN, ...options.env })
    .withBindMounts([{ source: volume, target: '/data', mode: 'rw' }])
    .withWaitStrategy(Wait.forLogMessage(/Review hub: http:\/\/localhost:19432\//))
    .withStartupTimeout(30_000);
  if (options.extraHosts) builder = builder.withExtraHosts(options.extraHosts);
  const container = await builder.start();
  const id = container.getId();
  const url = `http://127.0.0.1:${port}/`;
  return {
    container,
    id,
    url,
    volume,
    async logs() {
      const { stdout, stderr } = await run('docker', ['logs', id], { maxBuffer: 64 * 1024 * 1024 });
      return stdout + stderr;
    },
    async killAndStart() {
      await run('docker', ['kill', id]);
      await run('docker', ['start', id]);
      for (let i = 0; i < 150 && !(await answers(url)); i++) await sleep(200);
    },
    async stop({ keepVolume = false } = {}) {
      await container.stop({ timeout: 2_000 }).catch(() => undefined);
      if (!keepVolume) await run('docker', ['volume', 'rm', '-f', volume]).catch(() => undefined);
    },
  };
}

/** `gatehouse hub` run from this tree on a free loopback port, as a user runs it, once it says where it listens. */
export async function spawnHub(
  home: string,
  env: Record<string, string> = {},
): Promise<{ child: ChildProcess; base: string }> {
  const port = await freePort();
  const child = spawn(process.execPath, [path.join(ROOT, 'src', 'cli.ts'), 'hub', '--port', String(port)], {
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: home,
      HUB_SUBMIT_TOKENS: SUBMIT_TOKEN,
      HUB_REVIEWER_TOKENS: REVIEWER_TOKEN,
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  await new Promise<void>((resolve, reject) => {
    let err = '';
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
      if (err.includes('Review hub: ')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`the hub exited (${code}):\n${err}`)));
  });
  return { child, base: `http://127.0.0.1:${port}/` };
}

export interface Client {
  child: ChildProcess;
  /** The review URL the client printed on stderr. */
  url: Promise<string>;
  exited: Promise<{ code: number | null; stdout: string; stderr: string }>;
}

/** `gatehouse <args>` in client mode against `hub`, as an agent or a CI job runs it. */
export interface ClientOptions {
  hub: string;
  cwd: string;
  home: string;
  stdin?: string;
  token?: string;
  /** More environment for the client, e.g. GATEHOUSE_HUB_CONNECT_TIMEOUT. */
  env?: Record<string, string>;
}

export function startClient(args: string[], options: ClientOptions): Client {
  const child = spawn(process.execPath, [path.join(ROOT, 'src', 'cli.ts'), ...args], {
    cwd: options.cwd,
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: options.home,
      GATEHOUSE_HUB_URL: options.hub,
      GATEHOUSE_HUB_TOKEN: options.token ?? SUBMIT_TOKEN,
      ...options.env,
    },
    stdio: [options.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  child.stdin?.end(options.stdin);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('exit', (code) => resolve({ code, stdout, stderr })),
  );
  const url = new Promise<string>((resolve, reject) => {
    child.stderr?.on('data', (d: Buffer) => {
      stderr += d.toString();
      const found = /review: (https?:\/\/\S+)/.exec(stderr);
      if (found) resolve(found[1] as string);
    });
    void exited.then(({ code }) => reject(new Error(`the client exited (${code}) before printing a URL:\n${stderr}`)));
  });
  url.catch(() => undefined);
  return { child, url, exited };
}

type Headers = Record<string, string>;
const AS_REVIEWER: Headers = { authorization: `Bearer ${REVIEWER_TOKEN}` };

/** A JSON call to the hub with the reviewer token (or the given headers). */
export async function hubCall(base: string, method: string, p: string, body?: unknown, headers: Headers = AS_REVIEWER) {
  const response = await fetch(new URL(p, base), {
    method,
    headers: { ...(body !== undefined && { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const type = response.headers.get('content-type') ?? '';
  const payload = type.includes('json') ? await response.json() : await response.text();
  return { status: response.status, headers: response.headers, body: payload as Record<string, unknown> & string };
}

/** Decides review `id` as a reviewer through its own API (plans are not saved); resolves with the HTTP status. */
export async function decide(base: string, id: string | undefined, action: 'approve' | 'deny', body: object = {}) {
  return (await hubCall(base, 'POST', `r/${id}/api/${action}`, { ...body, planSave: { enabled: false } })).status;
}

/** The last JSON line a client printed on stdout. */
export function lastLine(stdout: string): Record<string, unknown> {
  return JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as Record<string, unknown>;
}

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * A notification receiver for the file's tests, on every interface (a
 * container reaches it at host.docker.internal): keeps what it is sent and
 * answers 200, except `/hang`, which never answers. `port` is set once beforeAll ran.
 */
export function notificationReceiver(): { port: number; received: Received[] } {
  const receiver = { port: 0, received: [] as Received[] };
  const server = createHttpServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      if (req.url === '/hang') return;
      receiver.received.push({ path: req.url ?? '', headers: req.headers, body });
      res.end('ok');
    });
  });
  beforeAll(async () => {
    receiver.port = (await listen(server, { port: 0, host: '0.0.0.0' })).port;
  });
  afterAll(() => close(server, 0));
  return receiver;
}
