// What a team member holding a submit token could do to the hub before
// issue 27, each tried as a class of inputs against the built image: Host
// headers that are not plain host names, numbers past what the database
// reads back, rows that cannot be read.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hubCall, startHub, SUBMIT_TOKEN, type HubContainer } from '../support/hub.ts';
import { rawRequest } from '../support/raw-http.ts';

const run = promisify(execFile);
const PLAN = { kind: 'plan', plan: '# Hardening\n\n1. One\n', title: 'Hardening' };
const asSubmitter = { authorization: `Bearer ${SUBMIT_TOKEN}` };

let hub: HubContainer;
beforeAll(async () => {
  hub = await startHub({ env: { HUB_ALLOWED_HOSTS: 'hub.lan' } });
}, 60_000);
afterAll(() => hub.stop());

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
