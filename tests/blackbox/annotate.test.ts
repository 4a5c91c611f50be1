// `gatehouse annotate FILE [--gate]` against the built image: in a container (remote mode, port 19432), and on a
// hub in a container with the CLI as its client. The browser side is tests/browser/annotate.test.ts.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  hubCall,
  lastLine,
  startClient,
  startHub,
  SUBMIT_TOKEN,
  type Client,
  type HubContainer,
} from '../support/hub.ts';
import { IMAGE } from '../support/image.ts';
import { postsUnderWayTogether } from '../support/raw-http.ts';
import { startReviewContainer, type ReviewContainer } from '../support/review-container.ts';

const run = promisify(execFile);
const NOTE = '# Design note: queues\n\nWe use one queue per tenant.\n';
const NOTE_FILE = { content: NOTE, target: '/work/docs/queues.md' };

const started: ReviewContainer[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((c) => c.stop()));
});

async function annotate(args: string[]): Promise<ReviewContainer> {
  const c = await startReviewContainer({
    command: ['annotate', 'docs/queues.md', ...args],
    files: [NOTE_FILE],
    readyLine: /Annotation review: http:\/\/localhost:19432\//,
  });
  started.push(c);
  return c;
}

async function post(base: string, p: string, body: unknown) {
  const r = await fetch(base + p, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

describe('gatehouse annotate in a container (remote mode, port 19432)', () => {
  it('without --gate: serves the document, takes the annotations as feedback only, exit 0', async () => {
    const c = await annotate([]);
    const document = (await (await fetch(`${c.url}api/document`)).json()) as Record<string, unknown>;
    expect(document).toEqual({ document: NOTE, file: 'docs/queues.md', gate: false, origin: 'claude-code' });
    // No gate: nothing to approve (no such route: the page's fallback answers, and nothing is decided).
    const approve = await fetch(`${c.url}api/approve`, {
      method: 'POST',
      body: '{}',
      headers: { 'content-type': 'application/json' },
    });
    expect(approve.headers.get('content-type')).toContain('text/html');
    await approve.body?.cancel();
    expect((await post(c.url, 'api/feedback', { feedback: 7 })).status).toBe(400);
    const feedback = '# Review of docs/queues.md\n\n> one queue per tenant\n\nWhy not one per region?\n';
    expect(await post(c.url, 'api/feedback', { feedback })).toEqual({ status: 200, body: { ok: true } });
    const done = await c.finish();
    expect(done.exitCode).toBe(0);
    expect(JSON.parse(done.stdout)).toEqual({ decision: 'feedback', feedback });
  });

  it('with --gate: approve or deny, the usual decision line and exit codes; one decision only', async () => {
    const c = await annotate(['--gate']);
    expect(((await (await fetch(`${c.url}api/document`)).json()) as Record<string, unknown>)['gate']).toBe(true);
    expect(await post(c.url, 'api/deny', { feedback: 'Name the queues.' })).toEqual({
      status: 200,
      body: { ok: true },
    });
    const done = await c.finish();
    expect(done.exitCode).toBe(2);
    expect(JSON.parse(done.stdout)).toEqual({ decision: 'denied', feedback: 'Name the queues.' });

    const approved = await annotate(['--gate', '--timeout', '10m']);
    const [first, second] = await postsUnderWayTogether(approved.url, [
      { path: 'api/approve', body: {} },
      { path: 'api/deny', body: {} },
    ]);
    expect([first.status, second.status].sort()).toEqual([200, 409]);
    const end = await approved.finish();
    expect(end.exitCode).toBe(first.status === 200 ? 0 : 2);
    expect(JSON.parse(end.stdout)).toEqual({ decision: first.status === 200 ? 'approved' : 'denied', feedback: null });
  });

  it('times out with decision "timeout" and exit 3', async () => {
    const c = await annotate(['--timeout', '1s']);
    const done = await c.finish();
    expect(done.exitCode).toBe(3);
    expect(JSON.parse(done.stdout)).toEqual({ decision: 'timeout', feedback: null });
  });

  it('startup errors: no file, a missing file, an empty file, a directory, an unknown flag → exit 1, nothing on stdout', async () => {
    const cases: [string, string][] = [
      ['annotate', 'no file given'],
      ['annotate /work/missing.md', 'cannot read /work/missing.md: no such file'],
      ['annotate EMPTY.md', 'EMPTY.md is empty: there is nothing to annotate'],
      ['annotate /work', 'cannot read /work: it is a directory'],
      ['annotate NOTE.md --bogus', 'unknown option --bogus'],
    ];
    const script = (command: string) =>
      `: > /work/EMPTY.md; printf '# N\\n' > /work/NOTE.md; exec gatehouse ${command}`;
    for (const [command, message] of cases) {
      const result = await run('docker', ['run', '--rm', '--entrypoint', 'sh', IMAGE, '-c', script(command)]).then(
        () => ({ code: 0, stdout: '', stderr: '' }),
        (error: unknown) => error as { code: number; stdout: string; stderr: string },
      );
      expect(result.code, message).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toContain(message);
    }
  });
});

describe('gatehouse annotate --hub', () => {
  let h: HubContainer;
  let dir: string;
  const clients: Client[] = [];
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'gatehouse-annotate-hub-'));
    await writeFile(path.join(dir, 'queues.md'), NOTE);
    h = await startHub();
  });
  afterAll(async () => {
    for (const c of clients) c.child.kill('SIGTERM');
    await (h as HubContainer | undefined)?.stop();
    await rm(dir, { recursive: true, force: true });
  });
  const client = (args: string[]) => {
    const c = startClient(['annotate', 'queues.md', ...args], { hub: h.url, cwd: dir, home: dir });
    clients.push(c);
    return c;
  };
  const idOf = (url: string) => /\/r\/([^/]+)\//.exec(url)?.[1] as string;

  it('submits the document; the hub serves it, lists it by kind, refuses a bad one, and its decision reaches the client', async () => {
    const asSubmitter = { authorization: `Bearer ${SUBMIT_TOKEN}` };
    const bad = await hubCall(h.url, 'POST', 'api/reviews', { kind: 'annotate', file: 'x.md' }, asSubmitter);
    expect(bad).toMatchObject({ status: 400, body: { error: 'Missing field document' } });
    const gated = await hubCall(
      h.url,
      'POST',
      'api/reviews',
      { kind: 'annotate', document: '# D\n', gate: 'yes' },
      asSubmitter,
    );
    expect(gated).toMatchObject({ status: 400, body: { error: 'Invalid field gate: must be true or false' } });

    const c = client(['--gate', '--session', 'notes']);
    const id = idOf(await c.url);
    const served = await hubCall(h.url, 'GET', `r/${id}/api/document`);
    expect(served.body).toEqual({ document: NOTE, file: 'queues.md', gate: true, origin: 'claude-code' });
    const inbox = await hubCall(h.url, 'GET', 'api/reviews');
    expect(inbox.body['pending']).toEqual([expect.objectContaining({ id, kind: 'annotate', title: 'queues.md' })]);
    expect((await hubCall(h.url, 'POST', `r/${id}/api/approve`, { feedback: 'Fine.' })).status).toBe(200);
    const done = await c.exited;
    expect(done.code).toBe(0);
    expect(lastLine(done.stdout)).toEqual({ decision: 'approved', feedback: 'Fine.' });
    const decided = await hubCall(h.url, 'GET', 'api/reviews');
    expect(decided.body['decided']).toEqual([expect.objectContaining({ id, outcome: 'approved' })]);

    // The next version of the session shows the one before it, and the hub's deadline is the kind's timeout.
    const v2 = client(['--session', 'notes', '--timeout', '2s']);
    const id2 = idOf(await v2.url);
    expect((await hubCall(h.url, 'GET', `r/${id2}/api/versions`)).body).toEqual({
      version: 2,
      previous: { id, version: 1, plan: NOTE, outcome: 'approved', feedback: 'Fine.' },
    });
    const timedOut = await v2.exited;
    expect(timedOut.code).toBe(3);
    expect(lastLine(timedOut.stdout)).toEqual({ decision: 'timeout', feedback: null });
  });
});
