import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedGitContext, TempRepo } from '../support/git-repo.ts';
import { decide, hubCall, lastLine, REVIEWER_TOKEN, startClient, startHub, SUBMIT_TOKEN } from '../support/hub.ts';
import type { Client, HubContainer } from '../support/hub.ts';
import { imageForm, PNG } from '../support/images.ts';

const asReviewer = { authorization: `Bearer ${REVIEWER_TOKEN}` };
const asSubmitter = { authorization: `Bearer ${SUBMIT_TOKEN}` };
let h: HubContainer;
let dir: string;
const clients: Client[] = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'gatehouse-hub-reviews-'));
  h = await startHub();
});
afterAll(async () => {
  for (const c of clients) c.child.kill('SIGTERM');
  await (h as HubContainer | undefined)?.stop();
  await rm(dir, { recursive: true, force: true });
});

function client(args: string[], options: { cwd?: string; stdin?: string } = {}): Client {
  const c = startClient(args, { hub: h.url, cwd: options.cwd ?? dir, home: dir, stdin: options.stdin });
  clients.push(c);
  return c;
}

const idOf = (url: string) => /\/r\/([^/]+)\//.exec(url)?.[1] as string;

describe('reviews on the hub keep the review server contract', () => {
  it('serves a code review computed by the client: diff, switch, feedback; the client prints it', async () => {
    const repo = TempRepo.init('main');
    try {
      repo.write('app.txt', 'one\n').commitAll('first');
      repo.write('app.txt', 'one\ntwo\n').commitAll('second');
      repo.write('app.txt', 'one\ntwo\nthree\n');
      const c = client(['code-review', '--session', 'cr-1'], { cwd: repo.dir });
      const id = idOf(await c.url);
      const diff = await hubCall(h.url, 'GET', `r/${id}/api/diff`);
      expect(diff.status).toBe(200);
      expect(diff.body).toMatchObject({ gitRef: 'HEAD', origin: 'claude-code', diffType: 'uncommitted' });
      expect(diff.body['sharingEnabled']).toBe(true);
      expect(diff.body['gitContext']).toEqual(expectedGitContext('main'));
      expect(diff.body['rawPatch']).toBe(repo.diff('HEAD'));
      const switched = await hubCall(h.url, 'POST', `r/${id}/api/diff/switch`, { diffType: 'last-commit' });
      const lastCommit = { rawPatch: repo.diff('HEAD~1..HEAD'), gitRef: 'HEAD~1..HEAD', diffType: 'last-commit' };
      expect(switched.body).toEqual(lastCommit);
      expect((await hubCall(h.url, 'GET', `r/${id}/api/diff`)).body['diffType']).toBe('last-commit');
      const unknown = await hubCall(h.url, 'POST', `r/${id}/api/diff/switch`, { diffType: 'nope' });
      expect(unknown).toMatchObject({ status: 400, body: { error: 'Unknown diffType: nope' } });
      // The hub has the patches, not the files: revealing lines around a hunk says why it cannot.
      const lines = await hubCall(h.url, 'GET', `r/${id}/api/diff/lines?path=app.txt&side=new&start=1&end=2`);
      expect(lines).toMatchObject({ status: 501, body: { error: expect.stringContaining('submitted patch only') } });
      // The plan endpoint belongs to plan reviews: here it is the page, as on a code review server.
      expect((await hubCall(h.url, 'GET', `r/${id}/api/plan`)).headers.get('content-type')).toMatch(/^text\/html/);

      const annotations = [
        { id: 'a1', type: 'concern', filePath: 'app.txt', lineStart: 3, lineEnd: 3, side: 'new', text: 'Why three?' },
      ];
      const sent = await hubCall(h.url, 'POST', `r/${id}/api/feedback`, { feedback: 'One question', annotations });
      expect(sent.body).toEqual({ ok: true });
      expect((await hubCall(h.url, 'POST', `r/${id}/api/feedback`, { feedback: 'again' })).status).toBe(409);
      const done = await c.exited;
      expect(done.code).toBe(0);
      expect(lastLine(done.stdout)).toEqual({ feedback: 'One question', annotations, agentSwitch: null });
    } finally {
      repo.cleanup();
    }
  });

  it('answers the Claude Code hook through the hub, versions keyed by session_id', async () => {
    const event = (plan: string) =>
      JSON.stringify({
        session_id: 'claude-session-7',
        cwd: dir,
        permission_mode: 'plan',
        hook_event_name: 'PermissionRequest',
        tool_name: 'ExitPlanMode',
        tool_input: { plan, planFilePath: `${dir}/.claude/plans/hooked.md` },
      });
    const first = client(['hook', 'claude-code'], { stdin: event('# Hooked\n\n1. A\n') });
    const firstId = idOf(await first.url);
    const shown = (await hubCall(h.url, 'GET', `r/${firstId}/api/plan`)).body;
    expect(shown).toMatchObject({ plan: '# Hooked\n\n1. A\n', permissionMode: 'plan', origin: 'claude-code' });
    await decide(h.url, firstId, 'deny', { feedback: 'Add B' });
    const denied = await first.exited;
    expect(denied.code).toBe(0);
    const deny = { behavior: 'deny', message: 'Add B' };
    const hookAnswer = (decision: unknown) => ({
      hookSpecificOutput: { hookEventName: 'PermissionRequest', decision },
    });
    expect(lastLine(denied.stdout)).toEqual(hookAnswer(deny));

    const second = client(['hook', 'claude-code'], { stdin: event('# Hooked\n\n1. A\n2. B\n') });
    const secondId = idOf(await second.url);
    expect((await hubCall(h.url, 'GET', `r/${secondId}/api/versions`)).body).toEqual({
      version: 2,
      previous: { id: firstId, version: 1, plan: '# Hooked\n\n1. A\n', outcome: 'denied', feedback: 'Add B' },
    });
    await decide(h.url, secondId, 'approve', { permissionMode: 'acceptEdits' });
    const setMode = { type: 'setMode', mode: 'acceptEdits', destination: 'session' };
    // The hub stores the decision; the client encodes the answer for its own event.
    const updatedInput = { plan: '# Hooked\n\n1. A\n2. B\n', planFilePath: `${dir}/.claude/plans/hooked.md` };
    const allowed = hookAnswer({ behavior: 'allow', updatedInput, updatedPermissions: [setMode] });
    expect(lastLine((await second.exited).stdout)).toEqual(allowed);
  });

  it('shows a review only the images uploaded with it', async () => {
    const submit = (title: string) =>
      hubCall(h.url, 'POST', 'api/reviews', { kind: 'plan', plan: `# ${title}\n`, title }, asSubmitter);
    const a = (await submit('Images A')).body['id'] as string;
    const b = (await submit('Images B')).body['id'] as string;
    const upload = await fetch(new URL(`r/${a}/api/upload`, h.url), {
      method: 'POST',
      body: imageForm(PNG),
      headers: asReviewer,
    });
    expect(upload.status).toBe(200);
    const stored = ((await upload.json()) as { path: string }).path;
    const image = (id: string, p: string) =>
      fetch(new URL(`r/${id}/api/image?path=${encodeURIComponent(p)}`, h.url), { headers: asReviewer });
    const own = await image(a, stored);
    expect(own.status).toBe(200);
    expect(Buffer.from(await own.arrayBuffer())).toEqual(PNG);
    expect(await image(a, path.basename(stored)).then((r) => r.status)).toBe(200);
    for (const p of [stored, `../${a}/${path.basename(stored)}`, '/data/hub.db', '../../hub.db', '/etc/passwd']) {
      const other = await image(b, p);
      expect(other.status, p).toBe(404);
      expect(await other.json()).toEqual({ error: 'File not found' });
    }
  });

  it('refuses bad submissions naming the field, and answers a retried submission with its review', async () => {
    const post = (body: unknown, headers: Record<string, string> = {}) =>
      hubCall(h.url, 'POST', 'api/reviews', body, { ...asSubmitter, ...headers });
    const refused = (error: unknown) => ({ status: 400, body: { error } });
    expect(await post({})).toMatchObject({ status: 400, body: { error: 'Missing field kind' } });
    expect(await post({ kind: 'poem' })).toMatchObject(
      refused('Invalid field kind: must be one of plan, code, annotate'),
    );
    expect(await post({ kind: 'plan' })).toMatchObject({ status: 400, body: { error: 'Missing field plan' } });
    const blank = refused('Invalid field plan: must be a non-empty string');
    expect(await post({ kind: 'plan', plan: '  ' })).toMatchObject(blank);
    const negative = refused(expect.stringContaining('timeoutMs'));
    expect(await post({ kind: 'plan', plan: 'x', timeoutMs: -1 })).toMatchObject(negative);
    const noDiff = { kind: 'code', diffType: 'uncommitted', diffs: {} };
    expect(await post(noDiff)).toMatchObject(refused('Missing field diffs.uncommitted'));
    expect(await post([1])).toMatchObject({ status: 400, body: { error: 'Request body must be a JSON object' } });
    const broken = await fetch(new URL('api/reviews', h.url), {
      method: 'POST',
      body: '{"kind":',
      headers: { ...asSubmitter, 'content-type': 'application/json' },
    });
    expect(broken.status).toBe(400);
    expect(await broken.json()).toEqual({ error: 'Invalid JSON body' });
    const form = await fetch(new URL('api/reviews', h.url), {
      method: 'POST',
      body: 'kind=plan',
      headers: { ...asSubmitter, 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(form.status).toBe(415);
    const once = await post({ kind: 'plan', plan: '# Once\n' }, { 'idempotency-key': 'retry-1' });
    const again = await post({ kind: 'plan', plan: '# Once\n' }, { 'idempotency-key': 'retry-1' });
    expect(once.status).toBe(201);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(once.body);
    const waitAbc = `api/reviews/${String(once.body['id'])}/decision?wait=abc`;
    const badWait = await hubCall(h.url, 'GET', waitAbc, undefined, asSubmitter);
    expect(badWait.status).toBe(400);
  });
});
