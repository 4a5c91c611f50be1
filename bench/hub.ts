/**
 * `npm run bench:hub`: the review hub under 1,000 pending reviews, each with
 * a long-polling waiter.
 *
 * Per round: a fresh hub (`gatehouse hub`, its own database) gets 1,000 plan
 * submissions (submit-to-URL latency), 1,000 waiters long-poll their
 * decisions (the hub's RSS is read with all of them connected), then each
 * review is approved in turn and the time from sending the decision to its
 * waiter's answer is taken. Then, side by side in pairs, real CLI clients:
 * `gatehouse plan --hub` and, as the baseline, a local `gatehouse plan`
 * review (what a user runs without a hub), each from sending the decision to
 * the process's exit; the paired ratio hub/local is printed as a median with
 * its range. BENCH_ROUNDS, BENCH_REVIEWS and BENCH_CLIENTS change the sizes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { median } from './stats.ts';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const REVIEWS = Number(process.env['BENCH_REVIEWS'] ?? 1_000);
const CLIENTS = Number(process.env['BENCH_CLIENTS'] ?? 8);
const CLI = path.resolve(import.meta.dirname, '..', 'src', 'cli.ts');

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function percentile(xs: readonly number[], p: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

/** Starts `gatehouse <args>` and resolves once it printed a URL on stderr. */
interface Started {
  child: ChildProcess;
  url: string;
  exited: Promise<number | null>;
}

function start(args: string[], env: Record<string, string>): Promise<Started> {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { PATH: process.env['PATH'] ?? '', BROWSER: 'true', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return new Promise((resolve, reject) => {
    let err = '';
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
      const url = /(https?:\/\/\S+)/.exec(err)?.[1];
      if (url) {
        child.stderr.removeAllListeners('data');
        child.stderr.resume();
        resolve({ child, url, exited });
      }
    });
    void exited.then((code) => reject(new Error(`gatehouse ${args[0]} exited (${code}) before its URL:\n${err}`)));
  });
}

async function post(url: string, body: unknown): Promise<Response> {
  const headers = { 'content-type': 'application/json' };
  const response = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
  if (!response.ok) throw new Error(`${url}: ${response.status} ${await response.text()}`);
  return response;
}

function rssMiB(pid: number): number {
  const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
  return kb / 1024;
}

const APPROVE = { planSave: { enabled: false } };

/** One long-polling waiter: asks again until the decision comes; resolves with the time it arrived. */
async function waiter(base: string, id: string): Promise<number> {
  for (;;) {
    const response = await fetch(`${base}api/reviews/${id}/decision?wait=60`);
    if (response.status === 200) {
      await response.arrayBuffer();
      return performance.now();
    }
    await response.body?.cancel();
  }
}

interface RoundResult {
  submitMs: number[];
  decisionMs: number[];
  rss: number;
  pairs: { hub: number; local: number }[];
}

async function round(home: string): Promise<RoundResult> {
  const port = await freePort();
  const hub = await start(['hub', '--port', String(port)], {
    HOME: home,
    HUB_DB_PATH: path.join(home, `hub-${port}.db`),
  });
  const base = hub.url;
  try {
    const submitMs: number[] = [];
    const ids: string[] = [];
    for (let i = 0; i < REVIEWS; i++) {
      const t0 = performance.now();
      const plan = `# Plan ${i}\n\n1. Step\n`;
      const session = `s-${i % 100}`;
      const response = await post(`${base}api/reviews`, { kind: 'plan', plan, project: 'bench', session });
      const { id } = (await response.json()) as { id: string };
      submitMs.push(performance.now() - t0);
      ids.push(id);
    }
    const answered = ids.map((id) => waiter(base, id));
    await sleep(1_500); // every waiter connected and parked
    const rss = rssMiB(hub.child.pid as number);
    const decisionMs: number[] = [];
    for (let i = 0; i < ids.length; i++) {
      const t0 = performance.now();
      await post(`${base}r/${ids[i]}/api/approve`, APPROVE);
      decisionMs.push((await (answered[i] as Promise<number>)) - t0);
    }

    const pairs: { hub: number; local: number }[] = [];
    const file = path.join(home, 'plan.md');
    writeFileSync(file, '# Bench plan\n\n1. Step\n');
    for (let i = 0; i < CLIENTS; i++) {
      const timed = async (args: string[]) => {
        const client = await start(args, { HOME: home });
        await sleep(300); // the client is waiting (long-polling, or listening)
        const id = /\/r\/([^/]+)\//.exec(client.url)?.[1];
        const decide = id ? `${base}r/${id}/api/approve` : `${client.url}api/approve`;
        const t0 = performance.now();
        await post(decide, APPROVE);
        await client.exited;
        return performance.now() - t0;
      };
      // Alternate which goes first, so neither always runs on a warmer machine.
      const hubArgs = ['plan', file, '--hub', base];
      const localArgs = ['plan', file];
      if (i % 2 === 0) pairs.push({ hub: await timed(hubArgs), local: await timed(localArgs) });
      else {
        const local = await timed(localArgs);
        pairs.push({ hub: await timed(hubArgs), local });
      }
    }
    return { submitMs, decisionMs, rss, pairs };
  } finally {
    hub.child.kill('SIGTERM');
    await hub.exited;
  }
}

const f = (ms: number) => `${ms.toFixed(1)} ms`;
const home = mkdtempSync(path.join(tmpdir(), 'gatehouse-bench-hub-'));
try {
  console.log(`Review hub, ${REVIEWS} pending reviews with long-polling waiters, ${ROUNDS} rounds`);
  console.log('(aims: RSS ≤ 200 MB, decision → waiter p99 ≤ 100 ms)\n');
  console.log('| round | hub RSS, all waiting | submit → URL p50 | p99 | decision → waiter p50 | p99 | max |');
  console.log('|---|---|---|---|---|---|---|');
  const ratios: number[] = [];
  const exits: { hub: number[]; local: number[] } = { hub: [], local: [] };
  for (let r = 1; r <= ROUNDS; r++) {
    const result = await round(home);
    console.log(
      `| ${r} | ${result.rss.toFixed(0)} MiB | ${f(median(result.submitMs))} | ` +
        `${f(percentile(result.submitMs, 99))} | ${f(median(result.decisionMs))} | ` +
        `${f(percentile(result.decisionMs, 99))} | ${f(Math.max(...result.decisionMs))} |`,
    );
    for (const pair of result.pairs) {
      ratios.push(pair.hub / pair.local);
      exits.hub.push(pair.hub);
      exits.local.push(pair.local);
    }
  }
  console.log(`\nDecision → CLI process exit, ${ratios.length} pairs (hub client vs a local review, side by side):`);
  console.log(`  gatehouse plan --hub: median ${f(median(exits.hub))}, p99 ${f(percentile(exits.hub, 99))}`);
  console.log(`  gatehouse plan (local, baseline): median ${f(median(exits.local))}`);
  const range = `${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}×`;
  console.log(`  paired ratio hub/local: median ${median(ratios).toFixed(2)}× (range ${range})`);
} finally {
  rmSync(home, { recursive: true, force: true });
}
