import { createServer, type Server } from 'node:http';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import type { CommandContext } from '../../src/command.ts';
import { runHealthcheck } from '../../src/healthcheck.ts';
import { closedPort } from '../support/proxy-container.ts';
import { capture } from '../support/review.ts';

const servers: Server[] = [];
afterEach(() => Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve)))));

const probe = (port: number): Promise<number> => {
  const ctx: CommandContext = {
    argv: ['proxy'],
    env: { PROXY_PORT: String(port), PROXY_API_KEY: 'health-key-0123456789' },
    cwd: '/',
    stdin: Readable.from([]),
    stdout: capture(),
    stderr: capture(),
    shutdown: new AbortController().signal,
  };
  return runHealthcheck(ctx);
};

describe('gatehouse healthcheck', () => {
  it('passes the moment a starting service answers, within one probe', async () => {
    const port = await closedPort();
    let key: string | undefined;
    setTimeout(() => {
      const server = createServer((req, res) => {
        key = req.headers.authorization;
        res.end('{"status":"ok"}');
      });
      servers.push(server);
      server.listen(port, '127.0.0.1');
    }, 700);
    const started = Date.now();
    expect(await probe(port)).toBe(0);
    expect(Date.now() - started).toBeGreaterThanOrEqual(700);
    expect(key).toBe('Bearer health-key-0123456789');
  });

  it('fails once its 3 s are up when nothing answers', async () => {
    const started = Date.now();
    expect(await probe(await closedPort())).toBe(1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(2_900);
  });

  it('fails on an answer that is not 2xx', async () => {
    const server = createServer((_req, res) => {
      res.statusCode = 503;
      res.end();
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    expect(await probe((server.address() as { port: number }).port)).toBe(1);
  });
});
