/**
 * `npm run bench:diff`: the code review server's `GET /api/diff` against
 * `git diff HEAD` on the same repository, side by side, interleaved.
 *
 * Repository: 5,000 text files in 50 folders; 300 modified in the work tree,
 * 20 deleted and 30 new files staged (the shape of performance-facts.md).
 * The server runs as its own process (`node src/cli.ts code-review`), warm:
 * the figures are per request after two warm-up requests. BENCH_PACKED=1
 * packs the base commit first (a cloned repository's shape); BENCH_FILES and
 * BENCH_RUNS change the size and the number of runs.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { GIT_ENV } from '../tests/support/git-repo.ts';
import { median } from './stats.ts';

const FILES = Number(process.env['BENCH_FILES'] ?? 5_000);
const FOLDERS = 50;
const MODIFIED = 300;
const DELETED = 20;
const ADDED = 30;
const RUNS = Number(process.env['BENCH_RUNS'] ?? 9);
/** BENCH_PACKED=1: pack the base commit's objects (`git gc`), as they are in a cloned repository. */
const PACKED = process.env['BENCH_PACKED'] === '1';
const TARGET_RATIO = 3;

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '..');
const git = (cwd: string, ...args: string[]) => run('git', args, { cwd, env: GIT_ENV, maxBuffer: 256 * 1024 * 1024 });

function fileBody(i: number, variant = ''): string {
  const lines = [`// file ${i}`, `export function f${i}(x) {`];
  for (let l = 0; l < 40; l++) lines.push(`  const v${l} = x * ${l} + ${i}; // ${variant}${l % 7 === 0 ? 'seven' : 'plain'}`);
  lines.push('  return x;', '}', '');
  return lines.join('\n');
}

async function makeRepo(): Promise<string> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'gatehouse-bench-diff-'));
  await git(dir, 'init', '-q', '-b', 'main');
  for (let f = 0; f < FOLDERS; f++) mkdirSync(path.join(dir, `pkg${f}`, 'src'), { recursive: true });
  const name = (i: number) => path.join(`pkg${i % FOLDERS}`, 'src', `mod${i}.ts`);
  for (let i = 0; i < FILES; i++) writeFileSync(path.join(dir, name(i)), fileBody(i));
  await git(dir, 'add', '-A');
  await git(dir, 'commit', '-q', '-m', 'base');
  if (PACKED) await git(dir, 'gc', '-q');
  // Spread the edits over the tree: every (FILES / MODIFIED)th file changes two places.
  const step = Math.floor(FILES / MODIFIED);
  for (let k = 0; k < MODIFIED; k++) {
    const i = k * step;
    const body = fileBody(i).replace('const v3 ', 'const changed3 ').replace(`const v30 = x * 30`, `const v30 = x * 31`);
    writeFileSync(path.join(dir, name(i)), body);
  }
  const removed = Array.from({ length: DELETED }, (_, k) => name(k * step + 1));
  await git(dir, 'rm', '-q', ...removed);
  for (let k = 0; k < ADDED; k++) writeFileSync(path.join(dir, `pkg${k % FOLDERS}`, 'src', `new${k}.ts`), fileBody(FILES + k, 'new '));
  await git(dir, 'add', 'pkg*/src/new*.ts');
  return dir;
}

interface Server {
  url: string;
  stop: () => void;
}

function startServer(repo: string): Promise<Server> {
  const env: NodeJS.ProcessEnv = { ...process.env, BROWSER: 'true', LOG_LEVEL: 'warn' };
  delete env['SERVICE_REMOTE'];
  delete env['SERVICE_PORT'];
  const child = spawn(process.execPath, [path.join(root, 'src/cli.ts'), 'code-review', '--repo', repo], {
    cwd: repo,
    // Local mode on a random port; `true` stands in for the browser.
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let err = '';
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
      const url = /Code review: (http:\/\/\S+)/.exec(err)?.[1];
      if (url) resolve({ url, stop: () => child.kill('SIGTERM') });
    });
    child.once('exit', (code) => reject(new Error(`code-review exited ${code}: ${err}`)));
  });
}

async function timeIt(fn: () => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - start) / 1e6;
}


async function main(): Promise<void> {
  console.log(`bench:diff — ${FILES} files in ${FOLDERS} folders, ${MODIFIED} modified, ${DELETED} deleted + ${ADDED} new staged${PACKED ? ', objects packed' : ''}`);
  const repo = await makeRepo();
  let server: Server | undefined;
  try {
    const spawnedAt = process.hrtime.bigint();
    server = await startServer(repo);
    const { url } = server;
    const getDiff = async () => {
      const response = await fetch(`${url}api/diff`);
      if (!response.ok) throw new Error(`GET /api/diff answered ${response.status}: ${await response.text()}`);
      return (await response.json()) as { rawPatch: string };
    };
    const gitDiff = async () => (await git(repo, 'diff', 'HEAD')).stdout;

    const first = await getDiff();
    const coldMs = Number(process.hrtime.bigint() - spawnedAt) / 1e6;
    const expected = await gitDiff();
    const same = first.rawPatch === expected;
    console.log(`patch identical to git diff HEAD: ${same ? 'yes' : 'NO'} (${expected.length} bytes, ${expected.split('\ndiff --git').length} files)`);
    await getDiff();

    const ours: number[] = [];
    const theirs: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      // Alternate which goes first so neither always runs on a warmer machine.
      if (i % 2 === 0) {
        theirs.push(await timeIt(gitDiff));
        ours.push(await timeIt(getDiff));
      } else {
        ours.push(await timeIt(getDiff));
        theirs.push(await timeIt(gitDiff));
      }
    }
    const fmt = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(' ');
    console.log(`git diff HEAD      ms: ${fmt(theirs)}  median ${median(theirs).toFixed(1)}`);
    console.log(`GET /api/diff      ms: ${fmt(ours)}  median ${median(ours).toFixed(1)}`);
    const ratio = median(ours) / median(theirs);
    console.log(`ratio (server / git, medians): ${ratio.toFixed(2)}×  (target ≤ ${TARGET_RATIO}×: ${ratio <= TARGET_RATIO ? 'met' : 'NOT met'})`);
    console.log(`cold: process start to first full response ${coldMs.toFixed(0)} ms`);
    if (!same) process.exitCode = 1;
  } finally {
    server?.stop();
    rmSync(repo, { recursive: true, force: true });
  }
}

await main();
