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
 * proxy logged that it listens.
 */
export async function startProxyContainer(config: unknown, env: Record<string, string> = {}): Promise<ProxyContainer> {
  let output = '';
  const container = await new GenericContainer(IMAGE)
    .withCommand(['proxy', '--config', '/config/proxy.json'])
    .withEnvironment(env)
    .withCopyContentToContainer([{ content: JSON.stringify(config), target: '/config/proxy.json', mode: 0o644 }])
    .withExtraHosts([{ host: HOST_FROM_CONTAINER, ipAddress: 'host-gateway' }])
    .withExposedPorts(8045)
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

/** A port on the host that nothing listens on (an upstream that is down). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
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
