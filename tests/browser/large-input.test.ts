// Large input stays usable: a 5,000-line plan and a 50,000-line diff render,
// keep a bounded DOM where it matters, and take annotations at their far end.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  ROOT,
  browserSuite,
  type Scrollable,
  decisionOf,
  newPage,
  screenshot,
  selectText,
  startReview,
  tempDir,
} from '../support/browser.ts';
import { TempRepo } from '../support/git-repo.ts';

const suite = browserSuite();

function largePlan(): string {
  const lines = ['# Large plan'];
  for (let s = 1; lines.length < 5_000; s++) {
    lines.push(
      '',
      `## Section ${s}`,
      '',
      `Paragraph of section ${s} with \`code ${s}\` and **bold ${s}**.`,
      '',
      `- item ${s}.1`,
      `- item ${s}.2`,
      '',
      '```ts',
      `const v${s} = ${s};`,
      '```',
    );
  }
  lines.push('', '## The end', '', 'The very last sentence of the plan.');
  return lines.join('\n') + '\n';
}

describe('the built document', () => {
  it('is one self-contained file within the 400 KB gzipped budget', () => {
    const html = readFileSync(path.join(ROOT, 'dist', 'web', 'index.html'), 'utf8');
    expect(gzipSync(html).length).toBeLessThanOrEqual(400 * 1024);
    // Nothing loaded from elsewhere: scripts and styles are inline, the icon a data: URI.
    expect(html).not.toMatch(/<script[^>]+src=|<link[^>]+rel="?stylesheet/i);
    expect(
      [...html.matchAll(/<link[^>]+href="([^"]+)"/gi)].map((m) => m[1]).filter((href) => !href?.startsWith('data:')),
    ).toEqual([]);
  });
});

describe('large input', () => {
  it('renders a 5,000-line plan in full and anchors an annotation at its end', async () => {
    const project = tempDir('gatehouse-project-');
    const plan = largePlan();
    writeFileSync(path.join(project, 'plan.md'), plan);
    const review = await startReview(['plan', 'plan.md'], { home: suite.home, cwd: project });
    try {
      const { page, errors } = await newPage(suite.browser);
      await page.goto(review.url);
      // Rendering happens in slices; the page says when it is done.
      await page.locator('.plan-doc:not([aria-busy])').waitFor();
      const sections = plan.split('\n').filter((l) => l.startsWith('## ')).length;
      expect(await page.locator('nav.toc li').count()).toBe(sections + 1);
      await page.locator('nav.toc a', { hasText: 'The end' }).click();
      await selectText(page, '.plan-doc', 'The very last sentence');
      await page.getByRole('button', { name: 'Comment', exact: true }).click();
      await page.locator('.popover textarea').fill('Fine.');
      await page.locator('.popover textarea').press('Control+Enter');
      await screenshot(page, 'large-plan');
      await page.getByRole('button', { name: 'Send feedback (1)' }).click();
      await page.getByTestId('send-feedback').click();
      const { stdout } = await review.exited;
      expect(decisionOf(stdout)['feedback']).toContain('> The very last sentence\n\nFine.');
      expect(errors).toEqual([]);
    } finally {
      review.stop();
      rmSync(project, { recursive: true, force: true });
    }
  });

  it('shows a 50,000-line diff with a bounded DOM, jumps to the last file and comments on its last line', async () => {
    const repo = TempRepo.init();
    const files = 50;
    const lines = 500;
    const body = (f: number, v: string) =>
      Array.from({ length: lines }, (_, l) => `export const c${f}_${l} = '${v}${l}';`).join('\n') + '\n';
    for (let f = 0; f < files; f++) repo.write(`src/m${String(f).padStart(2, '0')}.ts`, body(f, 'old'));
    repo.commitAll('base');
    for (let f = 0; f < files; f++) repo.write(`src/m${String(f).padStart(2, '0')}.ts`, body(f, 'new'));
    const review = await startReview(['code-review', '--repo', repo.dir], { home: suite.home });
    try {
      const { page, errors } = await newPage(suite.browser);
      await page.goto(review.url);
      await page.locator('.dl').first().waitFor();
      expect(await page.locator('.files .side-title').textContent()).toContain(`${files} files`);
      // 50,000 diff lines, a window of them in the DOM.
      expect(await page.locator('.dl').count()).toBeLessThan(400);
      await page.getByRole('tree', { name: 'Changed files' }).getByRole('button', { name: 'm49.ts' }).click();
      await page.locator('.file-head', { hasText: 'src/m49.ts' }).waitFor();
      const vlist = page.getByRole('region', { name: 'Diff' });
      await vlist.evaluate((el: Scrollable) => el.scrollBy(0, 1e7));
      const last = page.getByRole('button', { name: `Comment on new line ${lines} of src/m49.ts`, exact: true });
      await last.click();
      await page
        .getByRole('form', { name: 'Comment on lines' })
        .getByRole('textbox', { name: 'Comment' })
        .fill('Last line.');
      await page.getByRole('form', { name: 'Comment on lines' }).getByRole('button', { name: 'Add' }).click();
      await page.getByTestId('code-note').waitFor();
      expect(await page.locator('.dl').count()).toBeLessThan(400);
      await screenshot(page, 'large-diff');
      await page.getByRole('button', { name: 'Send feedback (1)' }).click();
      await page.getByTestId('send-feedback').click();
      const { stdout } = await review.exited;
      expect(decisionOf(stdout)['annotations']).toEqual([
        {
          id: expect.any(String),
          type: 'comment',
          filePath: 'src/m49.ts',
          lineStart: lines,
          lineEnd: lines,
          side: 'new',
          text: 'Last line.',
        },
      ]);
      expect(errors).toEqual([]);
    } finally {
      review.stop();
      repo.cleanup();
    }
  });
});
