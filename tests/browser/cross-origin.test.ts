// Issue 15, items 5 and 6 in a real Chromium: a page on another origin (here
// another port of the same host) can neither frame the review nor preset its
// settings.
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { close } from '../../src/http/server.ts';
import { browserSuite, decisionOf, newPage, startReview, tempDir } from '../support/browser.ts';

const PLAN = '# Add rate limiting\n\n1. Add a token bucket\n';

const suite = browserSuite();
let project: string;
let attacker: Server;
let attackerOrigin: string;
/** The page the attacker's server serves next. */
let attackerPage = '';

beforeAll(async () => {
  project = tempDir('gatehouse-project-');
  writeFileSync(path.join(project, 'plan.md'), PLAN);
  attacker = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(attackerPage);
  });
  await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
  attackerOrigin = `http://localhost:${(attacker.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await close(attacker);
});

describe('the review UI against a page on another origin', () => {
  it('does not render inside a frame on another origin (the review itself renders)', async () => {
    const review = await startReview(['plan', 'plan.md'], { home: suite.home, cwd: project });
    const { page, errors } = await newPage(suite.browser);
    const console: string[] = [];
    page.on('console', (message) => console.push(message.text()));
    attackerPage =
      '<!doctype html><p>Win a prize!</p>' +
      `<iframe id="victim" src="${review.url}" style="opacity:0.05" width="1000" height="700"></iframe>`;
    await page.goto(attackerOrigin);
    const frame = page.frameLocator('#victim');
    await expect.poll(() => console.some((line) => line.includes("frame-ancestors 'none'"))).toBe(true);
    expect(await frame.locator('.plan-doc h1').count()).toBe(0);
    expect(await frame.getByRole('button', { name: 'Approve' }).count()).toBe(0);

    // The same review opened on its own origin renders: the frame was refused, not the page broken.
    const direct = await newPage(suite.browser);
    await direct.page.goto(review.url);
    expect(await direct.page.locator('.plan-doc h1').textContent()).toBe('Add rate limiting');
    review.stop();
    await review.exited;
    expect(errors.concat(direct.errors)).toEqual([]);
  });

  it("ignores settings another port presets (shared cookies, own storage): saving on, the agent's mode", async () => {
    const { page } = await newPage(suite.browser);
    attackerPage = `<!doctype html><script>
      for (const c of ['gatehouse.permissionMode=bypassPermissions', 'gatehouse.planSaveEnabled=0']) {
        document.cookie = c + '; Path=/; Max-Age=3600';
      }
      localStorage.setItem('gatehouse.permissionMode', 'bypassPermissions');
      localStorage.setItem('gatehouse.planSaveEnabled', '0');
      document.title = 'preset';
    </script>`;
    await page.goto(attackerOrigin);
    await expect.poll(() => page.title()).toBe('preset');
    const cookies = await suite.browser.context.cookies('http://localhost');
    expect(cookies.map((c) => c.name)).toContain('gatehouse.permissionMode');

    const review = await startReview(['plan', 'plan.md'], { home: suite.home, cwd: project });
    const { page: victim, errors } = await newPage(suite.browser);
    await victim.goto(review.url);
    await victim.locator('.plan-doc h1').waitFor();
    expect(await victim.getByRole('combobox', { name: 'Permission mode after approval' }).inputValue()).toBe('default');
    await victim.getByRole('button', { name: 'Settings' }).click();
    expect(await victim.getByRole('checkbox', { name: /Save each approved or denied plan/ }).isChecked()).toBe(true);
    await victim.getByRole('button', { name: 'Done' }).click();
    await victim.getByRole('button', { name: 'Approve' }).click();
    const { code, stdout } = await review.exited;
    expect(code).toBe(0);
    const savedPath = expect.stringMatching(/-approved\.md$/);
    expect(decisionOf(stdout)).toMatchObject({ decision: 'approved', permissionMode: 'default', savedPath });
    await suite.browser.context.clearCookies();
    expect(errors).toEqual([]);
  });
});
