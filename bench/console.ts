/**
 * `npm run bench:console`: the console's Spend page over a month of usage for 100 keys × 10 models (hourly rows,
 * 720,000 of them, in the usage file the memory backend keeps), through the proxy run as its CLI: how long the
 * spend query takes (aim ≤ 200 ms) and how long Chromium takes from opening /console to its totals table
 * (aim ≤ 1 s). Prints the median and the range of BENCH_ROUNDS (default 9) rounds of each.
 *
 * BENCH_REDIS=1 is the same month kept in Redis (proxy.state.backend redis): a redis-server of the bench's own on a
 * free loopback port (Debian's `redis-server`: `apt-get install -y redis-server`), filled as replicas write it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { createLogger } from '../src/log.ts';
import { RedisConnection } from '../src/proxy/state/redis.ts';
import type { UsageSum } from '../src/proxy/usage/query.ts';
import { redisUsage } from '../src/proxy/usage/redis.ts';
import { sqliteUsage, type UsageBackend } from '../src/proxy/usage/store.ts';
import { freePort, startRedisServer } from './servers.ts';
import { median } from './stats.ts';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 9);
const KEYS = 100;
const MODELS = 10;
const DAYS = 30;
const HOUR = 3_600_000;
const ADMIN = 'bench-console-admin-key-0123456789';
const ROOT = path.resolve(import.meta.dirname, '..');
const REDIS = process.env['BENCH_REDIS'] === '1';
/** The prefix the proxy keeps its state under by default (proxy.state.key_prefix). */
const PREFIX = 'gatehouse:';

const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-bench-console-'));
const db = path.join(dir, 'usage.db');
const redis = REDIS ? await startRedisServer(dir) : undefined;
const children: ChildProcess[] = redis ? [redis.proc] : [];

/** A month of hourly rows: a batch (a transaction, a MULTI) an hour, as the proxy writes them. */
async function fill(): Promise<number> {
  let usage: UsageBackend;
  let conn: RedisConnection | undefined;
  if (redis) {
    conn = new RedisConnection(redis.url, 60_000, createLogger('silent'));
    await conn.ready(10_000);
    usage = redisUsage(conn, PREFIX, redis.url);
  } else usage = sqliteUsage(db);
  const end = Date.now() - (Date.now() % HOUR);
  let rows = 0;
  for (let day = DAYS; day > 0; day--) {
    for (let h = 0; h < 24; h++) {
      const sums: UsageSum[] = [];
      const hour = new Date(end - (day * 24 - h) * HOUR).toISOString().slice(0, 13);
      for (let k = 0; k < KEYS; k++) {
        for (let m = 0; m < MODELS; m++) {
          sums.push({
            hour,
            key: `key-${k}`,
            model: `model-${m}`,
            upstream: `up-${m % 3}`,
            status: 200,
            requests: 1 + ((k + m + h) % 7),
            input: 1_000 * (1 + (k % 5)),
            output: 200 * (1 + (m % 4)),
            cached: 0,
            estimated: 0,
            ms: 800,
            cost: 0.001 * (1 + ((k * m) % 9)),
            unpriced: 0,
          });
        }
      }
      await usage.write({ id: hour, sums });
      rows += sums.length;
    }
  }
  await usage.close();
  await conn?.close();
  return rows;
}

const ms = (xs: number[]) =>
  `median ${median(xs).toFixed(1)} ms (range ${Math.min(...xs).toFixed(1)}-${Math.max(...xs).toFixed(1)})`;

const filled = performance.now();
const rows = await fill();
console.log(
  `${redis ? 'redis' : 'usage file'}: ${rows.toLocaleString('en-US')} hourly rows in ${((performance.now() - filled) / 1000).toFixed(1)} s`,
);

const port = await freePort();
const keys = Array.from({ length: KEYS }, (_, k) => ({
  name: `key-${k}`,
  key_sha256: createHash('sha256').update(`bench-key-${k}`).digest('hex'),
  budget_usd: 100,
  budget_period: 'month',
}));
writeFileSync(
  path.join(dir, 'proxy.json'),
  JSON.stringify({
    proxy: {
      port,
      auth_mode: 'strict',
      keys: [{ name: 'ops', key_env: 'ADMIN_KEY', admin: true }, ...keys],
      ...(redis ? { state: { backend: 'redis', redis_url: redis.url } } : {}),
    },
  }),
);
const proxy = spawn(process.execPath, [path.join(ROOT, 'src', 'cli.ts'), 'proxy', '--config', 'proxy.json'], {
  cwd: dir,
  env: { ...process.env, ADMIN_KEY: ADMIN, PROXY_USAGE_DB: db, LOG_LEVEL: 'warn' },
  stdio: 'ignore',
});
children.unshift(proxy);
const base = `http://127.0.0.1:${port}`;
for (let i = 0; ; i++) {
  // Any answer will do: with auth_mode strict even /healthz wants a key.
  if (await fetch(`${base}/healthz`).catch(() => undefined)) break;
  if (i > 100) throw new Error('the proxy did not start');
  await new Promise((resolve) => setTimeout(resolve, 100));
}

try {
  const now = new Date().toISOString();
  const monthAgo = new Date(Date.now() - DAYS * 24 * HOUR).toISOString();
  const weekAgo = new Date(Date.now() - 7 * 24 * HOUR).toISOString();
  for (const [what, query] of [
    ['a month by key, day buckets', `from=${monthAgo}&to=${now}&bucket=day&by=key`],
    ['a week by key, hour buckets (the page opens on it)', `from=${weekAgo}&to=${now}&bucket=hour&by=key`],
    ['a month by model, hour buckets', `from=${monthAgo}&to=${now}&bucket=hour&by=model`],
  ] as const) {
    const times: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const started = performance.now();
      const res = await fetch(`${base}/internal/console/spend?${query}`, {
        headers: { authorization: `Bearer ${ADMIN}` },
      });
      await res.arrayBuffer();
      if (!res.ok) throw new Error(`spend answered ${res.status}`);
      times.push(performance.now() - started);
    }
    console.log(`spend query, ${what}: ${ms(times)}; aim <= 200 ms`);
  }

  const profile = mkdtempSync(path.join(tmpdir(), 'gatehouse-bench-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env['CHROMIUM'] ?? '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'],
    headless: true,
    viewport: { width: 1400, height: 900 },
  });
  // The key as the page keeps it once pasted: each round is a first render of a signed-in tab.
  await context.addInitScript({ content: `sessionStorage.setItem('gatehouse-console-key', ${JSON.stringify(ADMIN)})` });
  const renders: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const page = await context.newPage();
    const started = performance.now();
    await page.goto(`${base}/console#spend`);
    await page
      .locator('[data-testid="spend-totals"] tbody tr')
      .nth(KEYS - 1)
      .waitFor()
      .catch(async (error: unknown) => {
        throw new Error(`the Spend page did not render; it shows: ${(await page.innerText('body')).slice(0, 500)}`, {
          cause: error,
        });
      });
    await page.locator('[data-testid="spend-chart"] canvas').waitFor();
    renders.push(performance.now() - started);
    await page.close();
  }
  console.log(`console first render (Spend, ${KEYS} keys, 168 hour buckets): ${ms(renders)}; aim <= 1000 ms`);
  await context.close();
  rmSync(profile, { recursive: true, force: true });
} finally {
  for (const child of children) {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
  }
  rmSync(dir, { recursive: true, force: true });
}
