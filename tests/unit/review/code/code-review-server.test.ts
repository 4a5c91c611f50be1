import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { runCodeReview } from '../../../../src/review/code/command.ts';
import { DIFF_SWITCHES, expectedGitContext, GIT_ARGS, TempRepo } from '../../../support/git-repo.ts';
import { PNG } from '../../../support/images.ts';
import { capture } from '../../../support/review.ts';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

/** A repo on `feature` (branched from main) with committed, staged and unstaged changes. */
function sampleRepo(): TempRepo {
  const r = TempRepo.init();
  cleanups.push(() => r.cleanup());
  r.write('a.txt', 'one\ntwo\nthree\n').write('src/b.ts', 'export const b = 1;\n').commitAll('base');
  r.git('checkout', '-q', '-b', 'feature');
  r.write('src/b.ts', 'export const b = 2;\n').write('c.md', '# c\n').commitAll('feature');
  r.write('a.txt', 'one\nTWO\nthree\n').write('staged.txt', 'staged\n');
  r.git('add', 'staged.txt');
  r.write('untracked.txt', 'not shown\n');
  return r;
}

async function start(repo: string, extra: string[] = [], env: NodeJS.ProcessEnv = {}) {
  const root = mkdtempSync(path.join(os.tmpdir(), 'gatehouse-code-review-'));
  cleanups.push(() => rmSync(root, { recursive: true, force: true }));
  const stdout = capture();
  const stderr = capture();
  const controller = new AbortController();
  let resolveUrl!: (url: string) => void;
  const urlReady = new Promise<string>((resolve) => (resolveUrl = resolve));
  const exit = runCodeReview(
    {
      argv: ['--repo', repo, ...extra],
      env: {
        HOME: root,
        BROWSER: 'true',
        LOG_LEVEL: 'silent',
        GATEHOUSE_UPLOAD_DIR: path.join(root, 'uploads'),
        ...env,
      },
      cwd: root,
      stdin: new PassThrough(),
      stdout,
      stderr,
      shutdown: controller.signal,
    },
    resolveUrl,
  );
  cleanups.push(() => controller.abort('SIGTERM'));
  const url = await Promise.race([
    urlReady,
    exit.then((code) => Promise.reject(new Error(`exited ${code}: ${stderr.text()}`))),
  ]);
  return { url, exit, stdout, stderr, root };
}

const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

describe('code review server', () => {
  it('serves the uncommitted diff with its git context', async () => {
    const r = sampleRepo();
    const { url } = await start(r.dir);
    const response = await fetch(`${url}api/diff`);
    expect(response.status).toBe(200);
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await response.json()).toEqual({
      rawPatch: r.diff(...GIT_ARGS.uncommitted),
      gitRef: 'HEAD',
      origin: 'claude-code',
      diffType: 'uncommitted',
      sharingEnabled: true,
      gitContext: expectedGitContext('feature'),
    });
  });

  it('switches diff types (branch = vs main) and later GETs follow the switch', async () => {
    const r = sampleRepo();
    const { url } = await start(r.dir);
    for (const [diffType, gitRef, canonical, args] of DIFF_SWITCHES) {
      const response = await post(`${url}api/diff/switch`, { diffType });
      expect(response.status).toBe(200);
      const expected = r.diff(...args);
      expect(await response.json()).toEqual({ rawPatch: expected, gitRef, diffType: canonical });
      const later = (await (await fetch(`${url}api/diff`)).json()) as {
        rawPatch: string;
        gitRef: string;
        diffType: string;
      };
      expect([later.rawPatch, later.gitRef, later.diffType]).toEqual([expected, gitRef, canonical]);
    }
  });

  it('serves images from the reviewed work tree (given as a subfolder) and lists no agents for Claude Code', async () => {
    const r = sampleRepo();
    r.write('docs/shot.png', PNG);
    const { url } = await start(`${r.dir}/src`);
    const image = await fetch(`${url}api/image?path=docs/shot.png`);
    expect([image.status, image.headers.get('content-type')]).toEqual([200, 'image/png']);
    expect(Buffer.from(await image.arrayBuffer())).toEqual(PNG);
    expect(await (await fetch(`${url}api/agents`)).json()).toEqual({ agents: [] });
    const diff = (await (await fetch(`${url}api/diff`)).json()) as { rawPatch: string };
    expect(diff.rawPatch).toBe(r.diff('HEAD'));
  });

  it('starts on --diff-type', async () => {
    const r = sampleRepo();
    const { url } = await start(r.dir, ['--diff-type', 'branch']);
    const body = (await (await fetch(`${url}api/diff`)).json()) as {
      diffType: string;
      gitRef: string;
      rawPatch: string;
    };
    expect([body.diffType, body.gitRef, body.rawPatch]).toEqual(['vs main', 'main..HEAD', r.diff('main..HEAD')]);
  });

  it('refuses bad switch bodies with 400 and keeps the current diff', async () => {
    const r = sampleRepo();
    const { url } = await start(r.dir);
    const rows: [unknown, string][] = [
      [{}, 'Missing diffType'],
      [{ diffType: null }, 'Missing diffType'],
      ['', 'Missing diffType'],
      [{ diffType: 'bogus' }, 'Unknown diffType: bogus'],
      [{ diffType: '' }, 'Unknown diffType: '],
      [{ diffType: 42 }, 'Invalid field diffType: must be a string (one of uncommitted, staged, last-commit, vs main)'],
      [
        { diffType: ['staged'] },
        'Invalid field diffType: must be a string (one of uncommitted, staged, last-commit, vs main)',
      ],
      [[1], 'Request body must be a JSON object'],
      ['{"diffType":', 'Invalid JSON body'],
    ];
    for (const [body, error] of rows) {
      const response = await post(`${url}api/diff/switch`, body);
      expect({ status: response.status, body: await response.json() }).toEqual({ status: 400, body: { error } });
    }
    expect(((await (await fetch(`${url}api/diff`)).json()) as { diffType: string }).diffType).toBe('uncommitted');
  });

  it('validates feedback field by field, keeps waiting, then returns the decision on stdout and in --decision-file', async () => {
    const r = sampleRepo();
    const { url, exit, stdout, root } = await start(r.dir, ['--decision-file', 'out/decision.json']);
    const good = { id: 'a1', type: 'comment', filePath: 'a.txt', lineStart: 2, lineEnd: 2, side: 'new', text: 'why?' };
    const rows: [unknown, string][] = [
      [{ feedback: 3 }, 'Invalid field feedback: must be a string'],
      [{ agentSwitch: false }, 'Invalid field agentSwitch: must be a string'],
      [{ annotations: 'x' }, 'Invalid field annotations: must be an array'],
      [{ annotations: [good, 7] }, 'Invalid field annotations[1]: must be an object'],
      [{ annotations: [{ ...good, id: undefined }] }, 'Missing field annotations[0].id'],
      [
        { annotations: [good, { ...good, type: 'praise' }] },
        'Invalid field annotations[1].type: must be one of comment, suggestion, concern',
      ],
      [{ annotations: [{ ...good, filePath: 1 }] }, 'Invalid field annotations[0].filePath: must be a string'],
      [
        { annotations: [{ ...good, lineStart: '2' }] },
        'Invalid field annotations[0].lineStart: must be an integer ≥ 1',
      ],
      [{ annotations: [{ ...good, lineStart: 0 }] }, 'Invalid field annotations[0].lineStart: must be an integer ≥ 1'],
      [{ annotations: [{ ...good, lineEnd: 1 }] }, 'Invalid field annotations[0].lineEnd: must be an integer ≥ 2'],
      [{ annotations: [{ ...good, side: 'left' }] }, 'Invalid field annotations[0].side: must be one of old, new'],
      [{ annotations: [{ ...good, text: {} }] }, 'Invalid field annotations[0].text: must be a string'],
      [
        { annotations: [{ ...good, suggestedCode: 5 }] },
        'Invalid field annotations[0].suggestedCode: must be a string',
      ],
    ];
    for (const [body, error] of rows) {
      const response = await post(`${url}api/feedback`, body);
      expect({ status: response.status, body: await response.json() }).toEqual({ status: 400, body: { error } });
    }
    const crossSite = await post(`${url}api/feedback`, { feedback: 'x' }, { origin: 'https://evil.example' });
    expect({ status: crossSite.status, body: await crossSite.json() }).toEqual({
      status: 403,
      body: { error: 'Cross-origin request refused' },
    });

    const suggestion = {
      id: 's1',
      type: 'suggestion',
      filePath: 'src/b.ts',
      lineStart: 1,
      lineEnd: 1,
      side: 'old',
      suggestedCode: 'export const b = 3;',
      extra: 'dropped',
    };
    const response = await post(`${url}api/feedback`, {
      feedback: 'Please fix',
      annotations: [good, suggestion],
      agentSwitch: 'build',
    });
    expect({ status: response.status, body: await response.json() }).toEqual({ status: 200, body: { ok: true } });
    expect(await exit).toBe(0);
    const expected = {
      feedback: 'Please fix',
      annotations: [
        good,
        {
          id: 's1',
          type: 'suggestion',
          filePath: 'src/b.ts',
          lineStart: 1,
          lineEnd: 1,
          side: 'old',
          suggestedCode: 'export const b = 3;',
        },
      ],
      agentSwitch: 'build',
    };
    expect(stdout.text()).toBe(`${JSON.stringify(expected)}\n`);
    expect(readFileSync(path.join(root, 'out/decision.json'), 'utf8')).toBe(`${JSON.stringify(expected)}\n`);
  });

  it('accepts an empty feedback body as empty feedback', async () => {
    const r = sampleRepo();
    const { url, exit, stdout } = await start(r.dir);
    const response = await post(`${url}api/feedback`, '');
    expect(response.status).toBe(200);
    expect(await exit).toBe(0);
    expect(JSON.parse(stdout.text())).toEqual({ feedback: null, annotations: [], agentSwitch: null });
  });

  it('ends with decision timeout and exit 3 after --timeout', async () => {
    const r = sampleRepo();
    const { exit, stdout } = await start(r.dir, ['--timeout', '200ms']);
    expect(await exit).toBe(3);
    expect(JSON.parse(stdout.text())).toEqual({
      decision: 'timeout',
      feedback: null,
      annotations: [],
      agentSwitch: null,
    });
  });

  it('answers 500 with git’s reason when the repository cannot be diffed', async () => {
    const r = TempRepo.init();
    cleanups.push(() => r.cleanup());
    r.write('a.txt', 'a\n');
    r.git('add', 'a.txt');
    const { url } = await start(r.dir);
    const response = await post(`${url}api/diff/switch`, { diffType: 'last-commit' });
    expect({ status: response.status, body: await response.json() }).toEqual({
      status: 500,
      body: { error: 'Git error: Cannot diff the last commit: the repository has no commits yet' },
    });
    r.commitAll();
    const objects = r.git('rev-parse', 'HEAD:a.txt').trim();
    rmSync(path.join(r.dir, '.git/objects', objects.slice(0, 2), objects.slice(2)));
    r.write('a.txt', 'b\n');
    const broken = await fetch(`${url}api/diff`);
    expect({ status: broken.status, body: await broken.json() }).toEqual({
      status: 500,
      body: { error: `Git error: Missing git object ${objects}` },
    });
  });

  it('refuses to start outside a git repository', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gatehouse-not-a-repo-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    await expect(start(dir)).rejects.toThrow(`Not a git repository: ${dir}`);
    await expect(start(path.join(dir, 'missing'))).rejects.toThrow(
      `Repository directory does not exist: ${path.join(dir, 'missing')}`,
    );
  });
});

describe('GET /api/diff/lines', () => {
  const numbered = (prefix: string, n: number, change: Record<number, string> = {}) =>
    Array.from({ length: n }, (_, i) => `${change[i + 1] ?? `${prefix}${i + 1}`}\n`).join('');

  /** f.txt changed in every place a diff type reads: the last commit (5), the index (10), the work tree (20). */
  function layeredRepo(): TempRepo {
    const r = TempRepo.init();
    cleanups.push(() => r.cleanup());
    r.write('f.txt', numbered('L', 30)).write('old-name.txt', numbered('R', 12)).write('same.txt', 'same\n');
    r.write('logo.png', PNG).write('gone.txt', 'bye\n').commitAll('base');
    r.git('checkout', '-q', '-b', 'feature');
    r.write('f.txt', numbered('L', 30, { 5: 'c5' })).commitAll('feature');
    r.write('f.txt', numbered('L', 30, { 5: 'c5', 10: 's10' }));
    r.git('add', 'f.txt');
    r.git('mv', 'old-name.txt', 'dö.txt');
    r.git('rm', '-q', 'gone.txt');
    r.write('f.txt', numbered('L', 30, { 5: 'c5', 10: 's10', 20: 'w20\r' })).write(
      'logo.png',
      Buffer.concat([PNG, Buffer.from([0])]),
    );
    r.write('new.txt', 'fresh\n').write('untracked.txt', 'not in the diff\n');
    r.git('add', '-N', 'new.txt');
    return r;
  }

  const lines = async (url: string, query: Record<string, string | number>) => {
    const qs = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, `${v}`]));
    const response = await fetch(`${url}api/diff/lines?${qs.toString()}`);
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  it('reads each side from what the current diff compares, following switches', async () => {
    const r = layeredRepo();
    const { url } = await start(r.dir);
    const slice = (text: string, from: number, to: number) => text.split('\n').slice(from - 1, to);
    const expectSide = async (side: 'old' | 'new', revision: string | null, from: number, to: number) => {
      const text =
        revision === null ? readFileSync(path.join(r.dir, 'f.txt'), 'utf8') : r.git('show', `${revision}:f.txt`);
      expect(await lines(url, { path: 'f.txt', side, start: from, end: to }), `${side} ${revision}`).toEqual({
        status: 200,
        body: { path: 'f.txt', side, start: from, lines: slice(text, from, to), totalLines: 30 },
      });
    };
    // uncommitted: HEAD against the work tree (a CR stays part of its line, as in rawPatch)
    await expectSide('old', 'HEAD', 1, 30);
    await expectSide('new', null, 18, 22);
    expect((await lines(url, { path: 'f.txt', side: 'new', start: 20, end: 20 })).body['lines']).toEqual(['w20\r']);
    await post(`${url}api/diff/switch`, { diffType: 'staged' });
    await expectSide('new', '', 8, 21); // `git show :f.txt` is the index
    await post(`${url}api/diff/switch`, { diffType: 'last-commit' });
    await expectSide('old', 'HEAD~1', 3, 7);
    await expectSide('new', 'HEAD', 3, 12);
    await post(`${url}api/diff/switch`, { diffType: 'branch' });
    await expectSide('old', 'main', 1, 6);
  });

  it('serves a rename by its path on each side, an added file on its new side only, up to its last line', async () => {
    const r = layeredRepo();
    const { url } = await start(r.dir);
    await post(`${url}api/diff/switch`, { diffType: 'staged' });
    expect(await lines(url, { path: 'old-name.txt', side: 'old', start: 11, end: 40 })).toEqual({
      status: 200,
      body: { path: 'old-name.txt', side: 'old', start: 11, lines: ['R11', 'R12'], totalLines: 12 },
    });
    expect((await lines(url, { path: 'dö.txt', side: 'new', start: 1, end: 2 })).body).toMatchObject({
      lines: ['R1', 'R2'],
    });
    expect(await lines(url, { path: 'dö.txt', side: 'new', start: 13, end: 20 })).toMatchObject({
      status: 200,
      body: { lines: [], totalLines: 12 },
    });
    expect(await lines(url, { path: 'dö.txt', side: 'old', start: 1, end: 1 })).toEqual({
      status: 404,
      body: { error: 'Not in the current diff on the old side: dö.txt' },
    });
    expect(await lines(url, { path: 'gone.txt', side: 'old', start: 1, end: 1 })).toMatchObject({
      status: 200,
      body: { lines: ['bye'] },
    });
    expect(await lines(url, { path: 'gone.txt', side: 'new', start: 1, end: 1 })).toMatchObject({ status: 404 });
    await post(`${url}api/diff/switch`, { diffType: 'uncommitted' });
    expect(await lines(url, { path: 'new.txt', side: 'new', start: 1, end: 5 })).toMatchObject({
      status: 200,
      body: { lines: ['fresh'] },
    });
  });

  it('refuses bad parameters, files outside the diff, binary files and ranges past the end', async () => {
    const r = layeredRepo();
    const { url } = await start(r.dir);
    const ok = { path: 'f.txt', side: 'new', start: 1, end: 3 };
    const refused: [Record<string, string | number>, number, string][] = [
      [{ side: 'new', start: 1, end: 3 }, 400, 'Missing path parameter'],
      [{ ...ok, path: '' }, 400, 'Missing path parameter'],
      [{ path: 'f.txt', start: 1, end: 3 }, 400, 'Missing side parameter'],
      [{ ...ok, side: 'both' }, 400, 'Invalid parameter side: must be one of old, new'],
      [{ path: 'f.txt', side: 'new', end: 3 }, 400, 'Missing start parameter'],
      [{ ...ok, start: 0 }, 400, 'Invalid parameter start: must be an integer ≥ 1'],
      [{ ...ok, start: '2.5' }, 400, 'Invalid parameter start: must be an integer ≥ 1'],
      [{ ...ok, start: '-1' }, 400, 'Invalid parameter start: must be an integer ≥ 1'],
      [{ ...ok, end: 'x' }, 400, 'Invalid parameter end: must be an integer ≥ start'],
      [{ ...ok, start: 5, end: 4 }, 400, 'Invalid parameter end: must be an integer ≥ start'],
      [{ ...ok, start: 1, end: 5001 }, 400, 'Invalid range: at most 5000 lines per request'],
      [{ ...ok, start: 32, end: 40 }, 400, 'Invalid range: line 32 is past the end of the file (30 lines)'],
      [{ ...ok, path: 'same.txt' }, 404, 'Not in the current diff on the new side: same.txt'],
      [{ ...ok, path: 'untracked.txt' }, 404, 'Not in the current diff on the new side: untracked.txt'],
      [{ ...ok, path: '../f.txt' }, 404, 'Not in the current diff on the new side: ../f.txt'],
      [{ ...ok, path: 'logo.png' }, 400, 'Binary file, no lines to show: logo.png'],
    ];
    for (const [query, status, error] of refused) {
      expect(await lines(url, query), JSON.stringify(query)).toEqual({ status, body: { error } });
    }
    const twice = await fetch(`${url}api/diff/lines?path=f.txt&path=f.txt&side=new&start=1&end=2`);
    expect({ status: twice.status, body: await twice.json() }).toEqual({
      status: 400,
      body: { error: 'Invalid parameter path: must be given once' },
    });
    expect(await lines(url, { ...ok, start: 31, end: 31 })).toMatchObject({
      status: 200,
      body: { lines: [], totalLines: 30 },
    });
    expect(await lines(url, { ...ok, start: 1, end: 5000 })).toMatchObject({ status: 200, body: { totalLines: 30 } });
  });
});
