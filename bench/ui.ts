/**
 * `npm run bench:ui`: time to first render of the review UI in headless
 * Chromium, for a 5,000-line plan and a 50,000-line diff, side by side with a
 * baseline page that only fetches the same JSON and shows it as plain text in
 * a <pre> (the floor: network, JSON, one text node). Interleaved runs, medians.
 *
 * "First render" is the first animation frame after the UI's content appears
 * (the plan's first heading, the diff's first code line), in milliseconds
 * from navigation start. A small local server answers the API with fixed
 * data, so the figures are the browser's alone, not git's or the plan file's.
 * BENCH_RUNS changes the number of runs. Run `npm run build:web` first.
 *
 * BENCH_UI_COMPARE=<another built index.html> (say, main's) adds that
 * document to every round, interleaved with the others, and prints the
 * paired ratio of this UI to it, round by round (median and range).
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { chromium, type Page } from 'playwright-core';
import { CHROMIUM_ARGS } from '../tests/support/browser.ts';
import { median } from './stats.ts';

const RUNS = Number(process.env['BENCH_RUNS'] ?? 7);
const COMPARE = process.env['BENCH_UI_COMPARE'];
const TARGET_MS = 1_000;
const root = path.resolve(import.meta.dirname, '..');

/** A 5,000-line plan: sections of prose, nested lists, task lists, tables and code. */
function bigPlan(lines = 5_000): string {
  const out = ['# A large plan'];
  for (let s = 1; out.length < lines; s++) {
    out.push(
      '',
      `## Section ${s}: change module ${s}`,
      '',
      `We change module **${s}** so that \`handler${s}\` validates input; see [the notes](#section-${s}).`,
      '',
    );
    out.push(
      `1. Edit \`src/mod${s}.ts\``,
      `   - keep the public API`,
      `   - add tests for case ${s}`,
      `2. Update docs`,
      '',
      `- [x] design ${s}`,
      `- [ ] review ${s}`,
      '',
    );
    out.push('| key | value |', '|---|---|', `| retries | ${s} |`, `| timeout | ${s * 10} ms |`, '');
    out.push(
      '```ts',
      `export function handler${s}(input: string): number {`,
      `  const n = Number(input) + ${s};`,
      '  if (Number.isNaN(n)) throw new Error("bad input");',
      '  return n;',
      '}',
      '```',
    );
  }
  return out.slice(0, lines).join('\n') + '\n';
}

/** A 50,000-line diff over 200 TypeScript files. */
function bigDiff(lines = 50_000, files = 200): string {
  const per = Math.floor(lines / files);
  const out: string[] = [];
  for (let f = 0; f < files; f++) {
    out.push(
      `diff --git a/src/pkg${f % 20}/mod${f}.ts b/src/pkg${f % 20}/mod${f}.ts`,
      `index 1111111..2222222 100644`,
      `--- a/src/pkg${f % 20}/mod${f}.ts`,
      `+++ b/src/pkg${f % 20}/mod${f}.ts`,
    );
    const body: string[] = [];
    let oldCount = 0;
    let newCount = 0;
    for (let l = 0; body.length < per - 5; l++) {
      if (l % 3 === 0) {
        body.push(
          `-  const v${l} = compute(${l}, "old"); // ${f}`,
          `+  const v${l} = compute(${l}, "new", options); // ${f}`,
        );
        oldCount++;
        newCount++;
      } else {
        body.push(`   const keep${l} = ${l} * factor;`);
        oldCount++;
        newCount++;
      }
    }
    out.push(`@@ -1,${oldCount} +1,${newCount} @@`, ...body);
  }
  return out.join('\n') + '\n';
}

const BASELINE = `<!doctype html><meta charset="utf-8"><pre id="out"></pre><script>
fetch(location.pathname.endsWith('/code') ? '/api/diff' : '/api/plan').then((r) => r.json()).then((d) => {
  document.getElementById('out').textContent = d.plan ?? d.rawPatch;
  document.getElementById('out').dataset.ready = '1';
});
</script>`;

type Scenario = 'plan' | 'diff';

function serve(ui: string, compare: string, scenario: Scenario, plan: string, diff: string): Promise<Server> {
  const planJson = JSON.stringify({ plan, origin: 'claude-code', permissionMode: 'default', sharingEnabled: true });
  const diffJson = JSON.stringify({
    rawPatch: diff,
    gitRef: 'HEAD',
    origin: 'claude-code',
    diffType: 'uncommitted',
    gitContext: {
      currentBranch: 'main',
      defaultBranch: 'main',
      diffOptions: [{ id: 'uncommitted', label: 'Uncommitted changes' }],
    },
    sharingEnabled: true,
  });
  const server = createServer((req, res) => {
    const url = req.url ?? '/';
    if (url === '/api/plan' && scenario === 'plan')
      res.writeHead(200, { 'content-type': 'application/json' }).end(planJson);
    else if (url === '/api/diff' && scenario === 'diff')
      res.writeHead(200, { 'content-type': 'application/json' }).end(diffJson);
    else if (url === '/api/agents') res.writeHead(200, { 'content-type': 'application/json' }).end('{"agents":[]}');
    else {
      const page = url.includes('baseline') ? BASELINE : url.includes('compare') ? compare : ui;
      res.writeHead(200, { 'content-type': 'text/html' }).end(page);
    }
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

// Records the first frame after `selector` appears (in-page source: this program has no DOM lib).
const FIRST_RENDER = (selector: string) => `(() => {
  const seen = () => {
    if (!document.querySelector(${JSON.stringify(selector)})) return false;
    requestAnimationFrame(() => { window.__firstRender = performance.now(); });
    return true;
  };
  const observer = new MutationObserver(() => { if (seen()) observer.disconnect(); });
  document.addEventListener('DOMContentLoaded', () => { if (!seen()) observer.observe(document.body, { childList: true, subtree: true, attributes: true }); });
})()`;

async function measure(page: Page, url: string, selector: string): Promise<number> {
  await page.addInitScript(FIRST_RENDER(selector));
  await page.goto(url);
  await page.waitForFunction('window.__firstRender !== undefined', undefined, { timeout: 60_000, polling: 50 });
  return page.evaluate<number>('window.__firstRender');
}

async function main(): Promise<void> {
  const ui = readFileSync(path.join(root, 'dist', 'web', 'index.html'), 'utf8');
  const compare = COMPARE === undefined ? '' : readFileSync(COMPARE, 'utf8');
  const kinds = COMPARE === undefined ? (['ui', 'baseline'] as const) : (['ui', 'compare', 'baseline'] as const);
  const paired: string[] = [];
  const plan = bigPlan();
  const diff = bigDiff();
  const browser = await chromium.launch({
    executablePath: process.env['CHROMIUM'] ?? '/usr/bin/chromium',
    args: CHROMIUM_ARGS,
    headless: true,
  });
  const rows: string[] = [];
  let over = false;
  try {
    for (const scenario of ['plan', 'diff'] as const) {
      const server = await serve(ui, compare, scenario, plan, diff);
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const times = { ui: [] as number[], compare: [] as number[], baseline: [] as number[] };
      for (let i = 0; i < RUNS + 1; i++) {
        // Each round starts with another page: going first costs more than going later.
        for (const kind of [...kinds.slice(i % kinds.length), ...kinds.slice(0, i % kinds.length)]) {
          // A fresh context per run: nothing cached between runs.
          const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
          const page = await context.newPage();
          const selector =
            kind === 'baseline' ? '#out[data-ready]' : scenario === 'plan' ? '.plan-doc h1' : '.dl .code';
          const baselinePath = `baseline${scenario === 'diff' ? '/code' : ''}`;
          const at = kind === 'baseline' ? baselinePath : kind === 'compare' ? 'compare' : '';
          const ms = await measure(page, `${base}/${at}`, selector);
          if (i > 0) times[kind].push(ms); // the first round warms the browser
          await context.close();
        }
      }
      server.close();
      const uiMs = median(times.ui);
      const baseMs = median(times.baseline);
      over ||= uiMs > TARGET_MS;
      const size =
        scenario === 'plan'
          ? `${plan.split('\n').length - 1} lines, ${(plan.length / 1024).toFixed(0)} KB`
          : `${diff.split('\n').length - 1} lines, ${(diff.length / 1024 / 1024).toFixed(1)} MB`;
      if (COMPARE !== undefined) {
        const ratios = times.ui.map((ms, r) => ms / (times.compare[r] ?? NaN));
        const range = `${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}×`;
        const name = scenario === 'plan' ? 'plan review' : 'code review';
        const compareMs = median(times.compare);
        const ratio = `${median(ratios).toFixed(2)}×`;
        paired.push(`| ${name} | ${uiMs.toFixed(0)} ms | ${compareMs.toFixed(0)} ms | ${ratio} | ${range} |`);
      }
      rows.push(
        `| ${scenario === 'plan' ? 'plan review' : 'code review'} (${size}) | ${uiMs.toFixed(0)} ms | ${baseMs.toFixed(0)} ms | ${(uiMs / baseMs).toFixed(2)}× | ${Math.min(...times.ui).toFixed(0)}–${Math.max(...times.ui).toFixed(0)} ms |`,
      );
    }
  } finally {
    await browser.close();
  }
  const { gzipSync } = await import('node:zlib');
  console.log(
    `Time to first render, headless Chromium, median of ${RUNS} interleaved runs (aim: under ${TARGET_MS} ms)\n`,
  );
  console.log('| scenario | UI | baseline <pre> | ratio | UI range |');
  console.log('|---|---|---|---|---|');
  for (const row of rows) console.log(row);
  if (COMPARE !== undefined) {
    console.log(`\nAgainst ${COMPARE}, the same rounds, paired round by round:\n`);
    console.log('| scenario | UI | compared UI | paired ratio (median) | range |');
    console.log('|---|---|---|---|---|');
    for (const row of paired) console.log(row);
  }
  console.log(
    `\nBuilt document: ${(ui.length / 1024).toFixed(0)} KB, ${(gzipSync(ui).length / 1024).toFixed(1)} KB gzipped (budget 400 KB gzipped).`,
  );
  if (over) console.log(`\nAbove the ${TARGET_MS} ms aim on this machine.`);
}

await main();
