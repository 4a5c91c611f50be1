// The proxy's console in Chromium, against the proxy run as its CLI with an upstream whose answers report known
// token counts (so every cost shown is known by hand): each page shows the requests sent through the proxy, the
// range and grouping change the chart, the CSV is the table, a key that is not an admin's sees a 403 and nothing
// else, and no other origin can frame the page.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { close } from '../../src/http/server.ts';
import type { SpendResponse } from '../../src/proxy/console/contract.ts';
import { browserSuite, newPage, ROOT, screenshot, tempDir } from '../support/browser.ts';
import { COST, LLAMA_PRICE, startPricedUpstream, type PricedUpstream } from '../support/priced-upstream.ts';
import { closedPort } from '../support/proxy-container.ts';

const KEYS = { ops: 'ops-console-key-0123456789', alice: 'alice-console-key-0123456789' };

const suite = browserSuite();
let upstream: PricedUpstream;
let proxy: ChildProcess;
let base: string;
let attacker: Server;
let attackerPage = '';

async function send(key: string, model: string): Promise<void> {
  const res = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'Say hello' }] }),
  });
  expect(res.status).toBe(200);
  await res.arrayBuffer();
}

beforeAll(async () => {
  upstream = await startPricedUpstream('127.0.0.1');
  const dir = tempDir('gatehouse-console-');
  const at = (vendor: string) => `http://127.0.0.1:${upstream.port}/${vendor}`;
  const port = await closedPort();
  const config = {
    proxy: {
      port,
      auth_mode: 'strict',
      // Exact names: usage is counted under the upstream's entry that matched the model.
      upstreams: [
        {
          name: 'oa',
          protocol: 'openai',
          base_url: at('openai/v1'),
          api_key: 'u',
          models: ['gpt-4o-mini', 'my-llama-8b'],
        },
        {
          name: 'an',
          protocol: 'anthropic',
          base_url: at('anthropic'),
          api_key: 'u',
          models: ['claude-3-5-haiku-20241022'],
        },
      ],
      prices: [LLAMA_PRICE],
      keys: [
        { name: 'ops', key_env: 'OPS_KEY', admin: true },
        {
          name: 'alice',
          key_env: 'ALICE_KEY',
          rpm: 600,
          budget_usd: 0.01,
          budget_tokens: 100_000,
          budget_period: 'month',
        },
      ],
    },
  };
  writeFileSync(path.join(dir, 'proxy.json'), JSON.stringify(config));
  proxy = spawn(process.execPath, [path.join(ROOT, 'src', 'cli.ts'), 'proxy', '--config', 'proxy.json'], {
    cwd: dir,
    env: { ...process.env, OPS_KEY: KEYS.ops, ALICE_KEY: KEYS.alice, PROXY_USAGE_DB: path.join(dir, 'usage.db') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const take = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('proxy listening')) resolve();
    };
    proxy.stdout?.on('data', take);
    proxy.stderr?.on('data', take);
    proxy.on('exit', (code) => reject(new Error(`proxy exited ${code}: ${output}`)));
    setTimeout(() => reject(new Error(`proxy not listening after 20 s: ${output}`)), 20_000).unref();
  });
  base = `http://127.0.0.1:${port}`;
  // alice: two of each model; ops: one claude.
  for (const model of ['gpt-4o-mini', 'claude-3-5-haiku-20241022', 'my-llama-8b']) {
    for (let i = 0; i < 2; i++) await send(KEYS.alice, model);
  }
  await send(KEYS.ops, 'claude-3-5-haiku-20241022');
  attacker = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(attackerPage);
  });
  await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
});

afterAll(async () => {
  proxy.kill('SIGTERM');
  await upstream.close();
  await close(attacker);
});

/** The console with the admin key pasted, at a page. */
async function open(page: Page, fragment: string, key = KEYS.ops): Promise<void> {
  await page.goto(`${base}/console#${fragment}`);
  await page.getByLabel('Admin key').fill(key);
  await page.getByRole('button', { name: 'Open' }).click();
}

/** A table's body as the cells' text, row by row. */
async function rowsOf(page: Page, table: string): Promise<string[][]> {
  const rows = await page.locator(`[data-testid="${table}"] tbody tr`).all();
  return Promise.all(rows.map(async (row) => (await row.locator('td').allTextContents()).map((t) => t.trim())));
}

const legend = (page: Page) => page.locator('.u-legend .u-series:not(:first-child) .u-label').allTextContents();

describe('the proxy console (Chromium)', () => {
  it('answers a key that is not an admin key with its 403, and shows nothing else', async () => {
    const { page, errors } = await newPage(suite.browser);
    const reads: number[] = [];
    page.on('response', (res) => {
      if (res.url().includes('/internal/')) reads.push(res.status());
    });
    await open(page, 'spend', KEYS.alice);
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/admin key/i);
    expect(reads.every((status) => status === 403)).toBe(true);
    expect(await page.locator('table, nav, canvas').count()).toBe(0);
    // The key is forgotten: a reload asks again.
    await page.reload();
    expect(await page.getByLabel('Admin key').count()).toBe(1);
    expect(errors).toEqual([]);
  });

  it('Spend: the chart and totals of the requests sent; grouping and range change them; the CSV is the table', async () => {
    const { page, errors } = await newPage(suite.browser);
    await open(page, 'spend');
    const table = page.locator('[data-testid="spend-totals"] tbody tr');
    await expect.poll(() => table.count()).toBe(2);
    // By key, most spent first: alice 2 × (240 + 2440 + 320) millionths, ops 2440.
    expect(await rowsOf(page, 'spend-totals')).toEqual([
      ['alice', '6', '11,600', `$${(2 * (COST.openai + COST.anthropic + COST.llama)).toFixed(6)}`, '0'],
      ['ops', '1', '3,400', `$${COST.anthropic.toFixed(6)}`, '0'],
    ]);
    expect(await legend(page)).toEqual(['alice', 'ops']);
    expect(await page.locator('[data-testid="spend-chart"] canvas').count()).toBe(1);
    await screenshot(page, 'console-spend');

    await page.getByLabel('Stacked by').selectOption('model');
    await expect.poll(() => legend(page)).toEqual(['claude-3-5-haiku-20241022', 'my-llama-8b', 'gpt-4o-mini']);
    expect((await rowsOf(page, 'spend-totals')).map((row) => row[0])).toEqual([
      'claude-3-5-haiku-20241022',
      'my-llama-8b',
      'gpt-4o-mini',
    ]);

    // The CSV downloaded is the table shown.
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByText('Download CSV').click()]);
    const csv = readFileSync(await download.path(), 'utf8')
      .trim()
      .split('\n')
      .slice(1);
    const rows = await rowsOf(page, 'spend-totals');
    expect(csv[0]).toBe('model,requests,tokens,cost_usd,unpriced_requests');
    expect(csv.slice(1).map((line) => line.split(','))).toEqual(
      rows.map(([group, requests, tokens, cost, unpriced]) => [
        group,
        requests?.replaceAll(',', ''),
        tokens?.replaceAll(',', ''),
        String(Number(cost?.slice(1))),
        unpriced,
      ]),
    );

    // Day buckets over a range that ends before today: the chart and table empty, the query as asked.
    await page.getByLabel('Range').selectOption('custom');
    await page.getByLabel('From').fill('2026-01-01');
    await page.getByLabel('To').fill('2026-01-08');
    const day = page.waitForResponse((res) => res.url().includes('bucket=day'));
    await page.getByLabel('Buckets').selectOption('day');
    const response = await day;
    const asked = new URL(response.url());
    expect(asked.searchParams.get('by')).toBe('model');
    expect(asked.searchParams.get('from')).toBe('2026-01-01T00:00:00Z');
    expect(((await response.json()) as SpendResponse).buckets).toHaveLength(7);
    await expect.poll(() => table.count()).toBe(0);
    expect(await legend(page)).toEqual([]);
    expect(errors).toEqual([]);
  });

  it("Keys: each key's limits and budgets used this month, and a new key's YAML entry made in the page", async () => {
    const { page, errors } = await newPage(suite.browser);
    await open(page, 'keys');
    await expect.poll(() => page.locator('[data-testid="keys"] tbody tr').count()).toBe(2);
    const [ops, alice] = await rowsOf(page, 'keys');
    expect(ops?.[0]).toBe('opsadmin');
    expect(alice?.slice(0, 3)).toEqual(['alice', 'all', '600 rpm']);
    expect(alice?.[3]).toBe('11,600 of 100,000 / month');
    expect(alice?.[4]).toBe('$0.006000 of $0.010000 / month');
    expect(alice?.[7]).toMatch(/^\d{4}-\d\d-\d\d \d\d:00Z$/);
    await page.getByRole('button', { name: 'New key' }).click();
    const made = (await page.locator('[data-testid="new-key"] pre').allTextContents()) as [string, string];
    const digest = createHash('sha256').update(made[0]).digest('hex');
    expect(made[1]).toBe(`- name: NAME\n  key_sha256: ${digest}`);
    await screenshot(page, 'console-keys');
    expect(errors).toEqual([]);
  });

  it('Upstreams: state, requests and latency of the last hour', async () => {
    const { page, errors } = await newPage(suite.browser);
    await open(page, 'upstreams');
    await expect.poll(() => page.locator('[data-testid="upstreams"] tbody tr').count()).toBe(2);
    const rows = await rowsOf(page, 'upstreams');
    expect(rows.map((row) => row.slice(0, 4))).toEqual([
      ['oa openai', 'serving', '4', '0.0 %'],
      ['an anthropic', 'serving', '3', '0.0 %'],
    ]);
    expect(rows[0]?.[4]).toMatch(/^≤ [\d,]+ ms$/);
    await screenshot(page, 'console-upstreams');
    expect(errors).toEqual([]);
  });

  it('Live: the last requests with their tokens and cost, updated as new ones finish; no key in it', async () => {
    const { page, errors } = await newPage(suite.browser);
    await open(page, 'live');
    await expect.poll(() => page.locator('[data-testid="live"] tbody tr').count()).toBe(7);
    const [latest] = await rowsOf(page, 'live');
    expect(latest?.slice(1)).toEqual([
      'ops',
      'claude-3-5-haiku-20241022',
      'an',
      '200',
      '3100',
      '300',
      '$0.002440',
      latest?.[8],
    ]);
    await send(KEYS.alice, 'gpt-4o-mini');
    await expect.poll(() => page.locator('[data-testid="live"] tbody tr').count(), { timeout: 5_000 }).toBe(8);
    expect((await rowsOf(page, 'live'))[0]?.slice(1, 3)).toEqual(['alice', 'gpt-4o-mini']);
    const html = await page.content();
    for (const key of Object.values(KEYS)) expect(html).not.toContain(key);
    await screenshot(page, 'console-live');
    expect(errors).toEqual([]);
  });

  it('cannot be framed by another origin', async () => {
    const { page } = await newPage(suite.browser);
    const console: string[] = [];
    page.on('console', (message) => console.push(message.text()));
    attackerPage = `<!doctype html><iframe id="victim" src="${base}/console" width="900" height="600"></iframe>`;
    await page.goto(`http://localhost:${(attacker.address() as AddressInfo).port}/`);
    await expect.poll(() => console.some((line) => line.includes("frame-ancestors 'none'"))).toBe(true);
    expect(await page.frameLocator('#victim').getByLabel('Admin key').count()).toBe(0);
  });
});
