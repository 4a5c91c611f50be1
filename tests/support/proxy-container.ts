import { createServer } from 'node:net';
import { GenericContainer, Wait, type StartedTestContainer } from 'testcontainers';
import { IMAGE } from './image.ts';

/** How containers reach servers the tests run on the host (bound to 0.0.0.0). */
export const HOST_FROM_CONTAINER = 'host.docker.internal';

export interface ProxyContainer {
  container: StartedTestContainer;
  /** `http://host:port` of the mapped proxy port. */
  base: string;
  /** Everything the container wrote so far (stdout and stderr). */
  logs(): string;
  stop(): Promise<void>;
}

/**
 * `gatehouse proxy --config /config/proxy.json` in the image, reachable from
 * the host, able to reach the host as host.docker.internal. Resolves once the
 * proxy logged that it listens. Its port on the host is one Docker picks, or
 * `hostPort` (stablePort) for a test that restarts the container.
 */
export async function startProxyContainer(
  config: unknown,
  env: Record<string, string> = {},
  { hostPort }: { hostPort?: number } = {},
): Promise<ProxyContainer> {
  let output = '';
  const container = await new GenericContainer(IMAGE)
    .withCommand(['proxy', '--config', '/config/proxy.json'])
    .withEnvironment(env)
    .withCopyContentToContainer([{ content: JSON.stringify(config), target: '/config/proxy.json', mode: 0o644 }])
    .withExtraHosts([{ host: HOST_FROM_CONTAINER, ipAddress: 'host-gateway' }])
    .withExposedPorts(hostPort === undefined ? 8045 : { container: 8045, host: hostPort })
    .withLogConsumer((stream) => stream.on('data', (chunk: Buffer | string) => (output += chunk.toString())))
    .withWaitStrategy(Wait.forLogMessage(/proxy listening/))
    .withStartupTimeout(30_000)
    .start();
  return {
    container,
    base: `http://${container.getHost()}:${container.getMappedPort(8045)}`,
    logs: () => output,
    stop: async () => {
      await container.stop({ timeout: 10_000 });
    },
  };
}

/**
 * Several proxies started at once (replicas): all of them, or none left running. A proxy that fails to start
 * stops the ones that did before its error is thrown, which a test's afterAll, never given them, could not.
 */
export async function startProxyContainers(
  proxies: readonly { config: unknown; env?: Record<string, string> }[],
): Promise<ProxyContainer[]> {
  const started = await Promise.allSettled(proxies.map(({ config, env }) => startProxyContainer(config, env)));
  const failed = started.find((s) => s.status === 'rejected');
  if (!failed) return started.map((s) => (s as PromiseFulfilledResult<ProxyContainer>).value);
  await stopAll(started.map((s) => (s.status === 'fulfilled' ? s.value : undefined)));
  throw failed.reason;
}

/** Stops each (those not started are skipped), every one even when another fails; then throws the first failure. */
export async function stopAll(stoppable: readonly ({ stop(): Promise<unknown> } | undefined)[]): Promise<void> {
  const stopped = await Promise.allSettled(stoppable.map((s) => (s ? s.stop() : Promise.resolve())));
  const failed = stopped.find((s) => s.status === 'rejected');
  if (failed) throw failed.reason;
}

/** A port on the host that nothing listens on (an upstream that is down). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * A free port on the host below the ephemeral range (32768-60999 here), where neither Docker nor a server
 * listening on port 0 takes one. A restarted container keeps it: one whose port Docker picked gets a new
 * port on restart, and the old one goes to whichever container anyone on the machine starts next, so a
 * client still sending to it may be answered by a stranger.
 */
export async function stablePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const server = createServer();
    const bound = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(port, '0.0.0.0', () => resolve(true));
    });
    if (!bound) continue;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    return port;
  }
}

/** Reads a response body stream until `predicate` holds for the text so far. */
export async function readUntil(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  predicate: (text: string) => boolean,
  start = '',
): Promise<string> {
  const decoder = new TextDecoder();
  let text = start;
  while (!predicate(text)) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`stream ended before the expected text; got: ${text.slice(0, 500)}`);
    text += decoder.decode(value, { stream: true });
  }
  return text;
}
