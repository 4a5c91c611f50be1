// The hub's inbox and a plan's versions, in Chromium against a hub run as
// the CLI a user runs (`gatehouse hub`), with CLI clients submitting to it.
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserSuite, newPage, ROOT, screenshot } from '../support/browser.ts';
import { decide, freePort, lastLine, REVIEWER_TOKEN, startClient, SUBMIT_TOKEN, type Client } from '../support/hub.ts';

const suite = browserSuite();
let hub: ChildProcess;
let base: string;
const clients: Client[] = [];

beforeAll(async () => {
  const port = await freePort();
  base = `http://127.0.0.1:${port}/`;
  hub = spawn(process.execPath, [path.join(ROOT, 'src', 'cli.ts'), 'hub', '--port', String(port)], {
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: suite.home,
      HUB_SUBMIT_TOKENS: SUBMIT_TOKEN,
      HUB_REVIEWER_TOKENS: REVIEWER_TOKEN,
      GATEHOUSE_PLAN_DIR: path.join(suite.home, 'plans'),
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  await new Promise<void>((resolve, reject) => {
    let err = '';
    hub.stderr?.on('data', (d: Buffer) => {
      err += d.toString();
      if (err.includes('Review hub: ')) resolve();
    });
    hub.once('exit', (code) => reject(new Error(`the hub exited (${code}):\n${err}`)));
  });
});

afterAll(() => {
  for (const c of clients) c.child.kill('SIGTERM');
  (hub as ChildProcess | undefined)?.kill('SIGTERM');
});

const V1 = `# Rotate the signing keys

## Steps

1. Generate a new key pair
2. Deploy it everywhere at once

## Rollback

Keep the old key for a day.
`;

const V2 = `# Rotate the signing keys

## Steps

1. Generate a new key pair
2. Deploy it to staging, then to one region
3. Deploy it everywhere

## Rollback

Keep the old key for a day.
`;

async function submit(name: string, plan: string, session: string): Promise<Client> {
  const file = path.join(suite.home, name);
  await writeFile(file, plan);
  const client = startClient(['plan', file, '--session', session], { hub: base, cwd: suite.home, home: suite.home });
  clients.push(client);
  return client;
}

describe('the hub in Chromium', () => {
  it('signs in, lists a new review live, shows version 2 with the diff and the feedback v1 got', async () => {
    const { page, errors } = await newPage(suite.browser);
    await page.goto(base);
    await page.getByLabel('Reviewer token').fill('wrong token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toBe('Unknown token');
    await page.getByLabel('Reviewer token').fill(REVIEWER_TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    const pending = page.getByRole('table', { name: 'Pending reviews' });
    await pending.waitFor();

    // The inbox is open before the plan arrives: it shows up without a reload.
    const v1 = await submit('v1.md', V1, 'session-keys');
    const v1Url = await v1.url;
    await pending.getByRole('link', { name: 'Rotate the signing keys' }).waitFor();
    expect(await pending.locator('tbody tr').first().locator('td').allTextContents()).toEqual([
      'Rotate the signing keys',
      'plan',
      'claude-code',
      path.basename(suite.home),
      expect.any(String),
      'v1',
    ]);
    const v1Id = /\/r\/([^/]+)\//.exec(v1Url)?.[1];
    expect(await decide(base, v1Id, 'deny', { feedback: 'Never deploy **everywhere at once**: stage it.' })).toBe(200);
    expect((await v1.exited).code).toBe(2);
    await page.getByRole('table', { name: 'Recent decisions' }).getByText('denied').waitFor();

    const v2 = await submit('v2.md', V2, 'session-keys');
    const v2Url = await v2.url;
    await pending.getByText('v2').waitFor();
    const links = () => pending.locator('tbody tr').first().getByRole('link').allTextContents();
    await expect.poll(links).toEqual(['Rotate the signing keys', 'v1 (denied)']);

    await pending.getByRole('link', { name: 'Rotate the signing keys' }).click();
    expect(page.url()).toBe(v2Url);
    const changes = page.getByRole('region', { name: 'Changes since version 1' });
    await changes.waitFor();
    const feedback = changes.getByRole('note', { name: 'Feedback on version 1' });
    expect(await feedback.locator('strong').textContent()).toBe('everywhere at once');
    const removed = await changes.locator('del.md-removed li').allTextContents();
    expect(removed).toEqual(['Generate a new key pair', 'Deploy it everywhere at once']);
    const added = await changes.locator('ins.md-added li').allTextContents();
    const steps = ['Generate a new key pair', 'Deploy it to staging, then to one region', 'Deploy it everywhere'];
    expect(added).toEqual(steps);
    expect(await changes.locator('.md-same h2').allTextContents()).toEqual(['Steps', 'Rollback']);
    await screenshot(page, 'hub-plan-version-2');

    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    await page.getByTestId('done').waitFor();
    const done = await v2.exited;
    expect(done.code).toBe(0);
    expect(lastLine(done.stdout)).toMatchObject({ decision: 'approved' });
    expect(errors).toEqual([]);
  });
});
