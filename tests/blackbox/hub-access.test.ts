import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request, type IncomingHttpHeaders } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { IMAGE } from '../support/image.ts';
import { decide, freePort, hubCall, lastLine, startClient, startHub, notificationReceiver } from '../support/hub.ts';
import { REVIEWER_TOKEN, SUBMIT_TOKEN } from '../support/hub.ts';
import type { Client, HubContainer } from '../support/hub.ts';

const run = promisify(execFile);
const PLAN = { kind: 'plan', plan: '# Access plan\n\n1. One\n', title: 'Access plan' };
const asSubmitter = { authorization: `Bearer ${SUBMIT_TOKEN}` };
const asReviewer = { authorization: `Bearer ${REVIEWER_TOKEN}` };

const hubs: HubContainer[] = [];
const clients: Client[] = [];
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'gatehouse-hub-access-'));
});
afterEach(async () => {
  for (const c of clients.splice(0)) c.child.kill('SIGTERM');
  await Promise.all(hubs.splice(0).map((h) => h.stop()));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** A raw request, for what fetch will not send (a foreign Host). */
interface RawAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

function raw(base: string, method: string, p: string, headers: Record<string, string>): Promise<RawAnswer> {
  const url = new URL(p, base);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path: url.pathname, method, headers }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('hub access', () => {
  it('refuses to start reachable from other machines without tokens', async () => {
    const failed = await run('docker', ['run', '--rm', IMAGE, 'hub']).then(
      () => null,
      (error: unknown) => error as { code: number; stderr: string },
    );
    expect(failed?.code).toBe(1);
    expect(failed?.stderr).toContain('HUB_SUBMIT_TOKENS');
  });

  it('refuses missing or wrong tokens, foreign Hosts, cross-origin POSTs, old cookies; logs no token', async () => {
    const h = await startHub({ env: { HUB_SESSION_TTL: '6s', HUB_PUBLIC_URL: 'https://hub.example.test' } });
    hubs.push(h);
    const u = h.url;

    // Submitting needs a submitter token.
    const anonymous = await hubCall(u, 'POST', 'api/reviews', PLAN, {});
    const required = expect.stringContaining('Authentication required');
    expect(anonymous).toMatchObject({ status: 401, body: { error: required } });
    const wrong = await hubCall(u, 'POST', 'api/reviews', PLAN, { authorization: 'Bearer not-a-token' });
    expect(wrong).toMatchObject({ status: 401, body: { error: 'Unknown token' } });
    expect((await hubCall(u, 'POST', 'api/reviews', PLAN, asReviewer)).status).toBe(403);
    const created = await hubCall(u, 'POST', 'api/reviews', PLAN, asSubmitter);
    expect(created.status).toBe(201);
    const id = created.body['id'] as string;
    // Review URLs are built on hub.public_url.
    expect(created.body['url']).toBe(`https://hub.example.test/r/${id}/`);

    // Reading and deciding need a reviewer token.
    for (const p of ['api/reviews', `r/${id}/api/plan`, 'api/events', 'api/stats']) {
      expect((await hubCall(u, 'GET', p, undefined, {})).status, p).toBe(401);
      expect((await hubCall(u, 'GET', p, undefined, { authorization: 'Bearer wrong' })).status, p).toBe(401);
      expect((await hubCall(u, 'GET', p, undefined, asSubmitter)).status, p).toBe(403);
    }
    expect((await hubCall(u, 'POST', `r/${id}/api/approve`, {}, asSubmitter)).status).toBe(403);
    expect((await hubCall(u, 'POST', `r/${id}/api/approve`, {}, {})).status).toBe(401);
    // A browser following a review link without a session gets the sign-in page.
    const page = await hubCall(u, 'GET', `r/${id}/`, undefined, {});
    expect(page.status).toBe(401);
    expect(page.body).toContain('<meta name="gatehouse-hub" content="sign-in">');
    // The waiter (submitter token) may read its decision; nobody else without a token.
    expect((await hubCall(u, 'GET', `api/reviews/${id}/decision`, undefined, asSubmitter)).status).toBe(204);
    expect((await hubCall(u, 'GET', `api/reviews/${id}/decision`, undefined, {})).status).toBe(401);
    expect((await hubCall(u, 'GET', 'api/reviews/nope/decision', undefined, asSubmitter)).status).toBe(404);

    // Hosts it does not serve are refused (DNS rebinding), with or without a token.
    for (const host of ['evil.example', 'evil.example:19432', 'hub.example.test.evil.example']) {
      const r = await raw(u, 'GET', 'api/reviews', { host, ...asReviewer });
      expect(r.status, host).toBe(403);
      expect((JSON.parse(r.body) as { error: string }).error).toContain('is not served here');
    }
    expect((await raw(u, 'GET', 'api/reviews', { host: 'hub.example.test', ...asReviewer })).status).toBe(200);
    // A review's own server answers the hub's public name too.
    expect((await raw(u, 'GET', `r/${id}/api/plan`, { host: 'hub.example.test', ...asReviewer })).status).toBe(200);
    expect((await raw(u, 'GET', `r/${id}/api/plan`, { host: 'evil.example', ...asReviewer })).status).toBe(403);
    const local = `localhost:${new URL(u).port}`;
    expect((await raw(u, 'GET', 'api/reviews', { host: local, ...asReviewer })).status).toBe(200);

    // Cross-origin POSTs are refused, valid token or not; the review stays pending.
    for (const p of [`r/${id}/api/approve`, 'api/reviews', 'api/session']) {
      const body = p === 'api/session' ? { token: REVIEWER_TOKEN } : PLAN;
      const r = await hubCall(u, 'POST', p, body, { ...asReviewer, ...asSubmitter, origin: 'https://evil.example' });
      expect(r, p).toMatchObject({ status: 403, body: { error: 'Cross-origin request refused' } });
    }
    expect((await hubCall(u, 'GET', `api/reviews/${id}/decision`, undefined, asSubmitter)).status).toBe(204);

    // The browser exchange: a reviewer token becomes an HttpOnly, SameSite=Strict (and here Secure) cookie.
    expect((await hubCall(u, 'POST', 'api/session', { token: SUBMIT_TOKEN }, {})).status).toBe(401);
    const signIn = await hubCall(u, 'POST', 'api/session', { token: REVIEWER_TOKEN }, {});
    expect(signIn.status).toBe(204);
    const setCookie = signIn.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(/httponly/i);
    expect(setCookie).toMatch(/samesite=strict/i);
    expect(setCookie).toMatch(/;\s*secure/i);
    const cookie = setCookie.split(';')[0] as string;
    expect((await hubCall(u, 'GET', 'api/reviews', undefined, { cookie })).status).toBe(200);
    const forged = { cookie: 'gatehouse_hub_session=forged' };
    expect((await hubCall(u, 'GET', 'api/reviews', undefined, forged)).status).toBe(401);
    await sleep(7_000);
    expect((await hubCall(u, 'GET', 'api/reviews', undefined, { cookie })).status).toBe(401);

    // A client carries its token to the hub; neither token nor cookie shows in the hub's log or the client's.
    const file = path.join(dir, 'plan.md');
    await writeFile(file, '# Logged plan\n');
    const client = startClient(['plan', file, '--timeout', '1s'], { hub: u, cwd: dir, home: dir });
    clients.push(client);
    const done = await client.exited;
    expect(done.code).toBe(3);
    expect(lastLine(done.stdout)).toMatchObject({ decision: 'timeout' });
    // A client with a token the hub does not know stops at once: exit 1, the reason on stderr, nothing on stdout.
    const refused = startClient(['plan', file], { hub: u, cwd: dir, home: dir, token: 'stolen-or-stale' });
    clients.push(refused);
    const stopped = await refused.exited;
    expect(stopped.code).toBe(1);
    expect(stopped.stdout).toBe('');
    expect(stopped.stderr).toContain('the hub refused POST /api/reviews: 401 Unknown token');
    expect(stopped.stderr).not.toContain('stolen-or-stale');

    const logs = await h.logs();
    expect(logs).toContain('review submitted');
    for (const secret of [SUBMIT_TOKEN, REVIEWER_TOKEN, cookie.split('=')[1] as string]) {
      expect(logs).not.toContain(secret);
      expect(done.stderr).not.toContain(secret);
    }
  });
});

describe('hub notifications', () => {
  const receiver = notificationReceiver();

  it('posts both events to JSON, Slack and ntfy targets; dead and hanging receivers delay nothing', async () => {
    const dead = await freePort();
    const at = (p: string, p2 = receiver.port) => `http://host.docker.internal:${p2}${p}`;
    const h = await startHub({
      env: {
        HUB_WEBHOOK_URLS: `${at('/json')},${at('/hang')}`,
        HUB_SLACK_WEBHOOK_URLS: at('/slack/T000/B000/secret-part'),
        HUB_NTFY_URLS: `${at('/ntfy')},${at('/down', dead)}`,
        HUB_NOTIFY_ATTEMPTS: '3',
        HUB_NOTIFY_RETRY_BASE: '100ms',
      },
      extraHosts: [{ host: 'host.docker.internal', ipAddress: 'host-gateway' }],
    });
    hubs.push(h);
    const file = path.join(dir, 'notify.md');
    await writeFile(file, '# Notify me\n\n1. Step\n');
    const client = startClient(['plan', file], { hub: h.url, cwd: dir, home: dir });
    clients.push(client);
    const url = await client.url;
    const id = /\/r\/([^/]+)\//.exec(url)?.[1];
    const what = (r: { path: string; body: string }) =>
      r.path === '/ntfy' ? r.body.slice(0, 14) : ((JSON.parse(r.body) as { event?: string }).event ?? 'text');
    const paths = () => receiver.received.map((r) => `${r.path} ${what(r)}`);
    const created = ['/json review.created', '/slack/T000/B000/secret-part text', '/ntfy Plan "Notify m'];
    await expect.poll(paths, { timeout: 30_000 }).toEqual(expect.arrayContaining(created));

    // Decided while the hanging and the dead receivers are still being retried.
    expect(await decide(h.url, id, 'deny', { feedback: 'Not yet' })).toBe(200);
    const done = await client.exited;
    expect(done.code).toBe(2);
    expect(lastLine(done.stdout)).toMatchObject({ decision: 'denied', feedback: 'Not yet' });
    await expect.poll(() => receiver.received.filter((r) => r.path === '/json').length, { timeout: 30_000 }).toBe(2);
    await expect.poll(() => receiver.received.length, { timeout: 30_000 }).toBe(6);

    const json = receiver.received
      .filter((r) => r.path === '/json')
      .map((r) => JSON.parse(r.body) as { event: string; review: unknown });
    expect(json.map((e) => e.event)).toEqual(['review.created', 'review.decided']);
    expect(json[0]?.review).toMatchObject({ id, url, kind: 'plan', title: 'Notify me', outcome: null, version: 1 });
    expect(json[1]?.review).toMatchObject({ id, url, outcome: 'denied' });
    const slack = receiver.received
      .filter((r) => r.path.startsWith('/slack'))
      .map((r) => JSON.parse(r.body) as { text: string });
    expect(slack[0]?.text).toContain(url);
    expect(slack[1]?.text).toContain('denied');
    const ntfy = receiver.received.filter((r) => r.path === '/ntfy');
    expect(ntfy[0]?.headers['click']).toBe(url);
    expect(ntfy[1]?.body).toContain('denied');

    // The dead receiver is given up after its attempts, counted and logged by origin only.
    const failed = async () =>
      ((await hubCall(h.url, 'GET', 'api/stats')).body['notifications'] as { failed: number }).failed;
    await expect.poll(failed, { timeout: 30_000 }).toBeGreaterThanOrEqual(2);
    const logs = await h.logs();
    expect(logs).toContain('notification given up');
    expect(logs).not.toContain('secret-part');
  });
});
