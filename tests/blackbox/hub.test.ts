import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, newPage, type Browser } from '../support/browser.ts';
import { decide, hubCall, lastLine, REVIEWER_TOKEN, startClient, startHub } from '../support/hub.ts';
import type { Client, HubContainer } from '../support/hub.ts';

let dir: string;
const hubs: HubContainer[] = [];
const clients: Client[] = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'gatehouse-hub-'));
});
afterEach(async () => {
  for (const c of clients.splice(0)) c.child.kill('SIGTERM');
  await Promise.all(hubs.splice(0).map((h) => h.stop()));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function hub(options: Parameters<typeof startHub>[0] = {}) {
  const h = await startHub(options);
  hubs.push(h);
  return h;
}

/** `count` plan clients, plan i titled `Plan <i>`, each waiting on the hub. */
async function planClients(h: HubContainer, count: number, label: string): Promise<Client[]> {
  const started: Client[] = [];
  for (let i = 0; i < count; i++) {
    const file = path.join(dir, `${label}-${i}.md`);
    await writeFile(file, `# ${label} ${i}\n\n1. Step one of ${i}\n`);
    const client = startClient(['plan', file], { hub: h.url, cwd: dir, home: dir });
    clients.push(client);
    started.push(client);
  }
  return started;
}

/** The pending reviews by title, once `count` of them are there. */
async function pendingByTitle(h: HubContainer, count: number): Promise<Map<string, { id: string; url: string }>> {
  let pending: { id: string; url: string; title: string }[] = [];
  await expect
    .poll(
      async () => {
        pending = (await hubCall(h.url, 'GET', 'api/reviews')).body['pending'] as typeof pending;
        return pending.length;
      },
      { timeout: 90_000, interval: 500 },
    )
    .toBe(count);
  return new Map(pending.map((r) => [r.title, r]));
}

function shuffled<T>(items: T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
  }
  return copy;
}

async function signIn(browser: Browser, base: string) {
  const { page, errors } = await newPage(browser);
  await page.goto(base);
  await page.getByLabel('Reviewer token').fill(REVIEWER_TOKEN);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('table', { name: 'Pending reviews' }).waitFor();
  return { page, errors };
}

describe('the review hub in a container', () => {
  const slow = { timeout: 300_000 };

  it('holds 50 reviews from 50 CLI clients; each gets its own decision, 3 made in Chromium', slow, async () => {
    const h = await hub();
    const started = await planClients(h, 50, 'Plan');
    const urls = await Promise.all(started.map((c) => c.url));
    expect(new Set(urls).size).toBe(50);
    const byTitle = await pendingByTitle(h, 50);

    const order = shuffled([...Array(50).keys()]);
    const inBrowser = order.slice(0, 3);
    const expected = new Map<number, { decision: string; feedback: string | null; code: number }>();
    for (const i of order.slice(3)) {
      const review = byTitle.get(`Plan ${i}`);
      if (i % 2 === 0) {
        expect(await decide(h.url, review?.id, 'approve')).toBe(200);
        expected.set(i, { decision: 'approved', feedback: null, code: 0 });
      } else {
        expect(await decide(h.url, review?.id, 'deny', { feedback: `Not plan ${i}` })).toBe(200);
        expected.set(i, { decision: 'denied', feedback: `Not plan ${i}`, code: 2 });
      }
    }

    const browser = await launchBrowser();
    try {
      const { page, errors } = await signIn(browser, h.url);
      for (const i of inBrowser) {
        await page.goto(h.url);
        await page.getByRole('link', { name: `Plan ${i}`, exact: true }).click();
        await page.locator('.plan-doc h1', { hasText: `Plan ${i}` }).waitFor();
        await page.getByRole('button', { name: 'Approve', exact: true }).click();
        await page.getByTestId('done').waitFor();
        expected.set(i, { decision: 'approved', feedback: null, code: 0 });
      }
      expect(errors).toEqual([]);
    } finally {
      await browser.close();
    }

    const results = await Promise.all(started.map((c) => c.exited));
    results.forEach((result, i) => {
      const want = expected.get(i);
      expect(result.code, `client ${i}: ${result.stderr}`).toBe(want?.code);
      expect(lastLine(result.stdout)).toMatchObject({ decision: want?.decision, feedback: want?.feedback });
      expect(result.stdout.trim().split('\n')).toHaveLength(1);
    });
    expect(((await hubCall(h.url, 'GET', 'api/reviews')).body['pending'] as unknown[]).length).toBe(0);
  });

  it('keeps 10 waiting reviews and a decision made just before `docker kill` for their clients', slow, async () => {
    const h = await hub();
    const started = await planClients(h, 10, 'Kill');
    await Promise.all(started.map((c) => c.url));
    const byTitle = await pendingByTitle(h, 10);

    // Decided, then the hub killed at once: the decision was committed before its 200.
    const first = byTitle.get('Kill 0');
    expect(await decide(h.url, first?.id, 'deny', { feedback: 'Decided before the kill' })).toBe(200);
    await h.killAndStart();

    const after = await pendingByTitle(h, 9);
    expect([...after.keys()].sort()).toEqual([...Array(9).keys()].map((i) => `Kill ${i + 1}`).sort());
    const kept = (await hubCall(h.url, 'GET', `api/reviews/${first?.id}/decision`)).body;
    expect(kept).toMatchObject({ decision: 'denied', feedback: 'Decided before the kill' });
    for (let i = 1; i < 10; i++) {
      expect(await decide(h.url, after.get(`Kill ${i}`)?.id, 'approve', { feedback: `after ${i}` })).toBe(200);
    }
    const results = await Promise.all(started.map((c) => c.exited));
    expect(results[0]?.code).toBe(2);
    expect(lastLine(results[0]?.stdout ?? '')).toMatchObject(kept);
    for (let i = 1; i < 10; i++) {
      expect(results[i]?.code, results[i]?.stderr).toBe(0);
      expect(lastLine(results[i]?.stdout ?? '')).toMatchObject({ decision: 'approved', feedback: `after ${i}` });
    }
  });
});
