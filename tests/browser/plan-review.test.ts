import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  annotateSelection,
  browserSuite,
  type Attributed,
  decisionOf,
  inPage,
  naturalWidth,
  newPage,
  giveFile,
  screenshot,
  selectText,
  startReview,
  tempDir,
  unlabelledControls,
} from '../support/browser.ts';
import { closedPort } from '../support/proxy-container.ts';

const PLAN = `# Add rate limiting to the gateway

## Context
The gateway accepts unbounded requests. We add a token bucket per API key.

## Steps
1. Add a \`RateLimiter\` class in \`src/limits.ts\`
   - refill on a timer
   - per-key map with LRU eviction
2. Store buckets in Redis for now
3. Return \`429\` with \`Retry-After\`

- [x] Design
- [ ] Tests

| Setting | Default |
|---|---|
| \`rate.limit\` | 100 |

\`\`\`ts
export function take(key: string): boolean {
  return buckets.get(key)?.take() ?? true;
}
\`\`\`

![diagram](diagram.png)

## Rollout
Ship it behind a flag and delete the old limiter next week.
`;

// The smallest valid PNG: 1×1, one red pixel.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);

const suite = browserSuite();
let project: string;

beforeAll(() => {
  project = tempDir('gatehouse-project-');
  writeFileSync(path.join(project, 'plan.md'), PLAN);
  writeFileSync(path.join(project, 'diagram.png'), PNG);
});

afterAll(() => {
  rmSync(project, { recursive: true, force: true });
});

async function planReview(args: string[] = [], env: Record<string, string> = {}) {
  const review = await startReview(['plan', 'plan.md', ...args], { home: suite.home, cwd: project, env });
  const { page, errors } = await newPage(suite.browser);
  await page.goto(review.url);
  await page.locator('.plan-doc h1').waitFor();
  return { review, page, errors };
}

function annotate(page: Page, text: string, action: 'Comment' | 'Delete' | 'Replace', body: string): Promise<void> {
  return annotateSelection(page, '.plan-doc', text, action, body);
}

describe('plan review in the browser', () => {
  it('renders the plan as Markdown with a table of contents, highlighting and local images', async () => {
    const { review, page, errors } = await planReview();
    await expect
      .poll(() => page.locator('nav.toc a').allTextContents())
      .toEqual(['Add rate limiting to the gateway', 'Context', 'Steps', 'Rollout']);
    expect(await page.locator('.plan-doc table td code').first().textContent()).toBe('rate.limit');
    expect(await page.locator('.plan-doc pre code .hljs-keyword').count()).toBeGreaterThan(0);
    expect(await page.locator('.plan-doc input[type=checkbox][disabled]').count()).toBe(2);
    const img = page.locator('.plan-doc img');
    expect(await img.getAttribute('src')).toBe('/api/image?path=diagram.png');
    await expect.poll(() => naturalWidth(img)).toBe(1);
    expect(await page.title()).toBe('Plan review: Add rate limiting to the gateway');
    await screenshot(page, 'plan-review');
    expect(await unlabelledControls(page)).toEqual([]);
    // Keyboard: Tab reaches the controls, and the focused one shows a ring.
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    expect(await inPage(page, 'getComputedStyle(document.activeElement).outlineStyle')).toBe('solid');
    await screenshot(page, 'plan-keyboard-focus');
    await page.setViewportSize({ width: 820, height: 900 });
    await screenshot(page, 'plan-review-narrow');
    await page.setViewportSize({ width: 1400, height: 900 });
    const theme = page.getByRole('button', { name: /^Theme/ });
    await theme.click();
    await expect.poll(() => theme.getAttribute('title')).toBe('Theme: light');
    await theme.click();
    await expect.poll(() => theme.getAttribute('title')).toBe('Theme: dark');
    await expect.poll(() => inPage(page, 'document.documentElement.dataset.theme')).toBe('dark');
    await screenshot(page, 'plan-review-dark');
    await theme.click();
    review.stop();
    await review.exited;
    expect(errors).toEqual([]);
  });

  it('comments, deletes and replaces selected text, edits and removes, then denies with the generated feedback', async () => {
    const { review, page, errors } = await planReview();
    // Escape dismisses the selection toolbar.
    await selectText(page, '.plan-doc', 'unbounded requests');
    await page.getByRole('toolbar', { name: 'Annotate selection' }).waitFor();
    await page.keyboard.press('Escape');
    await expect.poll(() => page.getByRole('toolbar', { name: 'Annotate selection' }).count()).toBe(0);
    await selectText(page, '.plan-doc', 'token bucket per API key');
    await screenshot(page, 'plan-selection-toolbar');
    await page.getByRole('button', { name: 'Comment', exact: true }).click();
    await page.locator('.popover textarea').fill('Why per key and not per client IP?');
    await screenshot(page, 'plan-comment-editor');
    await page.locator('.popover textarea').press('Control+Enter');

    await annotate(page, 'Store buckets in Redis for now', 'Replace', 'Keep buckets in process memory');
    await annotate(page, 'delete the old limiter next week', 'Delete', 'Keep it until the new one has run a month.');
    await annotate(page, 'refill on a timer', 'Comment', 'typo comment, removed below');

    // A general comment, then an edit and a removal.
    await page.getByRole('button', { name: '+ General comment' }).click();
    await page.getByRole('form', { name: 'General comment' }).locator('textarea').fill('Split this into two PRs.');
    await page.getByRole('form', { name: 'General comment' }).getByRole('button', { name: 'Add' }).click();
    const cards = page.getByTestId('annotation');
    await expect.poll(() => cards.count()).toBe(5);
    // Document order: the general comment first, then the passages as they appear.
    expect(await cards.locator('.badge').allTextContents()).toEqual([
      'General',
      'Comment',
      'Comment',
      'Replace',
      'Delete',
    ]);
    const typo = cards.filter({ hasText: 'typo comment' });
    await typo.getByRole('button', { name: 'Remove' }).click();
    // While edited, the card holds a form instead of its text: address it by id.
    const first = page.locator(`#${await cards.filter({ hasText: 'Why per key' }).getAttribute('id')}`);
    await first.getByRole('button', { name: 'Edit' }).click();
    await first.locator('textarea').fill('Why per key and not per client IP? Both?');
    await first.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => cards.count()).toBe(4);
    await first.getByRole('button', { name: /^Show in plan/ }).click();
    await expect.poll(() => first.getAttribute('class')).toContain('active');
    // Clicking a highlighted passage selects its card.
    await page
      .locator('.plan-doc li', { hasText: 'Store buckets in Redis for now' })
      .click({ position: { x: 20, y: 8 } });
    await expect
      .poll(() => cards.filter({ hasText: 'Keep buckets in process memory' }).getAttribute('class'))
      .toContain('active');
    await screenshot(page, 'plan-annotations');

    await page.getByRole('button', { name: 'Send feedback (4)' }).click();
    const dialog = page.getByRole('dialog', { name: 'Send feedback to the agent' });
    const text = await dialog.locator('textarea').inputValue();
    expect(text).toContain('> token bucket per API key\n\nWhy per key and not per client IP? Both?');
    expect(text).toContain(
      '> Store buckets in Redis for now\n\nReplace the quoted passage with:\n\n```\nKeep buckets in process memory\n```',
    );
    expect(text).toContain(
      '> delete the old limiter next week\n\nRemove the quoted passage from the plan. Keep it until the new one has run a month.',
    );
    expect(text).not.toContain('typo comment');
    await dialog.getByRole('tab', { name: 'Preview' }).click();
    expect(await dialog.locator('.preview blockquote').count()).toBe(3);
    await screenshot(page, 'plan-feedback-preview');
    expect(await unlabelledControls(page)).toEqual([]);
    await dialog.getByRole('tab', { name: 'Edit' }).click();
    await dialog.locator('textarea').fill(`${text}\nAlso: add metrics.`);
    await dialog.getByTestId('send-feedback').click();
    await page.getByTestId('done').waitFor();
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Feedback sent');
    expect(await page.locator('button').count()).toBe(0);
    await screenshot(page, 'plan-done');

    const { code, stdout } = await review.exited;
    expect(code).toBe(2);
    const decision = decisionOf(stdout);
    expect(decision['decision']).toBe('denied');
    expect(decision['feedback']).toBe(`${text}\nAlso: add metrics.`);
    expect(errors).toEqual([]);
  });

  it('approves with a permission mode chosen on the page, by keyboard (Ctrl+Enter)', async () => {
    const { review, page, errors } = await planReview();
    await page.getByRole('combobox', { name: 'Permission mode after approval' }).selectOption('acceptEdits');
    await page.keyboard.press('Control+Enter');
    await page.getByTestId('done').waitFor();
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Plan approved');
    const savedPath = await page.locator('.done-detail code').textContent();
    const { code, stdout } = await review.exited;
    expect(code).toBe(0);
    const decision = decisionOf(stdout);
    expect(decision).toMatchObject({ decision: 'approved', permissionMode: 'acceptEdits' });
    // Plan saving is on by default and the page shows where the file went.
    expect(decision['savedPath']).toBe(savedPath);
    expect(existsSync(String(savedPath))).toBe(true);
    expect(errors).toEqual([]);
  });

  it('as the Claude Code hook, starts an approval outside plan mode and hands the chosen mode back', async () => {
    await suite.browser.context.clearCookies();
    const event = {
      hook_event_name: 'PermissionRequest',
      tool_name: 'ExitPlanMode',
      tool_input: { plan: PLAN },
      permission_mode: 'plan',
      cwd: project,
    };
    const review = await startReview(['hook', 'claude-code'], {
      home: suite.home,
      cwd: project,
      stdin: JSON.stringify(event),
    });
    const { page, errors } = await newPage(suite.browser);
    await page.goto(review.url);
    const mode = page.getByRole('combobox', { name: 'Permission mode after approval' });
    await expect.poll(() => mode.inputValue()).toBe('default');
    await mode.selectOption('bypassPermissions');
    await page.getByRole('button', { name: 'Approve' }).click();
    const { code, stdout } = await review.exited;
    expect(code).toBe(0);
    expect(decisionOf(stdout)).toEqual({
      hookSpecificOutput: {
        hookEventName: 'PermissionRequest',
        decision: {
          behavior: 'allow',
          updatedInput: { plan: PLAN },
          updatedPermissions: [{ type: 'setMode', mode: 'bypassPermissions', destination: 'session' }],
        },
      },
    });
    // The choice is remembered, but never preselected above the agent's own mode: the reviewer picks it again.
    const next = await planReview();
    expect(await next.page.getByRole('combobox', { name: 'Permission mode after approval' }).inputValue()).toBe(
      'default',
    );
    next.review.stop();
    await next.review.exited;
    await suite.browser.context.clearCookies();
    expect(errors.concat(next.errors)).toEqual([]);
  });

  it('keeps settings per origin across servers on the same port, and sends them with the decision', async () => {
    const port = String(await closedPort());
    const first = await planReview(['--port', port]);
    await first.page.getByRole('button', { name: 'Settings' }).click();
    const settings = first.page.getByRole('dialog', { name: 'Settings' });
    await settings.getByRole('checkbox', { name: /Save each approved or denied plan/ }).uncheck();
    await screenshot(first.page, 'plan-settings');
    expect(await unlabelledControls(first.page)).toEqual([]);
    await settings.getByRole('button', { name: 'Done' }).click();
    await first.page.getByRole('button', { name: 'Approve' }).click();
    const one = await first.review.exited;
    expect(decisionOf(one.stdout)['savedPath']).toBeNull();

    const second = await planReview(['--port', port]);
    expect(new URL(second.review.url).port).toBe(new URL(first.review.url).port);
    await second.page.getByRole('button', { name: 'Settings' }).click();
    expect(await second.page.getByRole('checkbox', { name: /Save each approved or denied plan/ }).isChecked()).toBe(
      false,
    );
    await second.page.getByRole('checkbox', { name: /Save each approved or denied plan/ }).check();
    await second.page.getByRole('button', { name: 'Done' }).click();
    await second.page.getByRole('button', { name: 'Send feedback' }).click();
    await second.page.getByTestId('send-feedback').click();
    const two = await second.review.exited;
    expect(decisionOf(two.stdout)).toMatchObject({ decision: 'denied', feedback: 'Plan rejected by user' });
    expect(String(decisionOf(two.stdout)['savedPath'])).toMatch(/-denied(-\d+)?\.md$/);
    expect(first.errors.concat(second.errors)).toEqual([]);
  });

  it('uploads an image attached to a comment and references it in the feedback', async () => {
    const { review, page, errors } = await planReview();
    const imageFile = path.join(project, 'screenshot.png');
    writeFileSync(imageFile, PNG);
    await selectText(page, '.plan-doc', 'Return');
    await page.getByRole('button', { name: 'Comment', exact: true }).click();
    await page.locator('.popover textarea').fill('See the screenshot:');
    await page.locator('.popover input[type=file]').setInputFiles(imageFile);
    await expect
      .poll(() => page.locator('.popover textarea').inputValue())
      .toMatch(/!\[screenshot\.png\]\(\/tmp\/gatehouse-\w{6}\/[\w-]+\.png\)/);
    // Pasted and dropped images take the same path.
    await giveFile(page, 'paste', '.popover textarea', 'pasted.png', 'image/png', PNG);
    await expect.poll(() => page.locator('.popover textarea').inputValue()).toMatch(/!\[pasted\.png\]/);
    await giveFile(page, 'drop', '.popover textarea', 'dropped.png', 'image/png', PNG);
    await expect.poll(() => page.locator('.popover textarea').inputValue()).toMatch(/!\[dropped\.png\]/);
    // Anything else is refused with a reason, not uploaded.
    await giveFile(page, 'drop', '.popover textarea', 'notes.txt', 'text/plain', Buffer.from('hello'));
    await expect.poll(() => page.locator('.popover .hint').textContent()).toContain('Only PNG, JPEG and WebP');
    await page.locator('.popover textarea').press('Control+Enter');
    const shown = page.getByTestId('annotation').locator('img');
    await expect.poll(() => shown.count()).toBe(3);
    await expect.poll(() => naturalWidth(shown.first())).toBe(1);
    await screenshot(page, 'plan-image-comment');
    await page.getByRole('button', { name: 'Send feedback (1)' }).click();
    await page.getByTestId('send-feedback').click();
    const { stdout } = await review.exited;
    const feedback = String(decisionOf(stdout)['feedback']);
    const uploaded = /\((\/tmp\/gatehouse-\w{6}\/[\w-]+\.png)\)/.exec(feedback)?.[1];
    expect(uploaded).toBeDefined();
    expect(readFileSync(String(uploaded))).toEqual(PNG);
    expect(errors).toEqual([]);
  });

  it('shares the plan and annotations through the URL fragment and opens them from the link', async () => {
    const { review, page, errors } = await planReview();
    await annotate(page, 'token bucket per API key', 'Comment', 'Per key? 🤔');
    await annotate(page, 'Store buckets in Redis for now', 'Replace', 'In memory');
    const requests: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    await page.getByRole('button', { name: 'Share' }).click();
    const link = await page.getByTestId('share-url').inputValue();
    await screenshot(page, 'plan-share');
    expect(link.startsWith(`${review.url.replace(/\/$/, '')}/#share=`)).toBe(true);
    // Making the link sent nothing anywhere.
    expect(requests).toEqual([]);

    const other = await suite.browser.context.newPage();
    await other.goto(link);
    await other.locator('.plan-doc h1').waitFor();
    expect(await other.getByRole('heading', { level: 1, name: 'Shared plan' }).count()).toBe(1);
    const cards = other.getByTestId('annotation');
    await expect.poll(() => cards.count()).toBe(2);
    expect(await cards.first().textContent()).toContain('Per key? 🤔');
    expect(await cards.nth(1).locator('.replacement').textContent()).toBe('In memory');
    // Read-only: no decisions, no edits from a shared link.
    expect(await other.getByRole('button', { name: /Approve|Send feedback|Edit|Remove/ }).count()).toBe(0);
    const highlighted = await inPage<string[]>(other, "[...CSS.highlights.get('gh-comment')].map((r) => r.toString())");
    expect(highlighted).toEqual(['token bucket per API key']);
    await screenshot(other, 'plan-shared-link');
    await other.close();

    await page.getByRole('button', { name: 'Close' }).click();
    review.stop();
    await review.exited;
    expect(errors).toEqual([]);
  });

  it('says plainly when the server is gone before the decision reaches it', async () => {
    const { review, page, errors } = await planReview();
    review.stop();
    expect((await review.exited).stdout).toBe('');
    await page.getByRole('button', { name: 'Approve' }).click();
    const alert = page.getByRole('alert');
    await expect.poll(() => alert.textContent()).toContain('The review server did not answer');
    await screenshot(page, 'plan-server-gone');
    expect(errors).toEqual([]);
  });

  it('hides sharing when the server disables it', async () => {
    const { review, page } = await planReview([], { SERVICE_SHARE: 'off' });
    await page.getByRole('button', { name: 'Approve' }).waitFor();
    expect(await page.getByRole('button', { name: 'Share' }).count()).toBe(0);
    review.stop();
    await review.exited;
  });

  it('for OpenCode, offers no permission mode and says plainly when the agent list failed', async () => {
    const { review, page, errors } = await planReview(['--origin', 'opencode'], {
      OPENCODE_SERVER_URL: 'http://127.0.0.1:9',
    });
    await page.getByTestId('agents-error').waitFor();
    expect(await page.getByTestId('agents-error').textContent()).toContain('Failed to fetch agents');
    expect(await page.getByRole('combobox', { name: 'Permission mode after approval' }).count()).toBe(0);
    await screenshot(page, 'plan-opencode-agents-failed');
    await page.getByRole('button', { name: 'Approve' }).click();
    const { stdout } = await review.exited;
    expect(decisionOf(stdout)['decision']).toBe('approved');
    expect(errors).toEqual([]);
  });

  it('for OpenCode, switches to an agent from the list and attaches the annotations to the approval', async () => {
    // A stand-in for the OpenCode server's GET /agent.
    const agents = [
      { name: 'build', mode: 'primary', description: 'Builds things' },
      { name: 'plan', mode: 'primary', description: 'Plans things' },
      { name: 'secret', mode: 'primary', hidden: true, description: '' },
      { name: 'helper', mode: 'subagent', description: '' },
    ];
    const opencode = createServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(agents)),
    );
    await new Promise<void>((resolve) => opencode.listen(0, '127.0.0.1', resolve));
    try {
      const port = (opencode.address() as AddressInfo).port;
      const { review, page, errors } = await planReview(['--origin', 'opencode'], {
        OPENCODE_SERVER_URL: `http://127.0.0.1:${port}`,
      });
      const picker = page.getByRole('combobox', { name: 'Agent to switch to' });
      await expect
        .poll(() => picker.locator('option').allTextContents())
        .toEqual(['Keep current agent', 'build', 'plan']);
      await picker.selectOption('build');
      await annotate(page, 'Return', 'Comment', 'Mind the header name.');
      await screenshot(page, 'plan-opencode-agents');
      await page.getByRole('button', { name: 'Approve' }).click();
      const { stdout } = await review.exited;
      const decision = decisionOf(stdout);
      expect(decision).toMatchObject({ decision: 'approved', agentSwitch: 'build' });
      expect(decision['feedback']).toContain('Mind the header name.');
      expect(errors).toEqual([]);
    } finally {
      opencode.close();
    }
  });

  it('saves an approved plan to a notevault vault picked from the list, and hands notememo its URL', async () => {
    const vault = path.join(suite.home, 'vaults', 'work');
    mkdirSync(vault, { recursive: true });
    mkdirSync(path.join(suite.home, '.config', 'notevault'), { recursive: true });
    writeFileSync(
      path.join(suite.home, '.config', 'notevault', 'notevault.json'),
      JSON.stringify({ vaults: { w: { path: vault } } }),
    );
    const { review, page, errors } = await planReview();
    await page.getByRole('button', { name: 'Settings' }).click();
    const settings = page.getByRole('dialog', { name: 'Settings' });
    await settings.getByRole('checkbox', { name: /notevault vault/ }).check();
    await settings.getByRole('combobox', { name: 'Vault' }).selectOption(vault);
    await settings.getByRole('textbox', { name: 'Folder in the vault' }).fill('plans');
    await settings.getByRole('textbox', { name: 'Tags' }).fill('gateway, #limits');
    await settings.getByRole('checkbox', { name: /notememo/ }).check();
    await screenshot(page, 'plan-settings-notes');
    await settings.getByRole('button', { name: 'Done' }).click();
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.getByTestId('done').waitFor();
    const note = await page.locator('.done-detail p', { hasText: 'Note saved to' }).locator('code').textContent();
    expect(note?.startsWith(path.join(vault, 'plans'))).toBe(true);
    expect(readFileSync(String(note), 'utf8')).toMatch(/tags:[\s\S]*gateway[\s\S]*limits[\s\S]*# Add rate limiting/);
    expect(await page.getByRole('link', { name: 'Open the note in notememo' }).getAttribute('href')).toMatch(
      /^notememo:\/\/x-callback-url\/create\?/,
    );
    await screenshot(page, 'plan-done-notes');
    await review.exited;
    // Leave the next tests' cookies as they were.
    await suite.browser.context.clearCookies();
    expect(errors).toEqual([]);
  });

  it('runs nothing from a hostile plan: scripts, event handlers, javascript: links, styles', async () => {
    const hostile = [
      '# Hostile <img src=x onerror="window.__pwned=1">',
      '<script>window.__pwned = 2</script>',
      '<img src="nope.png" onerror="window.__pwned=3">',
      '[click me](javascript:window.__pwned=4) and <a href="javascript:window.__pwned=5">raw</a>',
      '<iframe src="javascript:parent.__pwned=6"></iframe>',
      '<svg onload="window.__pwned=7"><circle r="1"/></svg>',
      '<div style="position:fixed;inset:0;background:red" onclick="window.__pwned=8">overlay</div>',
      '<form action="/api/approve" method="post"><button>Approve</button></form>',
      '<details open ontoggle="window.__pwned=9"><summary>s</summary>x</details>',
      '<object data="javascript:window.__pwned=10"></object>',
      '![img](javascript:window.__pwned=11) ![svg](data:image/svg+xml,%3Csvg%20onload%3D%22window.__pwned%3D12%22%2F%3E)',
      '<a href="data:text/html,<script>opener.__pwned=13</script>">data link</a> <math><mtext><img src=x onerror="window.__pwned=14"></mtext></math>',
    ].join('\n\n');
    writeFileSync(path.join(project, 'hostile.md'), hostile);
    const review = await startReview(['plan', 'hostile.md'], { home: suite.home, cwd: project });
    const { page, errors } = await newPage(suite.browser);
    const dialogs: string[] = [];
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    await page.goto(review.url);
    await page.locator('.plan-doc h1').waitFor();
    await page.waitForTimeout(500);
    for (const link of await page.locator('.plan-doc a').all())
      await link.click({ force: true }).catch(() => undefined);
    await page.locator('.plan-doc').getByText('overlay').click({ force: true });
    expect(await inPage(page, 'window.__pwned')).toBeUndefined();
    expect(dialogs).toEqual([]);
    const article = page.locator('.plan-doc');
    expect(await article.locator('script, iframe, object, svg, form, button, style').count()).toBe(0);
    expect(await article.locator('[onerror], [onload], [onclick], [ontoggle], [style]').count()).toBe(0);
    const hrefs = await article.locator('a').evaluateAll((as: Attributed[]) => as.map((a) => a.getAttribute('href')));
    expect(hrefs.filter((h) => h !== null && /^(javascript|data):/i.test(h))).toEqual([]);
    const srcs = await article
      .locator('img')
      .evaluateAll((imgs: Attributed[]) => imgs.map((i) => i.getAttribute('src')));
    expect(srcs.filter((src) => src !== null && /^(javascript|data):/i.test(src))).toEqual([]);
    await screenshot(page, 'plan-hostile');
    // The page still works: the real Approve button decides.
    await page.getByRole('button', { name: 'Approve' }).click();
    const { stdout } = await review.exited;
    expect(decisionOf(stdout)['decision']).toBe('approved');
    expect(errors).toEqual([]);
  });
});
