/**
 * `npm run bench:review`: the plan review server under many concurrent reads
 * of a large plan. A 5 MB plan with non-ASCII text throughout (V8 holds such
 * text at two bytes a character) is read by 200 clients at once
 * (`GET /api/plan`, each reading the whole answer), and the server process's
 * peak RSS, its CPU time and the wall time of the 200 reads are measured.
 *
 * Side by side in one run, each round in fresh processes (so the peak RSS is
 * that round's): gatehouse's plan routes (the answer serialised once), and a
 * baseline with the same review app whose `/api/plan` builds and serialises
 * the answer on every read, as it did before. Rounds alternate which goes
 * first; ratios are paired round by round (median with the range).
 *
 * The readers send a browser's Accept-Encoding, so gatehouse answers with the
 * gzip form it made once (the baseline, as before, never compresses);
 * BENCH_ACCEPT_ENCODING=identity reads the raw bytes from both.
 *
 * Env: BENCH_ROUNDS (5), BENCH_READERS (200), BENCH_PLAN_MB (5), BENCH_ACCEPT_ENCODING.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import Router from '@koa/router';
import { Agent, request } from 'undici';
import { createReviewApp } from '../src/review/app.ts';
import { DecisionGate } from '../src/review/decision.ts';
import { planRoutes, type PlanDecision } from '../src/review/plan/routes.ts';
import { silentLog, testReviewConfig } from '../tests/support/review.ts';
import { median } from './stats.ts';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 5);
const READERS = Number(process.env['BENCH_READERS'] ?? 200);
const PLAN_MB = Number(process.env['BENCH_PLAN_MB'] ?? 5);
const VARIANTS = ['gatehouse', 'baseline'] as const;
type Variant = (typeof VARIANTS)[number];

/** A plan of `mb` megabytes (UTF-8) with non-ASCII characters on every line. */
function largePlan(mb: number): string {
  const lines = ['# Übersicht: ein großer Plan — 大きな計画'];
  let bytes = 0;
  for (let i = 0; bytes < mb * 1024 * 1024; i++) {
    const line = `- Schritt ${i}: prüfe die Größe der Änderung, the naïve café, ☕ ${'lorem ipsum '.repeat(4)}`;
    lines.push(line);
    bytes += Buffer.byteLength(line) + 1;
  }
  return `${lines.join('\n')}\n`;
}

// ---------------------------------------------------------------- child role

async function serve(variant: Variant, planFile: string): Promise<void> {
  const plan = readFileSync(planFile, 'utf8');
  const { config } = await testReviewConfig();
  const permissionMode = 'plan';
  let routes: Router;
  if (variant === 'gatehouse') {
    routes = planRoutes({ plan, permissionMode, config, log: silentLog })(new DecisionGate<PlanDecision>());
  } else {
    // The answer built and serialised on every read (Koa stringifies an object body per response).
    routes = new Router().get('/api/plan', (ctx) => {
      ctx.body = { plan, origin: config.origin, permissionMode, sharingEnabled: config.sharingEnabled };
    });
  }
  const server = createReviewApp({ config, log: silentLog, routes, document: () => '' }).listen(0, '127.0.0.1');
  server.once('listening', () => process.send?.({ port: (server.address() as AddressInfo).port }));
  process.on('message', () => {
    const usage = process.resourceUsage();
    const cpuMs = (usage.userCPUTime + usage.systemCPUTime) / 1000;
    process.send?.({ peakRssMb: usage.maxRSS / 1024, cpuMs }, () => process.exit(0));
  });
}

// ---------------------------------------------------------------- orchestration

interface Measure {
  peakRssMb: number;
  cpuMs: number;
  wallMs: number;
}

/** What the readers send: a browser's Accept-Encoding by default; BENCH_ACCEPT_ENCODING=identity for raw bytes. */
const headers = { 'accept-encoding': process.env['BENCH_ACCEPT_ENCODING'] ?? 'gzip, deflate, br, zstd' };

async function measure(variant: Variant, planFile: string, expectedBytes: number): Promise<Measure> {
  const args = [import.meta.filename, 'serve', variant, planFile];
  const child: ChildProcess = spawn(process.execPath, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const next = () =>
    new Promise<Record<string, number>>((resolve, reject) => {
      child.once('message', (m) => resolve(m as Record<string, number>));
      child.once('exit', (code) => reject(new Error(`${variant} server exited with ${code}`)));
    });
  const { port } = await next();
  const agent = new Agent({ connections: READERS, pipelining: 0 });
  const started = performance.now();
  const answers = await Promise.all(
    Array.from({ length: READERS }, async () => {
      const res = await request(`http://127.0.0.1:${port}/api/plan`, { dispatcher: agent, headers });
      let size = 0;
      for await (const chunk of res.body) size += (chunk as Buffer).length;
      return { size, encoding: res.headers['content-encoding'] };
    }),
  );
  const wallMs = performance.now() - started;
  await agent.close();
  // One more read, kept whole, checks the content; the timed ones are counted and compared with it.
  const first = await request(`http://127.0.0.1:${port}/api/plan`, { headers });
  let body = Buffer.from(await first.body.arrayBuffer());
  if (first.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
  if (body.length !== expectedBytes) throw new Error(`${variant}: the answer had the wrong size`);
  if (answers.some((a) => a.size !== answers[0]?.size || a.encoding !== first.headers['content-encoding'])) {
    throw new Error(`${variant}: the answers differ`);
  }
  child.send('report');
  const { peakRssMb = NaN, cpuMs = NaN } = await next();
  return { peakRssMb, cpuMs, wallMs };
}

const fmt = (xs: number[], digits = 0) =>
  `${median(xs).toFixed(digits)} (${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)})`;

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'gatehouse-bench-review-'));
  try {
    const plan = largePlan(PLAN_MB);
    const planFile = path.join(dir, 'PLAN.md');
    writeFileSync(planFile, plan);
    const { config } = await testReviewConfig();
    const answer = { plan, origin: config.origin, permissionMode: 'plan', sharingEnabled: config.sharingEnabled };
    const expectedBytes = Buffer.byteLength(JSON.stringify(answer));
    const planMb = (Buffer.byteLength(plan) / 1024 / 1024).toFixed(1);
    console.log(
      `GET /api/plan: ${planMb} MB plan (non-ASCII), ${READERS} reads at once, ${ROUNDS} rounds, ` +
        `accept-encoding: ${headers['accept-encoding']}\n`,
    );
    const results: Record<Variant, Measure[]> = { gatehouse: [], baseline: [] };
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? VARIANTS : [...VARIANTS].reverse();
      for (const variant of order) {
        const m = await measure(variant, planFile, expectedBytes);
        results[variant].push(m);
        const [rss, wall, cpu] = [m.peakRssMb, m.wallMs, m.cpuMs].map((x) => x.toFixed(0));
        const figures = `peak RSS ${rss} MB, wall ${wall} ms, CPU ${cpu} ms`;
        console.log(`round ${round + 1} ${variant.padEnd(9)} ${figures}`);
      }
    }
    const row = (label: string, key: keyof Measure) => {
      const ratios = results.baseline.map((b, i) => b[key] / (results.gatehouse[i] as Measure)[key]);
      const of = (v: Variant) => fmt(results[v].map((m) => m[key]));
      const cells = [of('gatehouse'), of('baseline'), fmt(ratios, 2)];
      console.log(`| ${label} | ${cells.join(' | ')} |`);
    };
    console.log('\n| measure | gatehouse (serialised once) | baseline (per read) | baseline ÷ gatehouse, paired |');
    console.log('|---|---|---|---|');
    row('server peak RSS, MB', 'peakRssMb');
    row(`wall time of the ${READERS} reads, ms`, 'wallMs');
    row('server CPU, ms', 'cpuMs');
    console.log('\nMedians with the range over the rounds. Aim: under 300 MB peak RSS and under 1 s for the reads.');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === 'serve') await serve(process.argv[3] as Variant, process.argv[4] as string);
else await main();
