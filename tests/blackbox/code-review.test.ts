import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DIFF_SWITCHES, expectedGitContext, TempRepo } from '../support/git-repo.ts';
import { startReviewContainer, type ReviewContainer } from '../support/review-container.ts';

/**
 * The code review server in the image (no git binary inside), reviewing a
 * repository built on the host with the real git CLI and mounted read-only
 * at /work: every diff type must equal what the host's git prints.
 */

const run = promisify(execFile);
const started: ReviewContainer[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((c) => c.stop()));
});

let repo: TempRepo;
const utf8 = (latin1: string) => Buffer.from(latin1, 'latin1').toString('utf8');

beforeAll(() => {
  repo = TempRepo.init();
  repo
    .write('README.md', '# Demo\n\nSome text.\n')
    .write('src/app.ts', Array.from({ length: 30 }, (_, i) => `export const v${i} = ${i};\n`).join(''));
  repo
    .write('src/old-name.ts', Array.from({ length: 20 }, (_, i) => `line ${i}\n`).join(''))
    .write('gone.txt', 'to be deleted\n');
  repo.write('assets/logo.png', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0]));
  repo.commitAll('base');
  // The base commit packed, the rest loose: both kinds of object store are read.
  repo.git('gc', '-q');
  repo.git('checkout', '-q', '-b', 'feature');
  repo.write(
    'src/app.ts',
    Array.from({ length: 30 }, (_, i) => `export const v${i} = ${i === 12 ? 'twelve' : i};\n`).join(''),
  );
  repo.git('mv', 'src/old-name.ts', 'src/new-name.ts');
  repo.git('rm', '-q', 'gone.txt');
  repo.write('assets/logo.png', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 1]));
  repo.commitAll('feature work');
  // Work in progress: staged, then unstaged on top, plus an untracked file git leaves out.
  repo.write('docs/notes.md', 'Héllo wörld\n');
  repo.git('add', 'docs/notes.md');
  repo.write('README.md', '# Demo\n\nSome text, edited.\n').write('untracked.txt', 'never shown\n');
  // The container runs as uid 1000: everything must be readable by others.
  execFileSync('chmod', ['-R', 'a+rX', repo.dir]);
});

afterAll(() => repo.cleanup());

async function review(extra: string[] = [], readyLine?: RegExp | null) {
  const c = await startReviewContainer({
    command: ['code-review', '--repo', '/work', ...extra],
    binds: [{ source: repo.dir, target: '/work', mode: 'ro' }],
    readyLine,
  });
  started.push(c);
  return c;
}

async function call(base: string, method: string, p: string, body?: unknown, headers: Record<string, string> = {}) {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    (init.headers as Record<string, string>)['content-type'] = 'application/json';
  }
  const r = await fetch(base + p, init);
  return {
    status: r.status,
    nosniff: r.headers.get('x-content-type-options'),
    body: (await r.json()) as Record<string, unknown>,
  };
}

describe('code review in a container (remote mode, port 19432, repository mounted read-only)', () => {
  it('serves every diff type exactly as git prints it, refuses bad requests, then returns the feedback', async () => {
    const c = await review();
    const u = c.url;

    const diff = await call(u, 'GET', 'api/diff');
    expect(diff).toMatchObject({ status: 200, nosniff: 'nosniff' });
    expect(diff.body).toEqual({
      rawPatch: utf8(repo.diff('HEAD')),
      gitRef: 'HEAD',
      origin: 'claude-code',
      diffType: 'uncommitted',
      sharingEnabled: true,
      gitContext: expectedGitContext('feature'),
    });
    expect(diff.body['rawPatch']).toContain('+Héllo wörld');
    expect(diff.body['rawPatch']).not.toContain('untracked');

    for (const [diffType, gitRef, canonical, args] of DIFF_SWITCHES) {
      const expected = utf8(repo.diff(...args));
      expect(await call(u, 'POST', 'api/diff/switch', { diffType }), diffType).toEqual({
        status: 200,
        nosniff: 'nosniff',
        body: { rawPatch: expected, gitRef, diffType: canonical },
      });
      const later = await call(u, 'GET', 'api/diff');
      expect([later.body['rawPatch'], later.body['gitRef'], later.body['diffType']]).toEqual([
        expected,
        gitRef,
        canonical,
      ]);
    }
    const lastCommit = await call(u, 'POST', 'api/diff/switch', { diffType: 'last-commit' });
    expect(lastCommit.body['rawPatch']).toContain(
      'similarity index 100%\nrename from src/old-name.ts\nrename to src/new-name.ts\n',
    );
    expect(lastCommit.body['rawPatch']).toContain('Binary files a/assets/logo.png and b/assets/logo.png differ\n');

    const badSwitches: [unknown, string][] = [
      [{}, 'Missing diffType'],
      [{ diffType: 'bogus' }, 'Unknown diffType: bogus'],
      [{ diffType: 7 }, 'Invalid field diffType: must be a string (one of uncommitted, staged, last-commit, vs main)'],
      ['{oops', 'Invalid JSON body'],
    ];
    for (const [body, error] of badSwitches) {
      expect(await call(u, 'POST', 'api/diff/switch', body)).toMatchObject({ status: 400, body: { error } });
    }
    const annotation = {
      id: 'n1',
      type: 'concern',
      filePath: 'src/app.ts',
      lineStart: 13,
      lineEnd: 13,
      side: 'new',
      text: 'Why a string?',
    };
    const badFeedback: [unknown, string][] = [
      [{ feedback: 1 }, 'Invalid field feedback: must be a string'],
      [{ annotations: {} }, 'Invalid field annotations: must be an array'],
      [
        { annotations: [{ ...annotation, type: 'nit' }] },
        'Invalid field annotations[0].type: must be one of comment, suggestion, concern',
      ],
      [
        { annotations: [annotation, { ...annotation, side: 'both' }] },
        'Invalid field annotations[1].side: must be one of old, new',
      ],
      [{ annotations: [{ ...annotation, lineStart: undefined }] }, 'Missing field annotations[0].lineStart'],
      [{ agentSwitch: [] }, 'Invalid field agentSwitch: must be a string'],
    ];
    for (const [body, error] of badFeedback) {
      expect(await call(u, 'POST', 'api/feedback', body)).toMatchObject({ status: 400, body: { error } });
    }
    expect(await call(u, 'POST', 'api/feedback', { feedback: 'x' }, { origin: 'http://evil.example' })).toMatchObject({
      status: 403,
      body: { error: 'Cross-origin request refused' },
    });
    expect(await call(u, 'GET', 'api/agents')).toMatchObject({ status: 200, body: { agents: [] } });

    const decision = { feedback: 'Looks good apart from one thing', annotations: [annotation], agentSwitch: 'build' };
    expect(await call(u, 'POST', 'api/feedback', decision)).toMatchObject({ status: 200, body: { ok: true } });
    const { exitCode, stdout } = await c.finish();
    expect(exitCode).toBe(0);
    expect(stdout).toBe(`${JSON.stringify(decision)}\n`);
  });

  it('serves lines of a file in the current diff from the side it compares, and refuses the rest', async () => {
    const c = await review();
    const u = c.url;
    const lines = (query: string) => call(u, 'GET', `api/diff/lines?${query}`);
    expect(await lines('path=README.md&side=old&start=1&end=10')).toEqual({
      status: 200,
      nosniff: 'nosniff',
      body: { path: 'README.md', side: 'old', start: 1, lines: ['# Demo', '', 'Some text.'], totalLines: 3 },
    });
    expect((await lines('path=README.md&side=new&start=3&end=3')).body).toMatchObject({
      lines: ['Some text, edited.'],
    });
    expect((await lines(`path=${encodeURIComponent('docs/notes.md')}&side=new&start=1&end=1`)).body).toMatchObject({
      lines: ['Héllo wörld'],
    });

    await call(u, 'POST', 'api/diff/switch', { diffType: 'last-commit' });
    expect((await lines('path=src/app.ts&side=old&start=12&end=14')).body).toMatchObject({
      lines: ['export const v11 = 11;', 'export const v12 = 12;', 'export const v13 = 13;'],
      totalLines: 30,
    });
    expect((await lines('path=src/app.ts&side=new&start=13&end=13')).body).toMatchObject({
      lines: ['export const v12 = twelve;'],
    });
    expect((await lines('path=src/new-name.ts&side=new&start=20&end=25')).body).toMatchObject({
      lines: ['line 19'],
      totalLines: 20,
    });
    expect((await lines('path=src/old-name.ts&side=old&start=1&end=1')).body).toMatchObject({ lines: ['line 0'] });

    const refused: [string, number, string][] = [
      ['side=new&start=1&end=2', 400, 'Missing path parameter'],
      ['path=src/app.ts&side=left&start=1&end=2', 400, 'Invalid parameter side: must be one of old, new'],
      ['path=src/app.ts&side=new&start=0&end=2', 400, 'Invalid parameter start: must be an integer ≥ 1'],
      ['path=src/app.ts&side=new&start=3&end=2', 400, 'Invalid parameter end: must be an integer ≥ start'],
      ['path=src/app.ts&side=new&start=1&end=9000', 400, 'Invalid range: at most 5000 lines per request'],
      [
        'path=src/app.ts&side=new&start=40&end=50',
        400,
        'Invalid range: line 40 is past the end of the file (30 lines)',
      ],
      ['path=README.md&side=new&start=1&end=2', 404, 'Not in the current diff on the new side: README.md'],
      ['path=src/old-name.ts&side=new&start=1&end=2', 404, 'Not in the current diff on the new side: src/old-name.ts'],
      ['path=untracked.txt&side=new&start=1&end=2', 404, 'Not in the current diff on the new side: untracked.txt'],
      ['path=/etc/passwd&side=new&start=1&end=2', 404, 'Not in the current diff on the new side: /etc/passwd'],
      ['path=assets/logo.png&side=old&start=1&end=2', 400, 'Binary file, no lines to show: assets/logo.png'],
    ];
    for (const [query, status, error] of refused) {
      expect(await lines(query), query).toEqual({ status, nosniff: 'nosniff', body: { error } });
    }
  });

  it('ends with a timeout decision and exit 3', async () => {
    const c = await review(['--timeout', '2s']);
    const { exitCode, stdout } = await c.finish();
    expect(exitCode).toBe(3);
    expect(JSON.parse(stdout)).toEqual({ decision: 'timeout', feedback: null, annotations: [], agentSwitch: null });
  });

  it('refuses to start on a folder that is not a git repository', async () => {
    const c = await startReviewContainer({
      command: [],
      shell: 'gatehouse code-review --repo /tmp; echo "exited $?" >&2; sleep 60',
      readyLine: /exited \d+/,
    });
    started.push(c);
    const { stdout, stderr } = await run('docker', ['logs', c.id]);
    expect(stdout).toBe('');
    expect(stderr).toContain('gatehouse code-review: Not a git repository: /tmp\nexited 1\n');
  });
});
