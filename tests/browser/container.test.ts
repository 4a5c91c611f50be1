// The UI once against the container a user runs: the image's own built
// document, served on the mapped 19432, decided in Chromium.
import path from 'node:path';
import { GenericContainer } from 'testcontainers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IMAGE } from '../support/image.ts';
import { ROOT, launchBrowser, newPage, screenshot, selectText, type Browser } from '../support/browser.ts';
import { startReviewContainer, type ReviewContainer } from '../support/review-container.ts';

const PLAN = `# Migrate the job queue

## Steps
1. Drain the old queue
2. Switch producers to the new queue
3. Delete the old queue on Friday
`;

let browser: Browser;
let container: ReviewContainer | undefined;

beforeAll(async () => {
  // The browser project has no global setup: build the image as the black-box setup does (layers cached).
  await GenericContainer.fromDockerfile(path.resolve(ROOT)).withCache(true).build(IMAGE, { deleteOnExit: false });
  browser = await launchBrowser({ colorScheme: 'dark' });
});

afterAll(async () => {
  await container?.stop();
  await (browser as Browser | undefined)?.close();
});

describe('the review UI served by the container', () => {
  it('annotates and denies a plan; the decision on the container stdout carries the feedback', async () => {
    container = await startReviewContainer({
      command: ['plan', '/work/PLAN.md'],
      files: [{ content: PLAN, target: '/work/PLAN.md' }],
    });
    const { page, errors } = await newPage(browser);
    await page.goto(container.url);
    await page.locator('.plan-doc h1').waitFor();
    await selectText(page, '.plan-doc', 'Delete the old queue on Friday');
    await page.getByRole('button', { name: 'Comment', exact: true }).click();
    await page.locator('.popover textarea').fill('Wait a week after the switch.');
    await page.locator('.popover textarea').press('Control+Enter');
    await screenshot(page, 'container-plan-dark');
    await page.getByRole('button', { name: 'Send feedback (1)' }).click();
    await page.getByTestId('send-feedback').click();
    await page.getByTestId('done').waitFor();
    const { exitCode, stdout } = await container.finish();
    expect(exitCode).toBe(2);
    const decision = JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as Record<string, unknown>;
    expect(decision['decision']).toBe('denied');
    expect(decision['feedback']).toContain('> Delete the old queue on Friday\n\nWait a week after the switch.');
    expect(errors).toEqual([]);
  });
});
