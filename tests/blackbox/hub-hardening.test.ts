// What a team member holding a submit token could do to the hub before
// issue 27, each tried as a class of inputs against the built image: Host
// headers that are not plain host names, numbers past what the database
// reads back, rows that cannot be read, another submitter's reviews,
// malformed input.
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, hubCall, REVIEWER_TOKEN, startClient, startHub, SUBMIT_TOKEN } from '../support/hub.ts';
import type { HubContainer } from '../support/hub.ts';
import { close, listen } from '../../src/http/server.ts';
import { rawRequest } from '../support/raw-http.ts';

const run = promisify(execFile);
const PLAN = { kind: 'plan', plan: '# Hardening\n\n1. One\n', title: 'Hardening' };
const asSubmitter = { authorization: `Bearer ${SUBMIT_TOKEN}` };
const ALICE = `alice-${randomBytes(12).toString('hex')}`;
const BOB = `bob-${randomBytes(12).toString('hex')}`;

/** What the hub's notification targets received, by path. */
const received: { path: string; headers: IncomingHttpHeaders; body: string }[] = [];
let receiver: Server;
let hub: HubContainer;
beforeAll(async () => {
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers, body });
      res.end();
    });
  });
  const { port } = await listen(receiver, { port: 0, host: '0.0.0.0' });
  const at = (p: string) => `http://host.docker.internal:${port}${p}`;
  hub = await startHub({
    env: {
      HUB_ALLOWED_HOSTS: 'hub.lan',
      HUB_SUBMIT_TOKENS: `alice:${ALICE},bob:${BOB},${SUBMIT_TOKEN}`,
      HUB_WEBHOOK_URLS: at('/json'),
      HUB_SLACK_WEBHOOK_URLS: at('/slack'),
      HUB_NTFY_URLS: at('/ntfy'),
    },
    extraHosts: [{ host: 'host.docker.internal', ipAddress: 'host-gateway' }],
  });
}, 60_000);
afterAll(async () => {
  await hub.stop();
  await close(receiver, 0);
});

/** A submission sent with `host` as its Host header (fetch would not send a foreign one). */
function submitAs(host: string, body: object = PLAN) {
  return rawRequest(new URL('api/reviews', hub.url).href, {
    method: 'POST',
    headers: { host, 'content-type': 'application/json', ...asSubmitter },
    body: JSON.stringify(body),
  });
}

/** The inbox and the stats still answer, and no stored link leaves the hub's own names. */
async function expectHubServes(): Promise<void> {
  const list = await hubCall(hub.url, 'GET', 'api/reviews');
  expect(list.status).toBe(200);
  expect((await hubCall(hub.url, 'GET', 'api/stats')).status).toBe(200);
  const reviews = [...(list.body['pending'] as { url: string }[]), ...(list.body['decided'] as { url: string }[])];
  for (const { url } of reviews) expect(new URL(url).hostname).toMatch(/^(127\.0\.0\.1|localhost|hub\.lan)$/);
}

describe('hub Host headers', () => {
  it('refuses every Host that is not a valid host[:port] naming a served host, and links only to served names', async () => {
    const port = new URL(hub.url).port;
    const malformed = [
      'evil.example#.localhost',
      'evil.example@app.localhost',
      'a%20b.localhost',
      'a b.localhost',
      'app.localhost,evil.example',
      '[::1]evil',
      `localhost:${port}:1`,
      'localhost:99999',
      '127.1',
      'evil.example#hub.lan',
      'hub.lan@evil.example',
      'hub.lan.evil.example',
    ];
    for (const host of malformed) {
      const answer = await submitAs(host);
      expect(answer.status, host).toBe(403);
      expect(JSON.parse(answer.text), host).toMatchObject({ error: expect.stringContaining('is not served here') });
      const read = await rawRequest(new URL('api/reviews', hub.url).href, { headers: { host, ...asSubmitter } });
      expect(read.status, host).toBe(403);
    }
    // Served names (any case, with a port, a trailing dot) are linked as the origin the submitter used.
    for (const [host, origin] of [
      ['HUB.lan:8443', 'http://hub.lan:8443'],
      ['hub.lan.', 'http://hub.lan'],
      [`localhost:${port}`, `http://localhost:${port}`],
    ] as const) {
      const answer = await submitAs(host, { ...PLAN, timeoutMs: 1_000 });
      expect(answer.status, host).toBe(201);
      const { id, url } = JSON.parse(answer.text) as { id: string; url: string };
      expect(url).toBe(`${origin}/r/${id}/`);
    }
    // Their deadlines pass, recorded as timeouts; the hub keeps serving.
    await expect
      .poll(async () => ((await hubCall(hub.url, 'GET', 'api/reviews')).body['decided'] as unknown[]).length, {
        timeout: 10_000,
      })
      .toBe(3);
    await expectHubServes();
  });
});

describe('hub numbers and rows', () => {
  it('range-checks timeoutMs before storing it (400 past the documented maximum)', async () => {
    for (const timeoutMs of [2 ** 31, 2 ** 53, 9_007_199_254_740_991, 1e20, 1e300, 0, -5, 1.5, '60000']) {
      const answer = await hubCall(hub.url, 'POST', 'api/reviews', { ...PLAN, timeoutMs }, asSubmitter);
      expect(answer.status, String(timeoutMs)).toBe(400);
      expect(answer.body['error'], String(timeoutMs)).toMatch(/^Invalid field timeoutMs: must be an integer/);
    }
    const largest = await hubCall(hub.url, 'POST', 'api/reviews', { ...PLAN, timeoutMs: 2 ** 31 - 1 }, asSubmitter);
    expect(largest.status).toBe(201);
    expect((await hubCall(hub.url, 'GET', `api/reviews/${largest.body['id'] as string}/decision`)).status).toBe(204);
    await expectHubServes();
  });

  it('starts and serves with rows it cannot read: logs them, sets them aside, keeps the others', async () => {
    const ids: string[] = [];
    for (const title of ['keep', 'huge deadline', 'foreign link', 'bad payload']) {
      const body = { ...PLAN, title, ...(title === 'foreign link' && { timeoutMs: 3_000 }) };
      const created = await hubCall(hub.url, 'POST', 'api/reviews', body, asSubmitter);
      ids.push(created.body['id'] as string);
    }
    const [keep, huge, foreign, bad] = ids as [string, string, string, string];
    // What an older hub let into its database, written with the image's own node:sqlite.
    const tamper = `const { DatabaseSync } = require('node:sqlite');
      const db = new DatabaseSync('/data/hub.db');
      db.prepare('UPDATE reviews SET deadline = ? WHERE id = ?').run(2n ** 62n, ${JSON.stringify(huge)});
      db.prepare("UPDATE reviews SET base_url = 'http://evil.example#.localhost/' WHERE id = ?").run(${JSON.stringify(foreign)});
      db.prepare("UPDATE reviews SET payload = '{' WHERE id = ?").run(${JSON.stringify(bad)});
      db.close();`;
    await run('docker', ['exec', hub.id, 'node', '-e', tamper]);
    await hub.killAndStart();

    const list = await hubCall(hub.url, 'GET', 'api/reviews');
    expect(list.status).toBe(200);
    const pending = (list.body['pending'] as { id: string; url: string }[]).map((r) => r.id);
    expect(pending).toContain(keep);
    expect(pending).not.toContain(huge);
    expect((await hubCall(hub.url, 'GET', `r/${bad}/api/plan`)).status).toBe(404);
    // The review with a foreign stored link still times out; its link is rebuilt on the hub's own name.
    await expect
      .poll(async () => (await hubCall(hub.url, 'GET', `api/reviews/${foreign}/decision`)).status, {
        timeout: 10_000,
      })
      .toBe(200);
    const decided = (await hubCall(hub.url, 'GET', 'api/reviews')).body['decided'] as { id: string; url: string }[];
    expect(decided.find((r) => r.id === foreign)?.url).toBe(`http://localhost:19432/r/${foreign}/`);
    await expectHubServes();
    const logs = await hub.logs();
    expect(logs).toContain(huge);
    expect(logs).toContain('review set aside');
  });
});

describe('hub malformed input', () => {
  it('answers 400, never 500: bad gzip, an unusable save folder, a diff type the submitter did not send', async () => {
    const notGzip = await rawRequest(new URL('api/reviews', hub.url).href, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', ...asSubmitter },
      body: JSON.stringify(PLAN),
    });
    expect(notGzip.status).toBe(400);
    expect(JSON.parse(notGzip.text)).toEqual({ error: 'The request body does not match its Content-Encoding' });

    const plan = await hubCall(hub.url, 'POST', 'api/reviews', PLAN, asSubmitter);
    const deny = (customPath: string) =>
      hubCall(hub.url, 'POST', `r/${plan.body['id'] as string}/api/deny`, { planSave: { enabled: true, customPath } });
    const tooLong = 'Invalid field planSave.customPath: must be a folder (at most 3840 bytes in all and 255 per name)';
    expect(await deny(`~/${'a/'.repeat(2_000)}`)).toMatchObject({ status: 400, body: { error: tooLong } });
    await run('docker', ['exec', hub.id, 'sh', '-c', 'echo x > ~/a-file && ln -s /nowhere ~/dangling']);
    for (const customPath of ['~/a-file', '~/dangling', '~/a-file/plans']) {
      const answer = await deny(customPath);
      expect(answer, customPath).toMatchObject({
        status: 400,
        body: { error: expect.stringMatching(/must be a folder \(/) },
      });
    }
    expect((await deny(`~/${'n'.repeat(300)}`)).status).toBe(400);
    expect((await hubCall(hub.url, 'GET', `api/reviews/${plan.body['id'] as string}/decision`)).status).toBe(204);

    const code = {
      kind: 'code',
      diffType: 'uncommitted',
      diffs: { uncommitted: { rawPatch: '', gitRef: 'HEAD' }, staged: { error: 'index.lock exists' } },
      gitContext: { currentBranch: 'main', defaultBranch: 'main' },
    };
    const review = await hubCall(hub.url, 'POST', 'api/reviews', code, asSubmitter);
    const switchTo = (diffType: string) =>
      hubCall(hub.url, 'POST', `r/${review.body['id'] as string}/api/diff/switch`, { diffType });
    expect(await switchTo('last-commit')).toMatchObject({
      status: 400,
      body: { error: 'The submitter sent no last-commit diff to switch to' },
    });
    expect(await switchTo('staged')).toMatchObject({
      status: 400,
      body: { error: 'The submitter could not compute the staged diff: index.lock exists' },
    });
    expect((await switchTo('uncommitted')).status).toBe(200);
    expect(await hub.logs()).not.toContain('Internal server error');
  });
});

describe('hub submitters', () => {
  it('keeps each submitter to its own reviews, sessions and idempotency keys; reviewers see all, and who', async () => {
    const as = (token: string) => ({ authorization: `Bearer ${token}`, 'idempotency-key': 'same-key' });
    const submit = (token: string, title: string) =>
      hubCall(hub.url, 'POST', 'api/reviews', { ...PLAN, title, session: 'shared-session' }, as(token));
    const alice1 = await submit(ALICE, 'Alice v1');
    expect(alice1).toMatchObject({ status: 201, body: { version: 1 } });
    // Bob's same key and session name are his own: a new review, his version 1.
    const bob1 = await submit(BOB, 'Bob v1');
    expect(bob1).toMatchObject({ status: 201, body: { version: 1 } });
    expect(bob1.body['id']).not.toBe(alice1.body['id']);
    // Alice's retry finds her review; the unnamed token is a third submitter.
    expect(await submit(ALICE, 'Alice retried')).toMatchObject({ status: 200, body: { id: alice1.body['id'] } });
    const other = await submit(SUBMIT_TOKEN, 'Unnamed v1');
    expect(other).toMatchObject({ status: 201, body: { version: 1 } });
    const alice2 = await hubCall(
      hub.url,
      'POST',
      'api/reviews',
      { ...PLAN, title: 'Alice v2', session: 'shared-session' },
      { authorization: `Bearer ${ALICE}` },
    );
    expect(alice2).toMatchObject({ status: 201, body: { version: 2 } });
    const previous = await hubCall(hub.url, 'GET', `r/${alice2.body['id'] as string}/api/versions`);
    expect(previous.body['previous']).toMatchObject({ id: alice1.body['id'], version: 1 });

    // Decisions: each submitter reads its own only; another's is not found, as an unknown id.
    const decision = (id: unknown, token: string) =>
      hubCall(hub.url, 'GET', `api/reviews/${id as string}/decision`, undefined, { authorization: `Bearer ${token}` });
    expect((await decision(alice1.body['id'], ALICE)).status).toBe(204);
    for (const token of [BOB, SUBMIT_TOKEN]) {
      const refused = await decision(alice1.body['id'], token);
      expect(refused).toMatchObject({ status: 404, body: { error: 'No such review' } });
    }
    expect((await decision(bob1.body['id'], ALICE)).status).toBe(404);
    expect((await decision(alice1.body['id'], REVIEWER_TOKEN)).status).toBe(204);

    // The inbox shows who submitted each.
    const pending = (await hubCall(hub.url, 'GET', 'api/reviews')).body['pending'] as Record<string, unknown>[];
    const who = Object.fromEntries(pending.map((r) => [r['title'], r['submitter']]));
    const unnamed = `token-${createHash('sha256').update(SUBMIT_TOKEN).digest('hex').slice(0, 8)}`;
    expect(who).toMatchObject({ 'Alice v1': 'alice', 'Alice v2': 'alice', 'Bob v1': 'bob', 'Unnamed v1': unnamed });
  });
});

describe('hub notifications', () => {
  it('escapes a title for each target: no live Slack link or mention, no extra line, links on served names only', async () => {
    const titles = [
      '<!channel> deploy <https://evil.example|now>',
      'Fix & ship <@U123> @here',
      'Line one\nApproved by the admin',
    ];
    const ids: string[] = [];
    for (const title of titles) {
      const created = await submitAs('hub.lan', { ...PLAN, title });
      expect(created.status).toBe(201);
      ids.push((JSON.parse(created.text) as { id: string }).id);
    }
    const about = (id: string, path: string) => received.find((r) => r.path === path && r.body.includes(id));
    await expect
      .poll(() => ids.every((id) => ['/json', '/slack', '/ntfy'].every((p) => about(id, p))), {
        timeout: 15_000,
      })
      .toBe(true);
    ids.forEach((id, i) => {
      const title = titles[i] as string;
      const slack = (JSON.parse(about(id, '/slack')?.body ?? '') as { text: string }).text;
      // Slack reads <...> as links and mentions and & as an entity: none may come from the title.
      expect(slack.replace(`<http://hub.lan/r/${id}/>`, '')).not.toMatch(/[<>\n]|&(?!amp;|lt;|gt;)|@(?!\u200b)/);
      expect(slack).toContain(`http://hub.lan/r/${id}/`);
      const ntfy = about(id, '/ntfy');
      expect(ntfy?.headers['click']).toBe(`http://hub.lan/r/${id}/`);
      expect(ntfy?.body).not.toContain('\n');
      const json = JSON.parse(about(id, '/json')?.body ?? '') as { review: { title: string; url: string } };
      expect(json.review).toMatchObject({ title, url: `http://hub.lan/r/${id}/` });
    });
  });
});

describe('hub clients', () => {
  it('gives up on a hub that never acknowledged, names the variables, and claims no review on a signal', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'gatehouse-hub-client-'));
    try {
      const file = path.join(dir, 'plan.md');
      await writeFile(file, '# Unreachable\n');
      const nowhere = `http://127.0.0.1:${await freePort()}/`;
      const started = Date.now();
      const bounded = startClient(['plan', file], {
        hub: nowhere,
        cwd: dir,
        home: dir,
        env: { GATEHOUSE_HUB_CONNECT_TIMEOUT: '2s' },
      });
      const gaveUp = await bounded.exited;
      expect(gaveUp.code).toBe(1);
      expect(gaveUp.stdout).toBe('');
      expect(gaveUp.stderr).toContain(
        `the hub at ${nowhere} (GATEHOUSE_HUB_URL) did not acknowledge the review within 2 s (GATEHOUSE_HUB_CONNECT_TIMEOUT)`,
      );
      expect(Date.now() - started).toBeLessThan(15_000);

      // Signalled once it is retrying the submission.
      const signalled = startClient(['plan', file], { hub: nowhere, cwd: dir, home: dir });
      await new Promise<void>((resolve) => {
        let seen = '';
        signalled.child.stderr?.on('data', (d: Buffer) => {
          seen += d.toString();
          if (seen.includes('hub unreachable')) resolve();
        });
      });
      signalled.child.kill('SIGTERM');
      const stopped = await signalled.exited;
      expect(stopped.code).toBe(143);
      expect(stopped.stderr).toContain('before the hub acknowledged the review: none was submitted');
      expect(stopped.stderr).not.toContain('stays on the hub');

      const tokenless = await startClient(['plan', file], { hub: hub.url, cwd: dir, home: dir, token: '' }).exited;
      expect(tokenless.code).toBe(1);
      expect(tokenless.stderr).toContain('401');
      expect(tokenless.stderr).toContain('set GATEHOUSE_HUB_TOKEN to a submitter token of this hub');
      const asReviewer = await startClient(['plan', file], { hub: hub.url, cwd: dir, home: dir, token: REVIEWER_TOKEN })
        .exited;
      expect(asReviewer.code).toBe(1);
      expect(asReviewer.stderr).toContain('403');
      expect(asReviewer.stderr).toContain('GATEHOUSE_HUB_TOKEN must be a submitter token');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
