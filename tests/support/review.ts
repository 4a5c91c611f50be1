import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import pino from 'pino';
import { loadReviewConfig, type ReviewConfig } from '../../src/config/review.ts';

/** A quiet logger for in-process review tests. */
export const silentLog = pino({ level: 'silent' });

/** A remote-mode config on a random port, rooted in a fresh temporary folder. */
export async function testReviewConfig(
  overrides: Partial<ReviewConfig> = {},
): Promise<{ config: ReviewConfig; root: string; cleanup: () => Promise<void> }> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'gatehouse-review-'));
  const projectDir = path.join(root, 'project');
  const env = {
    HOME: path.join(root, 'home'),
    SERVICE_REMOTE: '1',
    GATEHOUSE_UPLOAD_DIR: path.join(root, 'uploads'),
    GATEHOUSE_PLAN_DIR: path.join(root, 'plans'),
    GATEHOUSE_NOTEVAULT_CONFIG: path.join(root, 'notevault.json'),
  };
  const config = { ...loadReviewConfig({ args: [], env, projectDir }), port: 0, ...overrides };
  return { config, root, cleanup: () => rm(root, { recursive: true, force: true }) };
}

/** A writable stream that keeps what was written, for stdout/stderr. */
export function capture(): PassThrough & { text: () => string } {
  const stream = new PassThrough();
  const chunks: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk));
  return Object.assign(stream, { text: () => Buffer.concat(chunks).toString('utf8') });
}
