// The hub's inbox (live, filtered, counted in the title) and a plan's versions, in Chromium against a hub run as
// the CLI a user runs (`gatehouse hub`), with CLI clients submitting to it.
import type { ChildProcess } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserSuite, newPage, screenshot, unlabelledControls } from '../support/browser.ts';
import { decide, lastLine, REVIEWER_TOKEN, spawnHub, startClient, SUBMIT_TOKEN, type Client } from '../support/hub.ts';

const suite = browserSuite();
/** A second, named submitter token: its reviews show `billing-ci`. */
const BILLING_TOKEN = 'billing-token-0123456789abcdef';
let hub: ChildProcess;
let base: string;
const clients: Client[] = [];

beforeAll(async () => {
  ({ child: hub, base } = await spawnHub(suite.home, {
    HUB_SUBMIT_TOKENS: `${SUBMIT_TOKEN},billing-ci:${BILLING_TOKEN}`,
    GATEHOUSE_PLAN_DIR: path.join(suite.home, 'plans'),
  }));
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

const CACHE = `# Add a read-through cache

1. Put Redis in front of the billing reads
`;

const V2 = `# Rotate the signing keys

## Steps

1. Generate a new key pair
2. Deploy it to staging, then to one region
3. Deploy it everywhere

## Rollback

Keep the old key for a day.
`;

async function submit(
  name: string,
  plan: string,
  session: string,
  more: { cwd?: string; args?: string[]; token?: string } = {},
) {
  const file = path.join(suite.home, name);
  await writeFile(file, plan);
  const args = ['plan', file, '--session', session, ...(more.args ?? [])];
  const client = startClient(args, { hub: base, cwd: more.cwd ?? suite.home, home: suite.home, token: more.token });
  clients.push(client);
  return client;
}

const idOf = (url: string) => /\/r\/([^/]+)\//.exec(url)?.[1];

describe('the hub in Chromium', () => {
  it('signs in; the inbox lists new reviews live, counts them in the title, filters; a review links back', async () => {
    const { page, errors } = await newPage(suite.browser);
    await page.goto(base);
    expect(await page.title()).toBe('Review hub: sign in');
    await page.getByLabel('Reviewer token').fill('wrong token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toBe('Unknown token');
    await page.getByLabel('Reviewer token').fill(REVIEWER_TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    const pending = page.getByRole('table', { name: 'Pending reviews' });
    await pending.waitFor();
    await page.getByText('Nothing is waiting for a review.').waitFor();
    expect(await page.title()).toBe('Review hub');

    // The inbox is open before the plans arrive: they show up without a reload, and the title counts them.
    const v1 = await submit('v1.md', V1, 'session-keys');
    const v1Url = await v1.url;
    await pending.getByRole('link', { name: 'Rotate the signing keys' }).waitFor();
    expect(await pending.locator('tbody tr').first().locator('td').allTextContents()).toEqual([
      'Rotate the signing keys',
      'plan',
      'Claude Code',
      path.basename(suite.home),
      // Submitted by: the client's token is unnamed, so it is its own submitter, shown by a digest.
      expect.stringMatching(/^token-[0-9a-f]{8}$/),
      'just now',
      'v1',
    ]);
    await expect.poll(() => page.title()).toBe('(1) Review hub');
    const other = path.join(suite.home, 'billing-service');
    await mkdir(other);
    const cache = await submit('cache.md', CACHE, 'session-cache', {
      cwd: other,
      args: ['--origin', 'opencode'],
      token: BILLING_TOKEN,
    });
    await cache.url;
    await pending.getByRole('link', { name: 'Add a read-through cache' }).waitFor();
    await expect.poll(() => page.title()).toBe('(2) Review hub');
    const titles = () => page.locator('a.inbox-title').allTextContents();
    expect(await titles()).toEqual(['Rotate the signing keys', 'Add a read-through cache']);

    // Filters: by agent, by project, by status; kept in the address, so a reload keeps them.
    await page.getByLabel('Agent').selectOption({ label: 'OpenCode' });
    await expect.poll(titles).toEqual(['Add a read-through cache']);
    expect(new URL(page.url()).search).toBe('?agent=opencode');
    await page.getByLabel('Agent').selectOption({ label: 'All agents' });
    await page.getByLabel('Project').selectOption(path.basename(suite.home));
    await expect.poll(titles).toEqual(['Rotate the signing keys']);
    await page.reload();
    await expect.poll(titles).toEqual(['Rotate the signing keys']);
    expect(await page.getByLabel('Project').inputValue()).toBe(path.basename(suite.home));
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await page.getByLabel('Submitter').selectOption('billing-ci');
    await expect.poll(titles).toEqual(['Add a read-through cache']);
    expect(new URL(page.url()).search).toBe('?submitter=billing-ci');
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await expect.poll(titles).toHaveLength(2);

    expect(
      await decide(base, idOf(v1Url), 'deny', { feedback: 'Never deploy **everywhere at once**: stage it.' }),
    ).toBe(200);
    expect((await v1.exited).code).toBe(2);
    const decided = page.getByRole('table', { name: 'Recent decisions' });
    await decided.getByText('denied').waitFor();
    await expect.poll(() => page.title()).toBe('(1) Review hub');
    await page.getByRole('radio', { name: 'Decided' }).click();
    await expect.poll(() => pending.count()).toBe(0);
    expect(await decided.locator('tbody tr').first().locator('td').first().textContent()).toBe(
      'Rotate the signing keys',
    );
    await page.getByRole('radio', { name: 'Pending' }).click();
    await expect.poll(() => decided.count()).toBe(0);
    await page.getByRole('radio', { name: 'All' }).click();

    const v2 = await submit('v2.md', V2, 'session-keys');
    const v2Url = await v2.url;
    await pending.getByText('v2').waitFor();
    const row = pending.locator('tr', { hasText: 'v2' });
    await expect
      .poll(() => row.getByRole('link').allTextContents())
      .toEqual(['Rotate the signing keys', 'v1 (denied)']);
    await expect.poll(() => page.title()).toBe('(2) Review hub');
    await screenshot(page, 'hub-inbox');

    await row.getByRole('link', { name: 'Rotate the signing keys' }).click();
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

    // From the review, back to the inbox, and to the review again.
    await page.getByRole('link', { name: '← Inbox' }).click();
    await pending.waitFor();
    expect(page.url()).toBe(base);
    await pending.getByRole('link', { name: 'Rotate the signing keys' }).click();
    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    await page.getByTestId('done').waitFor();
    const done = await v2.exited;
    expect(done.code).toBe(0);
    expect(lastLine(done.stdout)).toMatchObject({ decision: 'approved' });
    await page.getByRole('link', { name: 'Back to the inbox' }).click();
    await decided.waitFor();
    await expect.poll(() => page.title()).toBe('(1) Review hub');
    expect(await unlabelledControls(page)).toEqual([]);

    // Signing out ends the session on the hub: the inbox asks for a token again.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Reviewer token').waitFor();
    expect(errors).toEqual([]);
  });
});
