/**
 * The proxy's batched log writes: LineBatcher in front of a real sonic-boom
 * writing to a file descriptor, and a real process that exits right after logging.
 */
import { execFile } from 'node:child_process';
import { pbkdf2 } from 'node:crypto';
import { mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { batchedDestination, type LineBatcher } from '../../src/log.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function batcherToFile(maxChars: number): { batcher: LineBatcher; written: () => string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'gatehouse-log-'));
  dirs.push(dir);
  const file = path.join(dir, 'out.log');
  return { batcher: batchedDestination(openSync(file, 'a'), maxChars), written: () => readFileSync(file, 'utf8') };
}

describe('LineBatcher', () => {
  it('holds lines below the batch size until flushed, then writes them in order', async () => {
    const { batcher, written } = batcherToFile(1000);
    batcher.write('first\n');
    batcher.write('second\n');
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(written()).toBe('');
    await new Promise((resolve) => batcher.flush(resolve));
    expect(written()).toBe('first\nsecond\n');
  });

  it('hands a batch to the file once it reaches the batch size, without a flush', async () => {
    const { batcher, written } = batcherToFile(10);
    batcher.write('12345\n');
    batcher.write('67890\n');
    batcher.write('held\n');
    await vi.waitFor(() => expect(written()).toBe('12345\n67890\n'));
    await new Promise((resolve) => batcher.flush(resolve));
    expect(written()).toBe('12345\n67890\nheld\n');
  });

  it('flushSync has written everything when it returns, even while the thread pool is busy', async () => {
    const { batcher, written } = batcherToFile(1000);
    // An asynchronous write would queue behind these on libuv's thread pool (4 threads) and land late.
    const busy = Array.from({ length: 4 }, () => promisify(pbkdf2)('x', 'salt', 400_000, 32, 'sha256'));
    batcher.write('a\n');
    batcher.write('b\n');
    batcher.flushSync();
    expect(written()).toBe('a\nb\n');
    await Promise.all(busy);
  });

  it('pino lines through it stay whole JSON lines', async () => {
    const { batcher, written } = batcherToFile(200);
    const log = pino({ base: null }, batcher);
    for (let i = 0; i < 25; i++) log.info({ i }, 'request');
    await new Promise((resolve) => log.flush(resolve));
    const lines = written()
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { i: number; msg: string });
    expect(lines.map((line) => line.i)).toEqual(Array.from({ length: 25 }, (_, i) => i));
  });

  it('a process that exits right after logging still writes its held lines', async () => {
    const logModule = path.resolve(import.meta.dirname, '../../src/log.ts');
    const script = `import { createLogger } from ${JSON.stringify(logModule)};
const log = createLogger('info', { batchChars: 1 << 20 });
log.info({ n: 1 }, 'last words');
process.exit(0);`;
    const { stderr } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script]);
    expect(JSON.parse(stderr)).toMatchObject({ n: 1, msg: 'last words' });
  });
});
