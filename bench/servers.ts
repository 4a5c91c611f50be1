/** Servers the benches start on loopback: a free port, a redis-server of their own. */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

export async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A redis-server of its own on a free loopback port, AOF on, its data in `dir`; resolves once it answers. */
export async function startRedisServer(dir: string): Promise<{ proc: ChildProcess; url: string }> {
  const port = await freePort();
  const data = path.join(dir, 'redis');
  mkdirSync(data);
  const proc = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--dir', data, '--appendonly', 'yes', '--save', ''],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  await new Promise<void>((resolve, reject) => {
    let output = '';
    proc.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Ready to accept connections')) resolve();
    });
    const failed = (why: string) =>
      reject(new Error(`redis-server did not start (apt-get install -y redis-server): ${why}`));
    proc.on('error', (error) => failed(error.message));
    proc.on('exit', () => failed(output));
  });
  return { proc, url: `redis://127.0.0.1:${port}` };
}
