/**
 * `npm run bench:diff`: the code review server's `GET /api/diff` against
 * `git diff HEAD` on the same repository, side by side, interleaved, at two
 * sizes: 5,000 files (300 modified, 20 deleted and 30 new files staged) and
 * 100,000 files (950 modified, 20 deleted, 30 new: 1,000 changed). In both,
 * the base commit is packed (`git gc`, as in a clone) and a second commit
 * touching 1% of the files leaves its objects loose.
 *
 * Per size: fresh processes (`node dist/src/cli.js code-review`, the compiled
 * files the package and the image run, built first), each timed from spawn to
 * its first full response and paired with a `git diff HEAD` run;
 * then one warm server, timed per request after two warm-ups, each request
 * paired with a `git diff HEAD` run (the order alternates). Ratios are
 * paired run by run: median and range. The server's peak RSS (VmHWM) is read
 * after the warm runs. BENCH_FILES (one size), BENCH_RUNS and BENCH_FRESH
 * change the sizes and the number of runs.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { GIT_ENV } from '../tests/support/git-repo.ts';
import { median } from './stats.ts';

const SIZES = process.env['BENCH_FILES'] ? [Number(process.env['BENCH_FILES'])] : [5_000, 100_000];
const FOLDERS = 50;
const RUNS = Number(process.env['BENCH_RUNS'] ?? 9);
const FRESH_RUNS = Number(process.env['BENCH_FRESH'] ?? 3);
const AIMS = { warm: 1.5, fresh: 3, rssMb: 300 };

interface Shape {
  files: number;
  modified: number;
  deleted: number;
  added: number;
}

const shapeOf = (files: number): Shape =>
  files >= 50_000 ? { files, modified: 950, deleted: 20, added: 30 } : { files, modified: 300, deleted: 20, added: 30 };

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '..');
const git = (cwd: string, ...args: string[]) => run('git', args, { cwd, env: GIT_ENV, maxBuffer: 1024 * 1024 * 1024 });

function fileBody(i: number, variant = ''): string {
  const lines = [`// file ${i}`, `export function f${i}(x) {`];
  for (let l = 0; l < 40; l++)
    lines.push(`  const v${l} = x * ${l} + ${i}; // ${variant}${l % 7 === 0 ? 'seven' : 'plain'}`);
  lines.push('  return x;', '}', '');
  return lines.join('\n');
}

async function makeRepo({ files, modified, deleted, added }: Shape): Promise<string> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'gatehouse-bench-diff-'));
  await git(dir, 'init', '-q', '-b', 'main');
  // No background `gc --auto` racing the explicit one below.
  await git(dir, 'config', 'gc.auto', '0');
  const folders = Math.max(FOLDERS, files / 100);
  for (let f = 0; f < folders; f++) mkdirSync(path.join(dir, `pkg${f}`, 'src'), { recursive: true });
  const name = (i: number) => path.join(`pkg${i % folders}`, 'src', `mod${i}.ts`);
  for (let i = 0; i < files; i++) writeFileSync(path.join(dir, name(i)), fileBody(i));
  await git(dir, 'add', '-A');
  await git(dir, 'commit', '-q', '-m', 'base');
  await git(dir, 'gc', '-q');
  // A second commit whose objects stay loose.
  for (let i = 3; i < files; i += 100) writeFileSync(path.join(dir, name(i)), fileBody(i, 'second '));
  await git(dir, 'commit', '-q', '-am', 'loose');
  // Spread the edits over the tree: every (files / modified)th file changes two places.
  const step = Math.floor(files / modified);
  for (let k = 0; k < modified; k++) {
    const i = k * step;
    const body = fileBody(i)
      .replace('const v3 ', 'const changed3 ')
      .replace(`const v30 = x * 30`, `const v30 = x * 31`);
    writeFileSync(path.join(dir, name(i)), body);
  }
  const removed = Array.from({ length: deleted }, (_, k) => name(k * step + 1));
  await git(dir, 'rm', '-q', ...removed);
  for (let k = 0; k < added; k++) {
    writeFileSync(path.join(dir, `pkg${k % folders}`, 'src', `new${k}.ts`), fileBody(files + k, 'new '));
  }
  await git(dir, 'add', 'pkg*/src/new*.ts');
  // Rewrite the index a moment later, so no entry is racily clean (as in a repository at rest).
  await new Promise((resolve) => setTimeout(resolve, 1100));
  await git(dir, 'update-index', '-q', '--refresh').catch(() => undefined);
  return dir;
}

interface Server {
  url: string;
  pid: number | undefined;
  stop: () => void;
}

function startServer(repo: string): Promise<Server> {
  const env: NodeJS.ProcessEnv = { ...process.env, BROWSER: 'true', LOG_LEVEL: 'warn' };
  delete env['SERVICE_REMOTE'];
  delete env['SERVICE_PORT'];
  const child = spawn(process.execPath, [path.join(root, 'dist/src/cli.js'), 'code-review', '--repo', repo], {
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
      if (url) resolve({ url, pid: child.pid, stop: () => child.kill('SIGTERM') });
    });
    child.once('exit', (code) => reject(new Error(`code-review exited ${code}: ${err}`)));
  });
}

async function timeIt(fn: () => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

/** A process's peak resident set (Linux), in MB. */
function peakRssMb(pid: number | undefined): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1] ?? NaN) / 1024;
}

async function getDiff(url: string): Promise<{ rawPatch: string }> {
  const response = await fetch(`${url}api/diff`);
  if (!response.ok) throw new Error(`GET /api/diff answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as { rawPatch: string };
}

interface Figures {
  shape: Shape;
  identical: boolean;
  git: number[];
  warm: number[];
  gitFresh: number[];
  fresh: number[];
  rssMb: number[];
}

/** Runs `a` and `b` in turn, alternating which goes first. */
async function paired(round: number, a: () => Promise<number>, b: () => Promise<number>): Promise<[number, number]> {
  if (round % 2 === 0) {
    const x = await a();
    return [x, await b()];
  }
  const y = await b();
  return [await a(), y];
}

async function measure(shape: Shape): Promise<Figures> {
  const made = Date.now();
  const repo = await makeRepo(shape);
  console.log(`${shape.files} files: repository built in ${((Date.now() - made) / 1000).toFixed(0)} s`);
  const figures: Figures = { shape, identical: true, git: [], warm: [], gitFresh: [], fresh: [], rssMb: [] };
  const gitDiff = async () => (await git(repo, 'diff', 'HEAD')).stdout;
  const expected = await gitDiff();
  try {
    for (let i = 0; i < FRESH_RUNS; i++) {
      const [g, fresh] = await paired(
        i,
        () => timeIt(gitDiff),
        async () => {
          const spawnedAt = process.hrtime.bigint();
          const server = await startServer(repo);
          try {
            const first = await getDiff(server.url);
            const ms = Number(process.hrtime.bigint() - spawnedAt) / 1e6;
            figures.identical &&= first.rawPatch === expected;
            return ms;
          } finally {
            server.stop();
          }
        },
      );
      figures.gitFresh.push(g);
      figures.fresh.push(fresh);
    }
    const server = await startServer(repo);
    try {
      await getDiff(server.url);
      await getDiff(server.url);
      for (let i = 0; i < RUNS; i++) {
        const [g, warm] = await paired(
          i,
          () => timeIt(gitDiff),
          () => timeIt(() => getDiff(server.url)),
        );
        figures.git.push(g);
        figures.warm.push(warm);
      }
      figures.rssMb.push(peakRssMb(server.pid));
    } finally {
      server.stop();
    }
  } finally {
    rmSync(repo, { recursive: true, force: true });
  }
  return figures;
}

/** Median of the run-by-run ratios, with their range. */
function ratio(ours: number[], base: number[]): { median: number; text: string } {
  const ratios = ours.map((x, i) => x / (base[i] ?? NaN));
  const sorted = [...ratios].sort((a, b) => a - b);
  const m = median(ratios);
  return { median: m, text: `${m.toFixed(2)}× (${sorted[0]?.toFixed(2)}–${sorted.at(-1)?.toFixed(2)})` };
}

const ms = (xs: number[]) =>
  `${median(xs).toFixed(0)} ms (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`;
const verdict = (value: number, aim: number) => (value <= aim ? 'met' : 'NOT met');
const judged = (r: { median: number; text: string }, aim: number) => `${r.text} ${verdict(r.median, aim)}`;
const rss = (f: Figures) => `${median(f.rssMb).toFixed(0)} MB ${verdict(median(f.rssMb), AIMS.rssMb)}`;

async function main(): Promise<void> {
  const machine = `${os.cpus().length} CPUs, Node ${process.version}`;
  console.log(`bench:diff — ${RUNS} warm pairs and ${FRESH_RUNS} fresh-process pairs per size, ${machine}`);
  // What users run is the compiled JavaScript, not src/*.ts with Node's type stripping (slower to load).
  await run('npm', ['run', 'build:server'], { cwd: root });
  const all: Figures[] = [];
  for (const size of SIZES) all.push(await measure(shapeOf(size)));
  const rows: [string, (f: Figures) => string][] = [
    ['changed (modified / deleted / new)', (f) => `${f.shape.modified} / ${f.shape.deleted} / ${f.shape.added}`],
    ['patch identical to git diff HEAD', (f) => (f.identical ? 'yes' : 'NO')],
    ['git diff HEAD', (f) => ms(f.git)],
    ['GET /api/diff, warm', (f) => ms(f.warm)],
    [`warm ratio, paired (aim ≤ ${AIMS.warm}×)`, (f) => judged(ratio(f.warm, f.git), AIMS.warm)],
    ['fresh process, first full response', (f) => ms(f.fresh)],
    ['git diff HEAD, paired with it', (f) => ms(f.gitFresh)],
    [`fresh ratio, paired (aim ≤ ${AIMS.fresh}×)`, (f) => judged(ratio(f.fresh, f.gitFresh), AIMS.fresh)],
    [`server peak RSS (aim ≤ ${AIMS.rssMb} MB)`, (f) => rss(f)],
  ];
  console.log(`\n| | ${all.map((f) => `${f.shape.files.toLocaleString('en')} files`).join(' | ')} |`);
  console.log(`|---|${all.map(() => '---').join('|')}|`);
  for (const [label, cell] of rows) console.log(`| ${label} | ${all.map(cell).join(' | ')} |`);
  if (all.some((f) => !f.identical)) process.exitCode = 1;
}

await main();
