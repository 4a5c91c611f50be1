// Browser tests drive Debian's Chromium through playwright-core against the
// real review server, started as the CLI a user runs.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect } from 'vitest';

export const ROOT = path.resolve(import.meta.dirname, '..', '..');
const SCREENS = path.join(ROOT, 'test-results', 'screens');

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface Browser {
  context: BrowserContext;
  close: () => Promise<void>;
}

/** A fresh Chromium profile (its own --user-data-dir), so cookies start empty. */
export async function launchBrowser(options: { colorScheme?: 'light' | 'dark' } = {}): Promise<Browser> {
  const profile = mkdtempSync(path.join(tmpdir(), 'gatehouse-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env['CHROMIUM'] ?? '/usr/bin/chromium',
    args: CHROMIUM_ARGS,
    headless: true,
    viewport: { width: 1400, height: 900 },
    colorScheme: options.colorScheme ?? 'light',
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** A page that fails the test on any uncaught script error. */
export async function newPage(browser: Browser): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  return { page, errors };
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENS, `${name}.png`) });
}

export interface Review {
  url: string;
  /** Resolves when the process exits: its exit code and everything it wrote on stdout. */
  exited: Promise<{ code: number | null; stdout: string; stderr: string }>;
  stop: () => void;
}

/** Review servers still waiting for a decision; a failed test leaves its server behind. */
const running = new Set<ChildProcess>();

/** Stops every review server a test started and did not see exit. */
export function stopAllReviews(): void {
  for (const child of running) child.kill('SIGTERM');
}

/**
 * Runs `node src/cli.ts <args>` in local mode (random port, BROWSER a no-op so
 * nothing opens) and waits for the URL it prints on stderr.
 */
export async function startReview(
  args: string[],
  options: { env?: Record<string, string>; cwd?: string; home: string; stdin?: string },
): Promise<Review> {
  const child: ChildProcess = spawn(process.execPath, [path.join(ROOT, 'src', 'cli.ts'), ...args], {
    cwd: options.cwd ?? ROOT,
    env: { PATH: process.env['PATH'] ?? '', HOME: options.home, BROWSER: 'true', ...options.env },
    stdio: [options.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  child.stdin?.end(options.stdin);
  running.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('exit', (code) => {
      running.delete(child);
      resolve({ code, stdout, stderr });
    }),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no review URL on stderr after 20 s:\n${stderr}`)), 20_000);
    child.stderr?.on('data', (d: Buffer) => {
      stderr += d.toString();
      const found = /https?:\/\/[^\s"]+/.exec(stderr);
      if (found !== null) {
        clearTimeout(timer);
        resolve(found[0]);
      }
    });
    void exited.then(({ code }) => {
      clearTimeout(timer);
      reject(new Error(`the review exited (${code}) before printing its URL:\n${stderr}`));
    });
  });
  return { url, exited, stop: () => child.kill('SIGTERM') };
}

/** `gatehouse code-review` of `repoDir` in a new page of the suite's browser, once its first file is drawn. */
export async function openCodeReview(
  suite: BrowserSuite,
  repoDir: string,
  args: string[] = [],
): Promise<{ review: Review; page: Page; errors: string[] }> {
  const review = await startReview(['code-review', '--repo', repoDir, ...args], { home: suite.home });
  const { page, errors } = await newPage(suite.browser);
  await page.goto(review.url);
  await page.locator('.file-head').first().waitFor();
  return { review, page, errors };
}

/** The decision JSON line a review printed on stdout. */
export function decisionOf(stdout: string): Record<string, unknown> {
  const line = stdout.trim().split('\n').at(-1) ?? '';
  return JSON.parse(line) as Record<string, unknown>;
}

// In-page code is shipped as source text: this test program is compiled
// without the DOM library (it is Node code), and the page is not.
const FIND_TEXT = `({ selector, text }) => {
  const root = document.querySelector(selector);
  if (root === null) throw new Error('no ' + selector);
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n !== null; n = walker.nextNode()) {
    const at = n.data.indexOf(text);
    if (at < 0) continue;
    n.parentElement.scrollIntoView({ block: 'center' });
    const range = document.createRange();
    range.setStart(n, at);
    range.setEnd(n, at + 1);
    const first = range.getBoundingClientRect();
    range.setStart(n, at + text.length - 1);
    range.setEnd(n, at + text.length);
    const last = range.getBoundingClientRect();
    return { x1: first.left + 1, y1: first.top + first.height / 2, x2: last.right - 0.5, y2: last.top + last.height / 2 };
  }
  throw new Error('"' + text + '" not found in ' + selector);
}`;

/** Selects the first occurrence of `text` inside `selector` with a real mouse drag, as a reviewer would. */
export async function selectText(page: Page, selector: string, text: string): Promise<void> {
  const box = await callInPage<{ x1: number; y1: number; x2: number; y2: number }>(page, FIND_TEXT, { selector, text });
  await page.mouse.move(box.x1, box.y1);
  await page.mouse.down();
  await page.mouse.move(box.x2, box.y2, { steps: 6 });
  await page.mouse.up();
  const selected = await page.evaluate<string>('window.getSelection().toString()');
  if (selected !== text) throw new Error(`selected "${selected}" instead of "${text}"`);
}

/** Selects `text` in `selector`, picks `action` on the selection's toolbar and saves `body`, as a reviewer would. */
export async function annotateSelection(
  page: Page,
  selector: string,
  text: string,
  action: 'Comment' | 'Delete' | 'Replace',
  body: string,
): Promise<void> {
  await selectText(page, selector, text);
  await page
    .getByRole('toolbar', { name: 'Annotate selection' })
    .getByRole('button', { name: action, exact: true })
    .click();
  const editor = page.locator('.popover textarea');
  await editor.fill(body);
  await editor.press('Control+Enter');
  await expect.poll(() => page.locator('.popover').count()).toBe(0);
}

/** Pastes or drops a file onto an element, as the clipboard or a drag from the desktop would. */
export async function giveFile(
  page: Page,
  how: 'paste' | 'drop',
  selector: string,
  name: string,
  type: string,
  bytes: Buffer,
): Promise<void> {
  await callInPage(
    page,
    `({ how, selector, name, type, b64 }) => {
      const data = new DataTransfer();
      data.items.add(new File([Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))], name, { type }));
      const init = { bubbles: true, cancelable: true };
      const event = how === 'paste' ? new ClipboardEvent('paste', { ...init, clipboardData: data }) : new DragEvent('drop', { ...init, dataTransfer: data });
      document.querySelector(selector).dispatchEvent(event);
    }`,
    { how, selector, name, type, b64: bytes.toString('base64') },
  );
}

/** An image element's natural width: 0 until it loaded. */
export function naturalWidth(locator: Locator): Promise<number> {
  return locator.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth);
}

/** Calls a function given as source text in the page with a JSON argument. */
export function callInPage<T>(page: Page, source: string, arg: unknown): Promise<T> {
  return page.evaluate<T>(`(${source})(${JSON.stringify(arg)})`);
}

/**
 * Controls a screen reader would announce without a name: no text, no
 * aria-label(ledby), no <label>, no title. Returned as short descriptions.
 */
export function unlabelledControls(page: Page): Promise<string[]> {
  return page.evaluate<
    string[]
  >(`[...document.querySelectorAll('button, input, select, textarea, [role=radio], [role=tab], a[href]')]
    .filter((el) => el.getClientRects().length > 0 || el.type === 'file')
    .filter((el) => !(el.getAttribute('aria-label') || el.getAttribute('aria-labelledby') || el.title || (el.labels && el.labels.length > 0) || (el.tagName !== 'INPUT' && el.tagName !== 'SELECT' && el.tagName !== 'TEXTAREA' && el.textContent.trim())))
    .map((el) => el.outerHTML.slice(0, 120))`);
}

/** A page expression's value, typed by the caller. */
export function inPage<T>(page: Page, expression: string): Promise<T> {
  return page.evaluate<T>(expression);
}

export function tempDir(prefix: string): string {
  return mkdtempSync(path.join(tmpdir(), prefix));
}

/** What page functions touch of an element, named here: the Node tsconfig has no DOM types. */
export interface Attributed {
  getAttribute(name: string): string | null;
}
export interface Scrollable {
  scrollHeight: number;
  scrollTo(options: { top: number }): void;
  scrollBy(x: number, y: number): void;
}

export interface BrowserSuite {
  browser: Browser;
  /** HOME of the servers the suite starts: plan files and notes land here, not in the real home. */
  home: string;
}

/**
 * The hooks every local-server browser suite needs: the UI built from web/
 * (the server serves dist/web/index.html), one Chromium, a throwaway HOME.
 * The fields are set once beforeAll has run.
 */
export function browserSuite(): BrowserSuite {
  const suite = {} as BrowserSuite;
  beforeAll(async () => {
    execFileSync('npm', ['run', 'build:web'], { cwd: ROOT, stdio: 'pipe' });
    suite.browser = await launchBrowser();
    suite.home = tempDir('gatehouse-home-');
  });
  afterAll(async () => {
    stopAllReviews();
    // Unset when beforeAll failed.
    const { browser, home } = suite as Partial<BrowserSuite>;
    await browser?.close();
    if (home !== undefined) rmSync(home, { recursive: true, force: true });
  });
  return suite;
}
