import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { GenericContainer, Wait, type StartedTestContainer } from 'testcontainers';
import { IMAGE } from './image.ts';

const run = promisify(execFile);

export interface ContainerFile {
  content: string | Buffer;
  target: string;
  mode?: number;
}

export interface ReviewContainerOptions {
  /** The image to run; the black-box suites' gatehouse image unless set. */
  image?: string;
  /** The container's working directory, /work (the mounted project) unless set. */
  workdir?: string;
  /** The gatehouse arguments, e.g. `['plan', '/work/PLAN.md']`. */
  command: string[];
  env?: Record<string, string>;
  files?: ContainerFile[];
  /** Run through `sh -c` instead of the gatehouse entrypoint (for stdin redirects and two processes). */
  shell?: string;
  extraHosts?: { host: string; ipAddress: string }[];
  /** Host folders mounted into the container (e.g. a git repository at /work). */
  binds?: { source: string; target: string; mode?: 'ro' | 'rw' }[];
  /** The stderr line that says the server is up; null to not wait at all. */
  readyLine?: RegExp | null;
}

export interface ReviewContainer {
  container: StartedTestContainer;
  id: string;
  /** `http://host:port/` of the mapped review port. */
  url: string;
  /** Waits for the container to exit and returns its exit code and separate stdout/stderr. */
  finish(): Promise<{ exitCode: number; stdout: string; stderr: string }>;
  /** Copies a file out of the (possibly stopped) container. */
  readFile(path: string): Promise<string>;
  stop(): Promise<void>;
}

/** Starts a gatehouse review container with 19432 mapped; the caller stops it. */
export async function startReviewContainer(options: ReviewContainerOptions): Promise<ReviewContainer> {
  // /work is the project, as docker-compose.yml's working_dir has it.
  let builder = new GenericContainer(options.image ?? IMAGE)
    .withWorkingDir(options.workdir ?? '/work')
    .withExposedPorts(19432)
    .withEnvironment(options.env ?? {});
  builder = options.shell
    ? builder.withEntrypoint(['sh', '-c']).withCommand([options.shell])
    : builder.withCommand(options.command);
  if (options.files?.length)
    builder = builder.withCopyContentToContainer(
      options.files.map((f) => ({ content: f.content, target: f.target, mode: f.mode ?? 0o644 })),
    );
  if (options.extraHosts) builder = builder.withExtraHosts(options.extraHosts);
  if (options.binds) builder = builder.withBindMounts(options.binds);
  const ready = options.readyLine === undefined ? /review: http:\/\/localhost:19432\// : options.readyLine;
  builder =
    ready === null
      ? builder.withWaitStrategy(Wait.forOneShotStartup())
      : builder.withWaitStrategy(Wait.forLogMessage(ready)).withStartupTimeout(30_000);
  const container = await builder.start();
  const id = container.getId();
  const url = ready === null ? '' : `http://${container.getHost()}:${container.getMappedPort(19432)}/`;
  return {
    container,
    id,
    url,
    async finish() {
      const { stdout: code } = await run('docker', ['wait', id]);
      const { stdout, stderr } = await run('docker', ['logs', id], { maxBuffer: 32 * 1024 * 1024 });
      return { exitCode: Number(code.trim()), stdout, stderr };
    },
    async readFile(path: string) {
      const { stdout } = await run('docker', ['cp', `${id}:${path}`, '-'], {
        encoding: 'buffer',
        maxBuffer: 32 * 1024 * 1024,
      });
      return tarFirstFile(stdout);
    },
    async stop() {
      await container.stop({ timeout: 2_000 }).catch(() => undefined);
    },
  };
}

/** `docker cp … -` writes a tar stream: the first entry's content. */
function tarFirstFile(tar: Buffer): string {
  const size = parseInt(tar.subarray(124, 136).toString('ascii').replace(/\0.*$/, '').trim(), 8);
  return tar.subarray(512, 512 + size).toString('utf8');
}
