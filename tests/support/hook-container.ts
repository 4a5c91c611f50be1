/**
 * `gatehouse hook …` in the built image, run as an agent runs its hook: a
 * process with the event piped to its stdin, the review port mapped to a
 * free loopback port.
 */
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { IMAGE } from './image.ts';

const run = promisify(execFile);

export interface HookProcess {
  exited: Promise<{ code: number | null; stdout: string; stderr: string }>;
  /** The review's `http://host:port/` once the hook serves it (rejects when the hook exits first). */
  url(): Promise<string>;
}

const started: string[] = [];

/** Removes the hook containers started since the last call (for an afterEach). */
export async function removeHookContainers(): Promise<void> {
  await Promise.all(started.splice(0).map((n) => run('docker', ['rm', '-f', n]).catch(() => undefined)));
}

/** `gatehouse hook <args>` with `stdin`; `dockerArgs` go to `docker run` (`-e`, `-v`, …). */
export function hookContainer(args: string[], stdin: string, dockerArgs: string[] = []): HookProcess {
  const name = `gatehouse-hook-${randomBytes(4).toString('hex')}`;
  started.push(name);
  const child = spawn(
    'docker',
    ['run', '--rm', '-i', '--name', name, '-p', '127.0.0.1::19432', ...dockerArgs, IMAGE, 'hook', ...args],
    { stdio: 'pipe' },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  const ready = new Promise<void>((resolve) => {
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      if (stderr.includes('Plan review: http://localhost:19432/')) resolve();
    });
  });
  const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('close', (code) => resolve({ code, stdout, stderr })),
  );
  child.stdin.end(stdin);
  return {
    exited,
    async url() {
      await Promise.race([ready, exited.then((r) => Promise.reject(new Error(`hook exited ${r.code}: ${r.stderr}`)))]);
      const { stdout: port } = await run('docker', ['port', name, '19432']);
      return `http://${port.trim().split('\n')[0]}/`;
    },
  };
}

/** `docker run` arguments setting `env` in the container. */
export function envArgs(env: Record<string, string>): string[] {
  return Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
}
