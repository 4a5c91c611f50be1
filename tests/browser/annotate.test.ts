// `gatehouse annotate FILE [--gate]`: any Markdown file in the plan review's annotation UI, in Chromium against the
// CLI a user runs: local without and with the gate, and submitted to a hub (`gatehouse hub`) with --hub.
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  annotateSelection,
  browserSuite,
  decisionOf,
  naturalWidth,
  newPage,
  screenshot,
  startReview,
  tempDir,
  unlabelledControls,
} from '../support/browser.ts';
import { lastLine, REVIEWER_TOKEN, spawnHub, startClient } from '../support/hub.ts';
import { PNG } from '../support/images.ts';

const SPEC = `# Storage layout

Every tenant gets its own bucket, named after the tenant id.

![layout](layout.png)

## Retention

Objects are kept for ninety days, then moved to cold storage.
`;

const suite = browserSuite();
let project: string;
let hub: ChildProcess | undefined;

beforeAll(() => {
  project = tempDir('gatehouse-annotate-');
  mkdirSync(path.join(project, 'docs'));
  writeFileSync(path.join(project, 'docs', 'spec.md'), SPEC);
  writeFileSync(path.join(project, 'docs', 'layout.png'), PNG);
});

afterAll(() => {
  hub?.kill('SIGTERM');
  rmSync(project, { recursive: true, force: true });
});

function comment(page: Page, text: string, body: string): Promise<void> {
  return annotateSelection(page, '.plan-doc', text, 'Comment', body);
}

describe('gatehouse annotate in the browser', () => {
  it('without --gate: annotates the file and returns the annotations as feedback, exit 0', async () => {
    const review = await startReview(['annotate', 'docs/spec.md'], { home: suite.home, cwd: project });
    const { page, errors } = await newPage(suite.browser);
    await page.goto(review.url);
    await page.locator('.plan-doc h1').waitFor();
    expect(await page.title()).toBe('Annotate: docs/spec.md');
    // The file's relative image is read beside the file.
    await expect.poll(() => naturalWidth(page.locator('.plan-doc img'))).toBe(1);
    expect(await page.getByRole('button', { name: 'Approve' }).count()).toBe(0);
    await comment(page, 'named after the tenant id', 'Tenant ids can be renamed: use the immutable key.');
    await page.getByRole('button', { name: 'Send annotations (1)' }).click();
    const dialog = page.getByRole('dialog');
    expect(await dialog.getByRole('textbox').inputValue()).toContain('# Review of docs/spec.md');
    await screenshot(page, 'annotate-send');
    expect(await unlabelledControls(page)).toEqual([]);
    await dialog.getByRole('button', { name: 'Send feedback' }).click();
    await page.getByRole('heading', { name: 'Annotations sent' }).waitFor();
    const { code, stdout } = await review.exited;
    expect(code).toBe(0);
    const decision = decisionOf(stdout);
    expect(decision['decision']).toBe('feedback');
    expect(decision['feedback']).toContain('> named after the tenant id');
    expect(decision['feedback']).toContain('Tenant ids can be renamed: use the immutable key.');
    expect(errors).toEqual([]);
  });

  it('with --gate: approves, with the annotations attached, exit 0', async () => {
    const review = await startReview(['annotate', 'docs/spec.md', '--gate'], { home: suite.home, cwd: project });
    const { page, errors } = await newPage(suite.browser);
    await page.goto(review.url);
    await page.locator('.plan-doc h1').waitFor();
    await page.getByRole('button', { name: /^Send feedback/ }).waitFor();
    await comment(page, 'ninety days', 'Legal asks for a year.');
    await screenshot(page, 'annotate-gate');
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.getByRole('heading', { name: 'Document approved' }).waitFor();
    const { code, stdout } = await review.exited;
    expect(code).toBe(0);
    expect(decisionOf(stdout)).toEqual({ decision: 'approved', feedback: expect.stringContaining('Legal asks') });
    expect(errors).toEqual([]);
  });

  it('with --hub and --gate: decided in the hub, denied with feedback; the client prints it and exits 2', async () => {
    const started = await spawnHub(suite.home, { HUB_DB_PATH: path.join(suite.home, 'annotate-hub.db') });
    hub = started.child;
    const base = started.base;
    const client = startClient(['annotate', 'docs/spec.md', '--gate'], { hub: base, cwd: project, home: suite.home });
    const url = await client.url;
    const { page, errors } = await newPage(suite.browser);
    await page.goto(base);
    await page.getByLabel('Reviewer token').fill(REVIEWER_TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    const pending = page.getByRole('table', { name: 'Pending reviews' });
    await pending.getByRole('link', { name: 'spec.md' }).waitFor();
    expect(await pending.locator('tbody tr').first().locator('td').nth(1).textContent()).toBe('annotate');
    await page.goto(url);
    await page.locator('.plan-doc h1').waitFor();
    await page.getByRole('button', { name: /^Send feedback/ }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('textbox').fill('Split the retention rules into their own note.');
    await dialog.getByRole('button', { name: 'Send feedback' }).click();
    await page.getByRole('heading', { name: 'Feedback sent' }).waitFor();
    const { code, stdout } = await client.exited;
    expect(code).toBe(2);
    expect(lastLine(stdout)).toEqual({
      decision: 'denied',
      feedback: 'Split the retention rules into their own note.',
    });
    expect(errors).toEqual([]);
  });
});
