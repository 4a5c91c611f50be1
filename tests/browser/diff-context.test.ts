import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserSuite, type Scrollable, decisionOf, openCodeReview, screenshot } from '../support/browser.ts';
import { TempRepo } from '../support/git-repo.ts';

/**
 * A reviewer widening the context of a diff ("show more lines" above, between
 * and below hunks, read from the repository through the server) and seeing
 * which words of a changed line changed.
 */

const FILE = 'src/big.ts';
const line = (i: number) => `export const v${i} = compute(${i}, "old");`;
const BEFORE = Array.from({ length: 120 }, (_, i) => `${line(i + 1)}\n`).join('');
// Two lines inserted after line 40 (new side numbers run 2 ahead from there), and line 90 edited.
const AFTER = BEFORE.split('\n')
  .flatMap((text, i) =>
    i === 39
      ? [text, '// added one', '// added two']
      : i === 89
        ? ['export const v90 = compute(90, "new", options);']
        : [text],
  )
  .join('\n');

const suite = browserSuite();
let repo: TempRepo;

beforeAll(() => {
  repo = TempRepo.init();
  repo.write(FILE, BEFORE).commitAll('init');
  repo.write(FILE, AFTER);
});

afterAll(() => (repo as TempRepo | undefined)?.cleanup());

const lineButton = (page: Page, side: 'old' | 'new', no: number) =>
  page.getByRole('button', { name: `Comment on ${side} line ${no} of ${FILE}`, exact: true });
const shown = (page: Page, side: 'old' | 'new', no: number) => lineButton(page, side, no).count();
/** Scrolls the virtual diff list: only rows near its viewport are in the page. */
const scrollDiff = (page: Page, to: 'top' | 'bottom') =>
  page
    .getByRole('region', { name: 'Diff' })
    .evaluate((el: Scrollable, end) => el.scrollTo({ top: end === 'top' ? 0 : el.scrollHeight }), to);

/** The hunk headers, read from the top of the diff list, without git's function names. */
async function headers(page: Page): Promise<string[]> {
  await scrollDiff(page, 'top');
  return (await page.locator('.hunk-head').allTextContents()).map((h) => h.replace(/ @@ .*/, ' @@'));
}

const open = () => openCodeReview(suite, repo.dir);

describe('more context and changed words in the code review', () => {
  it('shows more lines above, between and below the hunks, numbered on both sides, until the hunks join', async () => {
    const { review, page, errors } = await open();
    await expect.poll(() => headers(page)).toEqual(['@@ -38,6 +38,8 @@', '@@ -87,7 +89,7 @@']);
    expect(await page.locator('.hunk-head').first().textContent()).toBe(`@@ -38,6 +38,8 @@ ${line(37)}`);
    expect(await shown(page, 'new', 37)).toBe(0);

    // Above the first hunk: 20 lines, then the last 17 in one go.
    await page.getByRole('button', { name: 'Show 20 more lines above line 38' }).click();
    await expect.poll(() => shown(page, 'new', 18)).toBe(1);
    expect(await shown(page, 'new', 17)).toBe(0);
    expect(await page.locator('.dl', { has: lineButton(page, 'new', 18) }).textContent()).toContain(line(18));
    await page.getByRole('button', { name: 'Show 17 hidden lines above line 18' }).click();
    await expect.poll(() => shown(page, 'new', 1)).toBe(1);
    await expect.poll(() => headers(page)).toEqual(['@@ -1,43 +1,45 @@', '@@ -87,7 +89,7 @@']);

    // Between the hunks, below the first one: old and new numbers differ by the two inserted lines.
    await page.getByRole('button', { name: 'Show 20 more lines below line 45' }).click();
    await expect.poll(() => shown(page, 'new', 65)).toBe(1);
    const row = page.locator('.dl', { has: lineButton(page, 'new', 60) });
    expect(await row.locator('[data-side="old"]').textContent()).toBe('58');
    expect(await row.textContent()).toContain(line(58));
    // …then above the second one, which closes the gap: one hunk.
    await page.getByRole('button', { name: 'Show 20 more lines above line 89' }).click();
    await expect.poll(() => shown(page, 'new', 88)).toBe(1);
    await page
      .getByRole('button', { name: /^Show \d+ hidden lines? (above|below) line/ })
      .first()
      .click();
    await expect.poll(() => headers(page)).toEqual(['@@ -1,93 +1,95 @@']);

    // Below the last hunk: up to the end of the file, whose length the server tells.
    await scrollDiff(page, 'bottom');
    await page.getByRole('button', { name: 'Show 20 more lines below line 95' }).click();
    await expect.poll(() => shown(page, 'new', 115)).toBe(1);
    await scrollDiff(page, 'bottom');
    await page.getByRole('button', { name: 'Show 7 hidden lines below line 115' }).click();
    await expect.poll(() => shown(page, 'new', 122)).toBe(1);
    expect(await page.getByTestId('expand').count()).toBe(0);
    await expect.poll(() => headers(page)).toEqual(['@@ -1,120 +1,122 @@']);
    await screenshot(page, 'code-review-context');

    // A revealed line takes comments like any other.
    await lineButton(page, 'new', 10).click();
    const comment = page.getByRole('textbox', { name: 'Comment', exact: true });
    await comment.fill('Why compute here?');
    await comment.press('Control+Enter');
    await expect.poll(() => page.getByTestId('code-note').count()).toBe(1);
    await page.getByRole('button', { name: 'Send feedback (1)' }).click();
    const dialog = page.getByRole('dialog', { name: 'Send review feedback' });
    // The feedback quotes the revealed line, as it does a line of a hunk.
    expect(await dialog.locator('textarea').inputValue()).toContain(line(10));
    await dialog.getByTestId('send-feedback').click();
    const { code, stdout } = await review.exited;
    expect(code).toBe(0);
    expect(decisionOf(stdout)['annotations']).toMatchObject([
      { filePath: FILE, side: 'new', lineStart: 10, lineEnd: 10, text: 'Why compute here?' },
    ]);
    expect(errors).toEqual([]);
  });

  it('marks the changed words of a changed line, in the unified and the split view', async () => {
    const { review, page, errors } = await open();
    const marks = (kind: string) => page.locator(`.code.${kind} mark.wd`).allTextContents();
    for (const layout of ['Unified', 'Split']) {
      await page.getByRole('group', { name: 'Diff layout' }).getByRole('button', { name: layout }).click();
      await expect.poll(() => marks('del')).toEqual(['old']);
      expect(await marks('add')).toEqual(['new', ', options']);
      // Whole added lines with no partner have no marks.
      expect(await page.locator('.code.add', { hasText: 'added one' }).locator('mark').count()).toBe(0);
    }
    await screenshot(page, 'code-review-words');
    review.stop();
    expect(errors).toEqual([]);
  });
});
