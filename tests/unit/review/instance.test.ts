import { createServer } from 'node:http';
import { chmod, readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Router from '@koa/router';
import { afterEach, describe, expect, it } from 'vitest';
import type { ReviewConfig } from '../../../src/config/review.ts';
import { listen } from '../../../src/http/server.ts';
import type { DecisionCodec, DecisionGate } from '../../../src/review/decision.ts';
import { runReview } from '../../../src/review/instance.ts';
import { readBody } from '../../../src/review/validate.ts';
import { rawRequest } from '../../support/raw-http.ts';
import { capture, silentLog, testReviewConfig } from '../../support/review.ts';

type TestDecision = { value: string } | 'timed-out';

const codec: DecisionCodec<TestDecision> = {
  timeout: () => 'timed-out',
  encode: (d) => (d === 'timed-out' ? { decision: 'timeout' } : { decision: 'made', value: d.value }),
  exitCode: (d) => (d === 'timed-out' ? 3 : 0),
};

/** A minimal review kind: POST /api/decide {value, delayMs?} decides after delayMs. */
function testRoutes(gate: DecisionGate<TestDecision>): Router {
  const router = new Router();
  router.post('/api/decide', async (ctx) => {
    const body = readBody(ctx.request.body);
    const value = body.requiredString('value');
    const delay = body.fields['delayMs'];
    await gate.decide(ctx, async () => {
      if (typeof delay === 'number') await sleep(delay);
      if (value === 'fail') throw new Error('recording failed');
      return { body: { ok: true }, decision: { value } };
    });
  });
  return router;
}

const ABOUT = { kind: 'plan', title: 'Add caching', project: 'api', branch: 'main' } as const;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

async function start(overrides: Partial<ReviewConfig> = {}) {
  const { config, root, cleanup } = await testReviewConfig(overrides);
  cleanups.push(cleanup);
  const stdout = capture();
  const stderr = capture();
  const controller = new AbortController();
  let resolveUrl!: (url: string) => void;
  const urlReady = new Promise<string>((resolve) => (resolveUrl = resolve));
  const exit = runReview({
    config,
    io: { stdout, stderr, shutdown: controller.signal },
    log: silentLog,
    title: 'Test review',
    kind: 'plan',
    routes: testRoutes,
    codec,
    document: () => '<!doctype html><title>ui</title>',
    onListening: resolveUrl,
    about: () => Promise.resolve(ABOUT),
  });
  // Surface a startup failure instead of waiting for a URL forever.
  const url = await Promise.race([
    urlReady,
    exit.then((code) => Promise.reject(new Error(`exited ${code}: ${stderr.text()}`))),
  ]);
  return { url, exit, stdout, stderr, controller, config, root };
}

function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

describe('runReview', () => {
  it('prints the URL, answers the deciding request, then writes the decision and resolves its exit code', async () => {
    const { url, exit, stdout, stderr } = await start();
    expect(stderr.text()).toBe(`Test review: ${url}\n`);
    const response = await post(`${url}api/decide`, { value: 'yes' });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ ok: true });
    expect(await exit).toBe(0);
    expect(stdout.text()).toBe('{"decision":"made","value":"yes"}\n');
  });

  it('writes --decision-file atomically (no temporary file left) and creates its folder', async () => {
    const { config: base, cleanup } = await testReviewConfig();
    cleanups.push(cleanup);
    const decisionFile = path.join(base.projectDir, 'ci', 'decision.json');
    const { url, exit, stdout } = await start({ decisionFile });
    await post(`${url}api/decide`, { value: 'ci' });
    expect(await exit).toBe(0);
    expect(await readFile(decisionFile, 'utf8')).toBe(stdout.text());
    expect(await readdir(path.dirname(decisionFile))).toEqual(['decision.json']);
  });

  it('accepts exactly one of two concurrent decisions; the other gets 409 and is not recorded', async () => {
    const { url, exit, stdout } = await start();
    // The second is sent while the first is being recorded: sent at the same instant, it could be decided
    // (and the server closed) before the first had even connected, which would then be refused.
    const first = post(`${url}api/decide`, { value: 'first', delayMs: 200 });
    await sleep(50);
    const [a, b] = await Promise.all([first, post(`${url}api/decide`, { value: 'second' })]);
    expect([a.status, b.status].sort()).toEqual([200, 409]);
    const loser = a.status === 409 ? a : b;
    expect(await loser.json()).toEqual({ error: 'This review has already been decided' });
    expect(await exit).toBe(0);
    expect(stdout.text().trim().split('\n')).toHaveLength(1);
    expect((JSON.parse(stdout.text()) as { value: string }).value).toBe(a.status === 200 ? 'first' : 'second');
  });

  it('keeps waiting after an invalid body or a failed recording', async () => {
    const { url, exit, stdout } = await start();
    let r = await post(`${url}api/decide`, { value: 42 });
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual({ error: 'Invalid field value: must be a string' });
    r = await post(`${url}api/decide`, {});
    expect(await r.json()).toEqual({ error: 'Missing field value' });
    r = await post(`${url}api/decide`, '{"value": ');
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual({ error: 'Invalid JSON body' });
    r = await post(`${url}api/decide`, '[1,2]');
    expect(await r.json()).toEqual({ error: 'Request body must be a JSON object' });
    r = await fetch(`${url}api/decide`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'value=yes',
    });
    expect(r.status).toBe(415);
    expect(await r.json()).toEqual({
      error: 'Unsupported Content-Type: send application/json (multipart/form-data for /api/upload)',
    });
    r = await post(`${url}api/decide`, { value: 'fail' });
    expect(r.status).toBe(500);
    expect(stdout.text()).toBe('');
    r = await post(`${url}api/decide`, { value: 'finally' });
    expect(r.status).toBe(200);
    expect(await exit).toBe(0);
    expect(JSON.parse(stdout.text())).toEqual({ decision: 'made', value: 'finally' });
  });

  it('refuses cross-origin POSTs and accepts same-origin ones', async () => {
    const { url, exit } = await start();
    const host = new URL(url).host;
    for (const origin of ['http://evil.example', 'null', `https://${host}.evil.example`]) {
      const r = await post(`${url}api/decide`, { value: 'x' }, { origin });
      expect(r.status, origin).toBe(403);
      expect(await r.json()).toEqual({ error: 'Cross-origin request refused' });
    }
    const r = await post(`${url}api/decide`, { value: 'x' }, { origin: `http://${host}` });
    expect(r.status).toBe(200);
    expect(await exit).toBe(0);
  });

  it('serves the single-page document for unmatched paths, with nosniff everywhere', async () => {
    const { url, controller, exit } = await start();
    for (const p of ['', 'some/client/route', 'api/nothing-here']) {
      const r = await fetch(url + p);
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/^text\/html/);
      expect(r.headers.get('x-content-type-options')).toBe('nosniff');
      expect(await r.text()).toContain('<title>ui</title>');
    }
    controller.abort('SIGINT');
    expect(await exit).toBe(130);
  });

  it('ends with the timeout decision when nobody decides', async () => {
    const { url, exit, stdout } = await start({ timeoutMs: 300 });
    expect(await exit).toBe(3);
    expect(stdout.text()).toBe('{"decision":"timeout"}\n');
    // The listener is closed after the decision.
    await expect(fetch(url)).rejects.toThrow();
  });

  it('ends with 143 and writes nothing on SIGTERM', async () => {
    const { config: base, cleanup } = await testReviewConfig();
    cleanups.push(cleanup);
    const decisionFile = path.join(base.projectDir, 'decision.json');
    const { exit, stdout, controller } = await start({ decisionFile });
    controller.abort('SIGTERM');
    expect(await exit).toBe(143);
    expect(stdout.text()).toBe('');
    await expect(readFile(decisionFile)).rejects.toThrow();
  });

  it('fails to start with the spec error when the port stays busy', async () => {
    const blocker = createServer();
    const { port } = await listen(blocker, { port: 0, host: '127.0.0.1' });
    try {
      await expect(start({ port, host: '127.0.0.1' })).rejects.toThrow(`Port ${port} in use after 5 retries`);
    } finally {
      blocker.close();
    }
  });

  it('opens the browser with BROWSER in local mode, and never in remote mode', async () => {
    const { root, cleanup } = await testReviewConfig();
    cleanups.push(cleanup);
    const script = path.join(root, 'browser.sh');
    const opened = path.join(root, 'opened.txt');
    await writeFile(script, `#!/bin/sh\necho "$1" > '${opened}'\n`);
    await chmod(script, 0o755);

    const remote = await start({ remote: true, browser: script });
    remote.controller.abort('SIGINT');
    await remote.exit;
    await sleep(300);
    await expect(readFile(opened, 'utf8')).rejects.toThrow();

    const local = await start({ remote: false, host: '127.0.0.1', browser: script });
    for (let i = 0; i < 50 && !(await readFile(opened, 'utf8').catch(() => '')); i++) await sleep(50);
    expect((await readFile(opened, 'utf8')).trim()).toBe(local.url);
    local.controller.abort('SIGINT');
    await local.exit;
  });

  it('only logs when the browser command does not exist', async () => {
    const local = await start({ remote: false, host: '127.0.0.1', browser: '/nonexistent/browser-command' });
    await sleep(100);
    const r = await post(`${local.url}api/decide`, { value: 'still works' });
    expect(r.status).toBe(200);
    expect(await local.exit).toBe(0);
  });
});

describe('runReview in a Codespace and with notify targets', () => {
  it("prints and opens the Codespace's forwarded https URL of its port, and answers there", async () => {
    const codespace = { name: 'fuzzy-space', domain: 'app.github.dev' };
    const { url, exit, stderr } = await start({ codespace });
    const port = /^https:\/\/fuzzy-space-(\d+)\.app\.github\.dev\/$/.exec(url)?.[1];
    expect(port).toBeDefined();
    expect(stderr.text()).toBe(`Test review: ${url}\n`);
    // GitHub's forwarder sends the forwarded name as the Host, and the page's POSTs their Origin.
    const host = new URL(url).host;
    const decide = await rawRequest(`http://127.0.0.1:${port}/api/decide`, {
      method: 'POST',
      headers: { host, origin: `https://${host}`, 'content-type': 'application/json' },
      body: JSON.stringify({ value: 'ok' }),
    });
    expect(decide.status).toBe(200);
    expect(await exit).toBe(0);
  });

  it('tells every notify target that the review is waiting, with its URL, and stops retrying once decided', async () => {
    const received: { path: string; body: string; headers: Record<string, unknown> }[] = [];
    const receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        received.push({ path: req.url ?? '', body, headers: req.headers });
        res.statusCode = req.url === '/down' ? 503 : 200;
        res.end();
      });
    });
    const { port } = await listen(receiver, { port: 0, host: '127.0.0.1' });
    cleanups.push(() => new Promise((resolve) => receiver.close(() => resolve())));
    const at = (p: string) => new URL(`http://127.0.0.1:${port}${p}`);
    const notify = {
      targets: [
        { url: at('/json'), format: 'json' as const },
        { url: at('/ntfy'), format: 'ntfy' as const },
        { url: at('/down'), format: 'slack' as const },
      ],
      attempts: 100,
      retryBaseMs: 20,
    };
    const { url, exit } = await start({ notify, origin: 'opencode', session: 's1' });
    await expect.poll(() => received.filter((r) => r.path !== '/down').length).toBe(2);
    const json = JSON.parse(received.find((r) => r.path === '/json')?.body ?? '') as Record<string, unknown>;
    expect(json).toEqual({
      event: 'review.created',
      review: {
        id: expect.stringMatching(/^[\w-]{12}$/),
        url,
        ...ABOUT,
        origin: 'opencode',
        session: 's1',
        submitter: '',
        version: 1,
        createdAt: expect.any(String),
        decidedAt: null,
        outcome: null,
      },
    });
    const ntfy = received.find((r) => r.path === '/ntfy');
    expect(ntfy?.body).toBe(`Plan "Add caching" is waiting for a review [api @ main]: ${url}`);
    expect(ntfy?.headers['click']).toBe(url);
    await expect.poll(() => received.filter((r) => r.path === '/down').length).toBeGreaterThan(1);

    expect((await post(`${url}api/decide`, { value: 'yes' })).status).toBe(200);
    expect(await exit).toBe(0);
    const retries = received.length;
    await sleep(300);
    expect(received.length).toBe(retries);
  });
});

describe('runReview timeouts', () => {
  it('a timeout beyond the timer range waits instead of firing at once', async () => {
    const { url, exit, stdout, controller } = await start({ timeoutMs: 1_000 * 3_600 * 1_000 });
    await sleep(100);
    expect(stdout.text()).toBe('');
    expect((await fetch(`${url}api/nothing`)).status).toBe(200);
    controller.abort('SIGINT');
    expect(await exit).toBe(130);
  });
});
