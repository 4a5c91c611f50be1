/**
 * A real redis-server for tests: tests/support/redis/Dockerfile (Debian's redis-server on the local node base
 * image, AOF on) built once as gatehouse-redis:test and started per suite. Its port is published on a fixed host
 * port, so a `docker stop` / `docker start` in the middle of a test keeps the same address for every client.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { GenericContainer, Wait, type StartedTestContainer } from 'testcontainers';
import { HOST_FROM_CONTAINER, stablePort } from './proxy-container.ts';

const run = promisify(execFile);

export const REDIS_IMAGE = 'gatehouse-redis:test';

export interface RedisContainer {
  container: StartedTestContainer;
  host: string;
  port: number;
  /** `redis://host:port` from the test process. */
  url: string;
  /** The same server as containers started by startProxyContainer reach it. */
  urlFromContainer: string;
  /** What redis-server wrote until the first down(). */
  logs(): string;
  /** `docker stop`: the server goes away, connections are closed; the container and its AOF stay. */
  down(): Promise<void>;
  /** `docker start` after down(): same address, data back from the AOF; resolves once it accepts commands. */
  up(): Promise<void>;
  /** `docker pause`: the server is there but silent (connections hang, nothing is refused). */
  pause(): Promise<void>;
  unpause(): Promise<void>;
  /** Stops and removes the container. */
  stop(): Promise<void>;
}

let built: Promise<void> | undefined;

/** Builds gatehouse-redis:test once per test process (the layer cache makes later runs instant). */
export function buildRedisImage(): Promise<void> {
  built ??= GenericContainer.fromDockerfile(path.resolve(import.meta.dirname, 'redis'))
    .withCache(true)
    .build(REDIS_IMAGE, { deleteOnExit: false })
    .then(() => undefined);
  return built;
}

export async function startRedisContainer(): Promise<RedisContainer> {
  await buildRedisImage();
  let output = '';
  // Kept while it is stopped and started again (down/up): a port Docker would not hand to another container meanwhile.
  const hostPort = await stablePort();
  const container = await new GenericContainer(REDIS_IMAGE)
    .withExposedPorts({ container: 6379, host: hostPort })
    .withLogConsumer((stream) => stream.on('data', (chunk: Buffer | string) => (output += chunk.toString())))
    .withWaitStrategy(Wait.forLogMessage(/Ready to accept connections/))
    .withStartupTimeout(30_000)
    .start();
  const id = container.getId();
  const host = container.getHost();
  const ready = async (): Promise<void> => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const answer = await run('docker', ['exec', id, 'redis-cli', 'ping']).then(
        ({ stdout }) => stdout.trim(),
        (error: unknown) => String(error),
      );
      // PONG only once the AOF is loaded (LOADING errors before that).
      if (answer === 'PONG') return;
      if (Date.now() > deadline) throw new Error(`redis did not come back: ${answer}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  return {
    container,
    host,
    port: hostPort,
    url: `redis://${host}:${hostPort}`,
    urlFromContainer: `redis://${HOST_FROM_CONTAINER}:${hostPort}`,
    logs: () => output,
    down: async () => {
      await run('docker', ['stop', '--time', '5', id]);
    },
    up: async () => {
      await run('docker', ['start', id]);
      await ready();
    },
    pause: async () => {
      await run('docker', ['pause', id]);
    },
    unpause: async () => {
      await run('docker', ['unpause', id]);
    },
    stop: async () => {
      await container.stop({ timeout: 5_000 });
    },
  };
}
