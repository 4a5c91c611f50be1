import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  browserSuite,
  type Attributed,
  decisionOf,
  openCodeReview,
  screenshot,
  unlabelledControls,
} from '../support/browser.ts';
import { closedPort } from '../support/proxy-container.ts';
import { TempRepo } from '../support/git-repo.ts';

const BEFORE = `export class RateLimiter {
  private buckets = new Map<string, number>();

  constructor(private readonly rate: number) {}

  take(key: string): boolean {
    const left = this.buckets.get(key) ?? this.rate;
    if (left <= 0) return false;
    this.buckets.set(key, left - 1);
    return true;
  }
}
`;

const AFTER = `export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(private readonly rate: number, private readonly now = Date.now) {}

  take(key: string): boolean {
    const bucket = this.buckets.get(key) ?? { tokens: this.rate, at: this.now() };
    this.refill(bucket);
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    this.buckets.set(key, bucket);
    return true;
  }

  private refill(bucket: { tokens: number; at: number }): void {
    const elapsed = this.now() - bucket.at;
    bucket.tokens = Math.min(this.rate, bucket.tokens + (elapsed / 60_000) * this.rate);
    bucket.at = this.now();
  }
}
`;

const suite = browserSuite();
let repo: TempRepo;

beforeAll(() => {
  repo = TempRepo.init();
  repo
    .write('src/lib/limiter.ts', BEFORE)
    .write('app.py', 'def main():\n    print("hi")\n')
    .write('README.md', '# Readme\n')
    .commitAll('init');
  repo
    .write('src/lib/limiter.ts', AFTER)
    .write('app.py', 'import sys\n\ndef main():\n    print("hello", sys.argv)\n')
    .write('docs/new.md', 'new file\n');
  repo.git('add', 'docs/new.md');
});

afterAll(() => (repo as TempRepo | undefined)?.cleanup());

const codeReview = (args: string[] = []) => openCodeReview(suite, repo.dir, args);

function lineButton(page: Page, file: string, side: 'old' | 'new', line: number) {
  return page.getByRole('button', { name: `Comment on ${side} line ${line} of ${file}`, exact: true });
}

describe('code review in the browser', () => {
  it('shows the diff with a file tree and counts, comments on the new side, suggests on the old side, and sends both', async () => {
    const { review, page, errors } = await codeReview();
    const tree = page.getByRole('tree', { name: 'Changed files' });
    expect(await tree.getByRole('treeitem').allInnerTexts()).toEqual(
      expect.arrayContaining([expect.stringMatching(/limiter\.ts\s*\+13\s*−5/)]),
    );
    expect(await page.locator('.files .side-title').textContent()).toContain('3 files');
    expect(await page.locator('.dl .hljs-keyword').count()).toBeGreaterThan(0);
    await screenshot(page, 'code-review');
    await page.getByRole('button', { name: /^Theme/ }).click();
    await page.getByRole('button', { name: /^Theme/ }).click();
    await expect.poll(() => page.getByRole('button', { name: /^Theme/ }).getAttribute('title')).toBe('Theme: dark');
    await screenshot(page, 'code-review-dark');
    await page.getByRole('button', { name: /^Theme/ }).click();

    // A comment on one line of the new version.
    await tree.getByRole('button', { name: 'limiter.ts' }).click();
    await lineButton(page, 'src/lib/limiter.ts', 'new', 8).click();
    const form = page.getByRole('form', { name: 'Comment on lines' });
    await form.getByRole('textbox', { name: 'Comment' }).fill('Refill before the lookup is stored?');
    await screenshot(page, 'code-comment-form');
    expect(await unlabelledControls(page)).toEqual([]);
    await form.getByRole('textbox', { name: 'Comment' }).press('Control+Enter');
    await expect.poll(() => page.getByTestId('code-note').count()).toBe(1);

    // A suggestion over a range of the old version: click, then shift+click.
    await lineButton(page, 'src/lib/limiter.ts', 'old', 7).click();
    await lineButton(page, 'src/lib/limiter.ts', 'old', 9).click({ modifiers: ['Shift'] });
    // The selected range is marked on its side only.
    expect(await page.locator('.dl .ln.sel').allTextContents()).toEqual(['7', '8', '9']);
    expect(await page.locator('.dl .code.sel').count()).toBe(3);
    await form.getByRole('radio', { name: 'Suggestion' }).click();
    const code = form.getByRole('textbox', { name: 'Suggested code' });
    // Prefilled with the selected old lines.
    expect(await code.inputValue()).toBe(BEFORE.split('\n').slice(6, 9).join('\n'));
    await code.fill(
      '    const left = this.buckets.get(key) ?? this.rate;\n    return left > 0 && this.buckets.set(key, left - 1) !== undefined;',
    );
    await form.getByRole('textbox', { name: 'Comment' }).fill('Smaller change instead:');
    await form.getByRole('button', { name: 'Add' }).click();
    await expect.poll(() => page.getByTestId('code-note').count()).toBe(2);
    await screenshot(page, 'code-annotations');

    await page.getByRole('button', { name: 'Send feedback (2)' }).click();
    const dialog = page.getByRole('dialog', { name: 'Send review feedback' });
    const text = await dialog.locator('textarea').inputValue();
    expect(text).toContain('### 1. Suggestion: `src/lib/limiter.ts` lines 7-9 (old version, before the change)');
    expect(text).toContain('```ts\n    this.refill(bucket);\n```\n\nRefill before the lookup is stored?');
    await screenshot(page, 'code-feedback');
    await dialog.getByTestId('send-feedback').click();
    await page.getByTestId('done').waitFor();
    await screenshot(page, 'code-done');

    const { code: exit, stdout } = await review.exited;
    expect(exit).toBe(0);
    const decision = decisionOf(stdout);
    expect(decision['feedback']).toBe(text);
    const annotations = decision['annotations'] as Record<string, unknown>[];
    expect(annotations).toEqual([
      {
        id: expect.any(String),
        type: 'suggestion',
        filePath: 'src/lib/limiter.ts',
        lineStart: 7,
        lineEnd: 9,
        side: 'old',
        text: 'Smaller change instead:',
        suggestedCode:
          '    const left = this.buckets.get(key) ?? this.rate;\n    return left > 0 && this.buckets.set(key, left - 1) !== undefined;',
      },
      {
        id: expect.any(String),
        type: 'comment',
        filePath: 'src/lib/limiter.ts',
        lineStart: 8,
        lineEnd: 8,
        side: 'new',
        text: 'Refill before the lookup is stored?',
      },
    ]);
    expect(new Set(annotations.map((a) => a['id'])).size).toBe(2);
    expect(errors).toEqual([]);
  });

  it('switches the diff type through the server, and shows an empty diff plainly', async () => {
    const { review, page, errors } = await codeReview();
    const switcher = page.getByRole('combobox', { name: 'Diff type' });
    expect(await switcher.inputValue()).toBe('uncommitted');
    const options = await switcher
      .locator('option')
      .evaluateAll((os: Attributed[]) => os.map((o) => o.getAttribute('value')));
    expect(options).toEqual(['uncommitted', 'last-commit', 'branch']);

    await switcher.selectOption('last-commit');
    // The root commit, against the empty tree: the three files it added.
    await expect.poll(() => page.locator('.chip.mono').textContent()).toContain('HEAD~1..HEAD');
    expect(await page.locator('.file-head .path').allTextContents()).toEqual([
      'README.md',
      'app.py',
      'src/lib/limiter.ts',
    ]);
    expect(await page.locator('.file-head .status').allTextContents()).toEqual(['Added', 'Added', 'Added']);
    await screenshot(page, 'code-last-commit');

    await switcher.selectOption('branch');
    await page.getByRole('heading', { name: 'No changes' }).waitFor();
    await screenshot(page, 'code-empty');
    await switcher.selectOption('uncommitted');
    await expect.poll(() => page.locator('.file-head .path').count()).toBe(3);

    // No comments: Approve sends the approval word.
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.getByTestId('done').waitFor();
    const { stdout } = await review.exited;
    expect(decisionOf(stdout)).toMatchObject({ feedback: 'LGTM', annotations: [] });
    expect(errors).toEqual([]);
  });

  it('comments in the split view by keyboard and asks before an approval drops comments', async () => {
    // Settings live per origin: both reviews on one port, as a fixed SERVICE_PORT would have them.
    const port = String(await closedPort());
    const { review, page, errors } = await codeReview(['--port', port]);
    await page.getByRole('button', { name: 'Split', exact: true }).click();
    await page.locator('.dl.split').first().waitFor();
    await screenshot(page, 'code-split');
    const line = lineButton(page, 'app.py', 'old', 2);
    await line.focus();
    await page.keyboard.press('Enter');
    const form = page.getByRole('form', { name: 'Comment on lines' });
    await form.getByRole('radio', { name: 'Concern' }).click();
    await form.getByRole('textbox', { name: 'Comment' }).fill('The greeting changed: is anything parsing it?');
    await form.getByRole('button', { name: 'Add' }).click();
    await expect.poll(() => page.getByTestId('code-note').count()).toBe(1);
    // Dragging over line numbers takes a range; Escape drops the form.
    const from = await lineButton(page, 'app.py', 'new', 1).boundingBox();
    const to = await lineButton(page, 'app.py', 'new', 3).boundingBox();
    if (from === null || to === null) throw new Error('line numbers not on screen');
    await page.mouse.move(from.x + 5, from.y + 5);
    await page.mouse.down();
    await page.mouse.move(to.x + 5, to.y + 5, { steps: 4 });
    await page.mouse.up();
    expect(await form.textContent()).toContain('new L1–3');
    await form.getByRole('textbox', { name: 'Comment' }).press('Escape');
    await expect.poll(() => form.count()).toBe(0);
    await page.getByRole('button', { name: 'Approve' }).click();
    const confirm = page.getByRole('dialog', { name: 'Approve without your comments?' });
    await screenshot(page, 'code-confirm-approve');
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    await page.keyboard.press('Control+Enter');
    const dialog = page.getByRole('dialog', { name: 'Send review feedback' });
    await dialog.locator('textarea').press('Control+Enter');
    const { stdout } = await review.exited;
    expect(decisionOf(stdout)['annotations']).toEqual([
      {
        id: expect.any(String),
        type: 'concern',
        filePath: 'app.py',
        lineStart: 2,
        lineEnd: 2,
        side: 'old',
        text: 'The greeting changed: is anything parsing it?',
      },
    ]);
    // The layout choice is a setting: it stays for the next review.
    const again = await codeReview(['--port', port]);
    await again.page.locator('.dl.split').first().waitFor();
    again.review.stop();
    await again.review.exited;
    expect(errors.concat(again.errors)).toEqual([]);
  });
});
