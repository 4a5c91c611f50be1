import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, symlinkSync, utimesSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { DiffType } from '../../../src/git/diff-type.ts';
import { GitRepository } from '../../../src/git/repository.ts';
import { gitContextOf } from '../../../src/review/contract.ts';
import { expectedGitContext, GIT_ARGS, GIT_ENV, TempRepo } from '../../support/git-repo.ts';

const EMPTY_TREE = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';

const repos: TempRepo[] = [];
afterEach(() => {
  for (const r of repos.splice(0)) r.cleanup();
});

function init(branch = 'main'): TempRepo {
  const r = TempRepo.init(branch);
  repos.push(r);
  return r;
}

/** Our patch for `type` must be git's, byte for byte. */
async function expectGitDiff(
  r: TempRepo,
  engine: GitRepository,
  type: DiffType,
  gitArgs: readonly string[],
): Promise<string> {
  const ours = await engine.diff(type);
  const theirs = r.diff(...gitArgs);
  expect(ours.latin1Patch).toBe(theirs);
  return theirs;
}

/** uncommitted, staged and last-commit (a root commit is compared with the empty tree). */
async function expectAllTypes(r: TempRepo, engine = GitRepository.open(r.dir)): Promise<void> {
  await expectGitDiff(r, engine, 'uncommitted', GIT_ARGS.uncommitted);
  await expectGitDiff(r, engine, 'staged', GIT_ARGS.staged);
  const root = r.git('rev-list', '--count', 'HEAD').trim() === '1';
  await expectGitDiff(r, engine, 'last-commit', root ? [EMPTY_TREE, 'HEAD'] : GIT_ARGS['last-commit']);
}

const lines = (n: number, tag = 'line') => Array.from({ length: n }, (_, i) => `${tag} ${i + 1}\n`).join('');

describe('diff engine vs git diff', () => {
  it('adds, deletes and modifies files in nested folders', async () => {
    const r = init();
    r.write('README.md', lines(30))
      .write('src/a/deep/one.ts', lines(12, 'one'))
      .write('src/b/two.ts', lines(5, 'two'))
      .write('gone.txt', 'bye\n');
    r.commitAll('base');
    const engine = GitRepository.open(r.dir);
    r.write('README.md', lines(30).replace('line 3\n', 'line three\n').replace('line 25\n', 'line 25\nline 25b\n'));
    r.write('src/a/deep/one.ts', lines(12, 'one').replace('one 1\n', ''));
    r.remove('gone.txt').write('src/c/new.ts', 'export const x = 1;\n');
    r.git('add', 'src/c/new.ts', 'gone.txt');
    const patch = await expectGitDiff(r, engine, 'uncommitted', ['HEAD']);
    expect(patch).toContain('diff --git a/src/c/new.ts b/src/c/new.ts\nnew file mode 100644\n');
    expect(patch).toContain('deleted file mode 100644');
    await expectGitDiff(r, engine, 'staged', ['--staged']);
    r.commitAll('second');
    await expectAllTypes(r, engine);
  });

  it('sees every change to the index between two diffs of one repository object', async () => {
    const r = init();
    r.write('a.txt', lines(10)).write('b.txt', 'b\n');
    r.commitAll('base');
    const engine = GitRepository.open(r.dir);
    expect((await engine.diff('staged')).latin1Patch).toBe('');
    r.write('a.txt', lines(10).replace('line 4\n', 'line four\n'));
    r.git('add', 'a.txt');
    expect(await expectGitDiff(r, engine, 'staged', ['--staged'])).toContain('+line four\n');
    r.git('rm', '-q', '--cached', 'b.txt');
    await expectGitDiff(r, engine, 'staged', ['--staged']);
    await expectGitDiff(r, engine, 'uncommitted', ['HEAD']);
    r.git('reset', '-q');
    await expectGitDiff(r, engine, 'staged', ['--staged']);
    await expectGitDiff(r, engine, 'uncommitted', ['HEAD']);
  });

  it('resolves branches from loose files and from packed-refs alike', async () => {
    const r = init();
    r.write('a.txt', lines(10)).commitAll('base');
    r.git('checkout', '-q', '-b', 'topic');
    r.write('a.txt', lines(10).replace('line 2\n', 'line two\n')).commitAll('topic');
    const loose = await GitRepository.open(r.dir).diff('vs main');
    expect(loose.latin1Patch).toBe(r.diff('main..HEAD'));
    r.git('pack-refs', '--all', '--prune');
    expect(readdirSync(`${r.dir}/.git/refs/heads`)).toEqual([]);
    const packed = GitRepository.open(r.dir);
    await expectGitDiff(r, packed, 'vs main', ['main..HEAD']);
    expect((await packed.context()).currentBranch).toBe('topic');
  });

  it('leaves untracked files out, as git does', async () => {
    const r = init();
    r.write('tracked.txt', 'a\n').commitAll();
    r.write('untracked.txt', 'u\n').write('tracked.txt', 'b\n');
    const patch = await expectGitDiff(r, GitRepository.open(r.dir), 'uncommitted', ['HEAD']);
    expect(patch).not.toContain('untracked');
  });

  it('detects exact and near-exact renames, with git’s similarity index', async () => {
    const r = init();
    r.write('docs/guide.md', lines(40, 'guide'))
      .write('lib/util.js', lines(20, 'util'))
      .write('same.txt', lines(10, 'same'));
    r.write('x/config.json', lines(8, 'cfg')).write('y/config.json', lines(8, 'other'));
    r.commitAll('base');
    const engine = GitRepository.open(r.dir);
    r.write('manual/.keep', '').write('moved/.keep', '').write('z/.keep', '');
    r.git('mv', 'docs/guide.md', 'manual/guide.md');
    r.git('mv', 'lib/util.js', 'lib/helpers.js');
    r.write('lib/helpers.js', lines(20, 'util').replace('util 7\n', 'util seven\n'));
    r.git('mv', 'same.txt', 'moved/same-renamed.txt');
    r.git('update-index', '--chmod=+x', 'moved/same-renamed.txt');
    r.git('mv', 'x/config.json', 'z/config.json');
    r.git('add', '-A');
    const patch = await expectGitDiff(r, engine, 'staged', ['--staged']);
    expect(patch).toContain('similarity index 100%\nrename from docs/guide.md\nrename to manual/guide.md\n');
    expect(patch).toMatch(/similarity index 9\d%\nrename from lib\/util.js\nrename to lib\/helpers.js\n/);
    await expectGitDiff(r, engine, 'uncommitted', ['HEAD']);
    r.commitAll('renames');
    await expectGitDiff(r, engine, 'last-commit', ['HEAD~1..HEAD']);
  });

  it('pairs renamed files by similarity when several candidates exist', async () => {
    const r = init();
    r.write('a.txt', lines(30, 'alpha'))
      .write('b.txt', lines(30, 'beta'))
      .write('c.txt', lines(30, 'gamma'))
      .commitAll();
    r.remove('a.txt').remove('b.txt').remove('c.txt');
    r.write('one.txt', lines(30, 'beta').replace('beta 4\n', 'BETA\n'));
    r.write('two.txt', lines(30, 'alpha').replace(/alpha 1\d\n/g, 'changed\n'));
    r.write('three.txt', lines(30, 'delta'));
    r.commitAll('shuffle');
    await expectAllTypes(r);
  });

  it('reports binary files as git does', async () => {
    const r = init();
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 1, 2, 3]);
    r.write('img/logo.png', png)
      .write('data.bin', Buffer.from([1, 2, 0, 4]))
      .write('was-text.txt', 'text\n')
      .commitAll();
    r.write('img/logo.png', Buffer.concat([png, Buffer.from([9])]));
    r.write('was-text.txt', Buffer.from([0x41, 0, 0x42]));
    r.write('new.bin', Buffer.alloc(100)).remove('data.bin');
    r.commitAll('binary');
    await expectAllTypes(r);
    expect(r.diff('HEAD~1..HEAD')).toContain('Binary files a/img/logo.png and b/img/logo.png differ');
  });

  it('marks a missing newline at the end of a file', async () => {
    const r = init();
    r.write('a.txt', 'one\ntwo').write('b.txt', 'one\ntwo\n').write('c.txt', 'x').commitAll();
    r.write('a.txt', 'one\ntwo\n').write('b.txt', 'one\ntwo').write('c.txt', 'y');
    r.commitAll();
    await expectAllTypes(r);
  });

  it('shows mode changes alone and with content changes', async () => {
    const r = init();
    r.write('run.sh', '#!/bin/sh\necho hi\n', 0o644).write('tool.sh', 'echo a\n', 0o755).commitAll();
    r.write('run.sh', '#!/bin/sh\necho hi\n', 0o755).write('tool.sh', 'echo b\n', 0o644);
    const engine = GitRepository.open(r.dir);
    const patch = await expectGitDiff(r, engine, 'uncommitted', ['HEAD']);
    expect(patch).toContain('diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n');
    r.commitAll();
    await expectAllTypes(r, engine);
  });

  it('handles symlinks and a file turned into a symlink', async () => {
    const r = init();
    r.write('target.txt', 'target\n').write('file.txt', 'plain\n').commitAll();
    r.git('rm', '-q', 'file.txt');
    r.git('-c', 'core.symlinks=true', 'config', 'core.symlinks', 'true');
    symlinkSync('target.txt', `${r.dir}/file.txt`);
    symlinkSync('target.txt', `${r.dir}/link`);
    r.commitAll();
    await expectAllTypes(r);
  });

  it('diffs the root commit against the empty tree', async () => {
    const r = init();
    r.write('a.txt', 'a\n').write('dir/b.txt', 'b\n').write('empty', '').commitAll('root');
    const engine = GitRepository.open(r.dir);
    const ours = await engine.diff('last-commit');
    expect(ours.gitRef).toBe('HEAD~1..HEAD');
    expect(ours.latin1Patch).toBe(r.diff(EMPTY_TREE, 'HEAD'));
  });

  it('diffs a repository with no commits against the empty tree', async () => {
    const r = init();
    r.write('a.txt', 'a\n').write('dir/b.txt', 'b\n');
    r.git('add', '-A');
    r.write('a.txt', 'a changed\n');
    const engine = GitRepository.open(r.dir);
    await expectGitDiff(r, engine, 'staged', ['--staged']);
    expect((await engine.diff('uncommitted')).latin1Patch).toBe(r.diff(EMPTY_TREE));
    await expect(engine.diff('last-commit')).rejects.toThrow('the repository has no commits yet');
    await expect(engine.diff('vs main')).rejects.toThrow('the repository has no commits yet');
    const context = await engine.context();
    expect(context.currentBranch).toBe('main');
  });

  it('works on a detached HEAD and names it HEAD', async () => {
    const r = init();
    r.write('a.txt', lines(10)).commitAll('one');
    r.write('a.txt', lines(11)).commitAll('two');
    r.git('checkout', '-q', '--detach', 'HEAD~1');
    r.write('a.txt', lines(9)).write('b.txt', 'b\n');
    r.git('add', 'b.txt');
    const engine = GitRepository.open(r.dir);
    await expectAllTypes(r, engine);
    expect((await engine.context()).currentBranch).toBe('HEAD');
  });

  it('handles empty files', async () => {
    const r = init();
    r.write('empty-kept', '').write('empty-gone', '').write('grows', '').write('shrinks', 'content\n').commitAll();
    r.remove('empty-gone').write('empty-new', '').write('grows', 'now content\n').write('shrinks', '');
    r.commitAll();
    await expectAllTypes(r);
  });

  it('keeps CR bytes of CRLF files', async () => {
    const r = init();
    r.write('win.txt', 'one\r\ntwo\r\nthree\r\n').write('mixed.txt', 'a\nb\r\nc\n').commitAll();
    r.write('win.txt', 'one\r\nTWO\r\nthree\r\n').write('mixed.txt', 'a\r\nb\r\nc\n');
    r.commitAll();
    await expectAllTypes(r);
  });

  it('separates staged from unstaged edits of one file', async () => {
    const r = init();
    r.write('f.txt', lines(20)).commitAll();
    r.write('f.txt', lines(20).replace('line 2\n', 'staged\n'));
    r.git('add', 'f.txt');
    r.write('f.txt', lines(20).replace('line 2\n', 'staged\n').replace('line 18\n', 'unstaged\n'));
    const engine = GitRepository.open(r.dir);
    const staged = await expectGitDiff(r, engine, 'staged', ['--staged']);
    expect(staged).not.toContain('unstaged');
    const all = await expectGitDiff(r, engine, 'uncommitted', ['HEAD']);
    expect(all).toContain('+unstaged');
  });

  it('shows a file removed from the index but still on disk as deleted, and a staged file deleted from disk as nothing', async () => {
    const r = init();
    r.write('kept-on-disk.txt', 'k\n').write('other.txt', 'o\n').commitAll();
    r.git('rm', '-q', '--cached', 'kept-on-disk.txt');
    r.write('staged-then-deleted.txt', 's\n');
    r.git('add', 'staged-then-deleted.txt');
    r.remove('staged-then-deleted.txt');
    await expectAllTypes(r);
  });

  it('ignores a touched but unchanged file, and sees a same-size edit', async () => {
    const r = init();
    r.write('a.txt', 'aaaa\n').write('b.txt', 'bbbb\n').commitAll();
    r.git('status', '--porcelain');
    const engine = GitRepository.open(r.dir);
    const later = new Date(Date.now() + 5_000);
    utimesSync(`${r.dir}/a.txt`, later, later);
    r.write('b.txt', 'BBBB\n');
    const patch = await expectGitDiff(r, engine, 'uncommitted', ['HEAD']);
    expect(patch).not.toContain('a.txt');
    expect(patch).toContain('+BBBB');
  });

  it('quotes unusual paths and keeps non-UTF-8 bytes', async () => {
    const r = init();
    const latin1 = Buffer.from('caf\xe9 cr\xe8me\n', 'latin1');
    r.write('with space.txt', 'a\n')
      .write('ünï cödé.txt', 'u\n')
      .write('quote"d.txt', 'q\n')
      .write('latin1.txt', latin1)
      .commitAll();
    r.write('with space.txt', 'b\n')
      .write('ünï cödé.txt', 'v\n')
      .write('quote"d.txt', 'r\n')
      .write('latin1.txt', Buffer.from('caf\xe9 cr\xe8me br\xfbl\xe9e\n', 'latin1'));
    r.write('tab\there.txt', 't\n');
    r.commitAll();
    const engine = GitRepository.open(r.dir);
    await expectAllTypes(r, engine);
    const patch = (await engine.diff('last-commit')).latin1Patch;
    expect(patch).toContain('--- a/with space.txt\t\n');
    expect(patch).toContain('"a/\\303\\274n\\303\\257 c\\303\\266d\\303\\251.txt"');
  });

  it('shows git’s function context after @@', async () => {
    const r = init();
    const longName = `function ${'x'.repeat(100)}() {\n`;
    const body = (name: string) =>
      `${name}${Array.from({ length: 12 }, (_, i) => `  statement(${i});\n`).join('')}}\n\n`;
    r.write('code.js', body('function first() {\n') + body(longName) + body('class Third {\n'))
      .write('notes.txt', `  indented\n\tTabbed\n${lines(10)}`)
      .commitAll();
    r.write(
      'code.js',
      (body('function first() {\n') + body(longName) + body('class Third {\n')).replace(
        /statement\(9\)/g,
        'changed(9)',
      ),
    );
    r.write('notes.txt', `  indented\n\tTabbed\n${lines(10).replace('line 6', 'line six')}`);
    const patch = await expectGitDiff(r, GitRepository.open(r.dir), 'uncommitted', ['HEAD']);
    expect(patch).toContain('@@ function first() {');
    expect(patch).toContain(`@@ function ${'x'.repeat(71)}\n`);
  });

  it('slides ambiguous blank-line and block insertions where git does', async () => {
    const r = init();
    const fn = (name: string) => `function ${name}() {\n  return 1;\n}\n\n`;
    r.write('a.js', fn('a') + fn('c'))
      .write('b.py', 'def a():\n    pass\n\n\ndef c():\n    pass\n')
      .commitAll();
    r.write('a.js', fn('a') + fn('b') + fn('c'));
    r.write('b.py', 'def a():\n    pass\n\n\ndef b():\n    pass\n\n\ndef c():\n    pass\n');
    await expectGitDiff(r, GitRepository.open(r.dir), 'uncommitted', ['HEAD']);
  });

  it('diffs against main, else master', async () => {
    const r = init();
    r.write('a.txt', lines(10)).commitAll('base');
    r.git('checkout', '-q', '-b', 'feature');
    r.write('a.txt', lines(12)).write('f.txt', 'feature\n').commitAll('feature work');
    const engine = GitRepository.open(r.dir);
    const result = await engine.diff('vs main');
    expect(result.gitRef).toBe('main..HEAD');
    expect(result.latin1Patch).toBe(r.diff('main..HEAD'));
    expect(gitContextOf(await engine.context())).toEqual(expectedGitContext('feature'));

    const m = init('master');
    m.write('a.txt', 'a\n').commitAll();
    m.git('checkout', '-q', '-b', 'topic');
    m.write('a.txt', 'b\n').commitAll();
    const old = await GitRepository.open(m.dir).diff('vs main');
    expect(old.gitRef).toBe('master..HEAD');
    expect(old.latin1Patch).toBe(m.diff('master..HEAD'));

    const none = init('trunk');
    none.write('a.txt', 'a\n').commitAll();
    await expect(GitRepository.open(none.dir).diff('vs main')).rejects.toThrow('neither main nor master exists');
  });

  it('reads packed objects and lengthens abbreviations as git does', async () => {
    const r = init();
    for (let i = 0; i < 40; i++) r.write(`d${i % 4}/f${i}.txt`, `file ${i}\n`);
    r.commitAll();
    r.git('gc', '-q');
    // fast-import packs 17,000 more blobs: past 2^14 packed objects git abbreviates to 8 digits.
    const blobs = Array.from({ length: 17_000 }, (_, i) => `blob\ndata ${`extra ${i}\n`.length}\nextra ${i}\n`);
    execFileSync('git', ['fast-import', '--quiet'], { cwd: r.dir, input: `${blobs.join('')}\n`, env: GIT_ENV });
    r.write('d1/f1.txt', 'changed\n').write('d2/new.txt', 'new\n').remove('d3/f3.txt');
    r.git('add', '-A');
    const engine = GitRepository.open(r.dir);
    const patch = await expectGitDiff(r, engine, 'staged', ['--staged']);
    expect(patch).toMatch(/^index [0-9a-f]{8}\.\.[0-9a-f]{8} 100644$/m);
    await expectGitDiff(r, engine, 'uncommitted', ['HEAD']);
  });

  for (const [name, config] of [
    ['offset deltas', []],
    ['reference deltas', ['-c', 'repack.useDeltaBaseOffset=false']],
  ] as const) {
    it(`reads packed objects stored as ${name}`, async () => {
      const r = init();
      const big = (v: number) =>
        Array.from({ length: 400 }, (_, i) => `row ${i} ${i % 37 === v % 37 ? `v${v}` : 'same'}\n`).join('');
      for (let v = 0; v < 12; v++)
        r.write('big.txt', big(v))
          .write(`copies/c${v % 4}.txt`, big(v + 100))
          .commitAll(`v${v}`);
      r.git(...config, 'gc', '-q', '--aggressive');
      const packDir = `${r.dir}/.git/objects/pack`;
      const idx = readdirSync(packDir).filter((n) => n.endsWith('.idx'));
      expect(r.git('verify-pack', '-v', ...idx.map((n) => `${packDir}/${n}`))).toMatch(/chain length = [2-9]/);
      r.write('big.txt', big(40)).remove('copies/c1.txt');
      const engine = GitRepository.open(r.dir);
      await expectAllTypes(r, engine);
      r.git('branch', '-q', 'old', 'HEAD~6');
      expect((await engine.diff('vs main')).latin1Patch).toBe('');
      r.git('checkout', '-q', '-f', 'old');
      expect((await engine.diff('vs main')).latin1Patch).toBe(r.diff('main..HEAD'));
    });
  }

  const edgeCases: [string, (r: TempRepo) => void][] = [
    ['an intent-to-add file (git add -N)', (r) => r.write('n.txt', 'intent\n').git('add', '-N', 'n.txt')],
    ['a file replaced by a folder', (r) => r.remove('a.txt').write('a.txt/inside', 'x\n')],
    ['a case-only rename', (r) => r.git('mv', 'a.txt', 'A.txt')],
    [
      'one blob deleted twice and added three times',
      (r) =>
        r
          .write('b.txt', 'a\n')
          .commitAll()
          .remove('a.txt')
          .remove('b.txt')
          .write('c/a.txt', 'a\n')
          .write('c/b.txt', 'a\n')
          .write('d.txt', 'a\n')
          .git('add', '-A'),
    ],
    ['empty files moved', (r) => r.write('e1', '').write('e2', '').commitAll().git('mv', 'e1', 'moved-e1')],
    ['a file emptied', (r) => r.write('a.txt', '')],
    [
      'core.quotePath=false',
      (r) => {
        r.git('config', 'core.quotePath', 'false');
        r.write('ünï cödé.txt', 'x\n').git('add', '-A');
      },
    ],
    [
      'diff.renames=false',
      (r) => {
        r.git('config', 'diff.renames', 'false');
        r.git('mv', 'a.txt', 'b.txt');
      },
    ],
    [
      'an index in version 4 (prefix-compressed paths)',
      (r) => {
        r.write('dir/one/x.txt', 'x\n').write('dir/one/y.txt', 'y\n').write('dir/two.txt', '2\n').commitAll();
        r.git('update-index', '--index-version', '4');
        r.write('dir/one/y.txt', 'Y\n').remove('dir/two.txt').write('dir/one/z.txt', 'z\n');
        r.git('add', 'dir/one/z.txt');
      },
    ],
    [
      'core.filemode=false',
      (r) => {
        r.git('config', 'core.filemode', 'false');
        r.write('a.txt', 'b\n', 0o755);
      },
    ],
    [
      'a submodule moved to a new commit',
      (r) => {
        r.write('sub/s', 's\n');
        r.git('-C', 'sub', 'init', '-q');
        r.git('-C', 'sub', 'add', 's');
        r.git('-C', 'sub', 'commit', '-qm', 'one');
        r.git('add', 'sub');
        r.git('commit', '-qm', 'with submodule');
        r.git('-C', 'sub', 'commit', '-q', '--allow-empty', '-m', 'two');
        r.git('add', 'sub');
      },
    ],
    [
      // git's cache-tree: folders whose id is still HEAD's tree id next to folders a staged change invalidated.
      'unstaged edits in folders the cache-tree covers, beside staged adds and removals in others',
      (r) => {
        for (const folder of ['p/kept', 'p/edited', 'p/staged', 'q/removed', 'q/deep/er'])
          r.write(`${folder}/one.txt`, `${folder} one\n`).write(`${folder}/two.txt`, `${folder} two\n`);
        r.commitAll();
        r.write('p/edited/one.txt', 'edited\n').remove('p/edited/two.txt').write('q/deep/er/two.txt', 'deep\n');
        r.write('p/staged/three.txt', '3\n').git('add', 'p/staged/three.txt');
        r.git('rm', '-q', '--cached', 'q/removed/one.txt');
      },
    ],
    [
      'an intent-to-add file in a folder after git write-tree (which leaves that folder without a cache-tree id)',
      (r) => {
        r.write('f/one.txt', '1\n').write('f/two.txt', '2\n').commitAll();
        r.write('f/new.txt', 'new\n').git('add', '-N', 'f/new.txt');
        r.git('write-tree');
        r.write('f/one.txt', 'one\n');
      },
    ],
    [
      'an index whose folders were all staged again (no cache-tree id left)',
      (r) => {
        r.write('f/one.txt', '1\n').write('g/two.txt', '2\n').commitAll();
        r.git('rm', '-r', '-q', '--cached', '.');
        r.git('add', '-A');
        r.write('g/two.txt', 'two\n');
      },
    ],
  ];
  for (const [name, change] of edgeCases) {
    it(`matches git for ${name}`, async () => {
      const r = init();
      r.write('a.txt', 'a\n').commitAll();
      change(r);
      const engine = GitRepository.open(r.dir);
      await expectGitDiff(r, engine, 'uncommitted', GIT_ARGS.uncommitted);
      await expectGitDiff(r, engine, 'staged', GIT_ARGS.staged);
    });
  }

  it('follows the diff attribute of .gitattributes files and info/attributes', async () => {
    const r = init();
    r.write('.gitattributes', '# generated files\n*.lock -diff\ndata/**/*.raw diff\n/top.txt binary\ndocs/ -diff\n');
    r.write('sub/.gitattributes', '*.txt binary\nkeep.txt !diff\n');
    const files = [
      'deps.lock',
      'data/x/y.raw',
      'top.txt',
      'nested/top.txt',
      'sub/a.txt',
      'sub/keep.txt',
      'sub/deeper/b.txt',
      'docs/readme.md',
      'other.txt',
    ];
    for (const f of files) r.write(f, f.endsWith('.raw') ? Buffer.from('a\0b\nc\n', 'latin1') : `${f} one\n`);
    r.commitAll();
    for (const f of files) r.write(f, f.endsWith('.raw') ? Buffer.from('a\0b\nC\n', 'latin1') : `${f} two\n`);
    r.write('.git/info/attributes', 'other.txt binary\n');
    const engine = GitRepository.open(r.dir);
    const patch = await expectGitDiff(r, engine, 'uncommitted', GIT_ARGS.uncommitted);
    expect(patch).toContain('Binary files a/deps.lock and b/deps.lock differ');
    expect(patch).toContain('Binary files a/other.txt and b/other.txt differ');
    expect(patch).toContain('+C');
    r.commitAll();
    await expectAllTypes(r, engine);
  });

  it('diffs a large, mostly rewritten file as git does', async () => {
    const r = init();
    const n = 20_000;
    r.write('big.txt', Array.from({ length: n }, (_, i) => `old line ${i}\n`).join(''))
      .write('gone.txt', lines(3000, 'gone'))
      .commitAll();
    r.write('big.txt', Array.from({ length: n }, (_, i) => (i % 2 ? `old line ${i}\n` : `changed ${i}\n`)).join(''));
    r.write('gone.txt', lines(3000, 'replaced'));
    await expectGitDiff(r, GitRepository.open(r.dir), 'uncommitted', GIT_ARGS.uncommitted);
  });

  it('diffs a linked worktree (git worktree add)', async () => {
    const r = init();
    r.write('a.txt', lines(5)).commitAll();
    const linked = new TempRepo(`${r.dir}-linked`);
    repos.push(linked);
    r.git('worktree', 'add', '-q', '-b', 'side', linked.dir);
    linked.write('a.txt', lines(6)).write('b.txt', 'b\n').commitAll('side work');
    linked.write('a.txt', lines(4));
    const engine = GitRepository.open(linked.dir);
    await expectAllTypes(linked, engine);
    expect((await engine.diff('vs main')).latin1Patch).toBe(linked.diff('main..HEAD'));
    expect((await engine.context()).currentBranch).toBe('side');
  });

  it('refuses a split index instead of showing half the files', async () => {
    const r = init();
    r.write('a.txt', 'a\n').commitAll();
    r.git('update-index', '--split-index');
    await expect(GitRepository.open(r.dir).diff('staged')).rejects.toThrow(
      'Unsupported repository layout: a split index (core.splitIndex)',
    );
  });

  it('reads the global git configuration from the home folder', async () => {
    const r = init();
    const home = new TempRepo();
    repos.push(home);
    home.write('.gitconfig', '[diff]\n\trenames = false\n[core]\n\tquotepath = off\n');
    r.write('a.txt', lines(5)).commitAll();
    r.git('mv', 'a.txt', 'é.txt');
    const ours = await GitRepository.open(r.dir, { home: home.dir }).diff('staged');
    const theirs = execFileSync('git', ['diff', '--staged'], {
      cwd: r.dir,
      env: { ...GIT_ENV, GIT_CONFIG_GLOBAL: `${home.dir}/.gitconfig` },
      encoding: 'latin1',
    });
    expect(ours.latin1Patch).toBe(theirs);
    expect(theirs).toContain('deleted file mode');
  });

  it('lengthens an abbreviation that another object shares, loose or packed', async () => {
    // Two contents whose blob ids share 7 hex digits (a birthday search over a few thousand tries).
    const seen = new Map<string, string>();
    let pair: [string, string] | undefined;
    for (let i = 0; !pair; i++) {
      const text = `collision candidate ${i}\n`;
      const prefix = createHash('sha1').update(`blob ${text.length}\0${text}`).digest('hex').slice(0, 7);
      const earlier = seen.get(prefix);
      if (earlier) pair = [earlier, text];
      else seen.set(prefix, text);
    }
    const r = init();
    r.write('f.txt', pair[0]).commitAll();
    r.write('f.txt', pair[1]);
    r.git('add', 'f.txt');
    const engine = GitRepository.open(r.dir);
    const loose = await expectGitDiff(r, engine, 'staged', GIT_ARGS.staged);
    expect(loose).toMatch(/^index [0-9a-f]{8,}\.\.[0-9a-f]{8,} 100644$/m);
    r.commitAll();
    r.git('gc', '-q');
    expect(readdirSync(`${r.dir}/.git/objects/pack`).some((n) => n.endsWith('.pack'))).toBe(true);
    await expectGitDiff(r, engine, 'last-commit', GIT_ARGS['last-commit']);
  });

  it('reads objects borrowed through alternates (git clone --shared)', async () => {
    const origin = init();
    origin.write('a.txt', lines(20)).write('b/c.txt', 'c\n').commitAll('one');
    origin.write('a.txt', lines(21)).commitAll('two');
    origin.git('gc', '-q');
    const shared = new TempRepo(`${origin.dir}-shared`);
    repos.push(shared);
    execFileSync('git', ['clone', '-q', '--shared', origin.dir, shared.dir], { env: GIT_ENV });
    expect(readdirSync(`${shared.dir}/.git/objects`).filter((n) => /^[0-9a-f]{2}$/.test(n))).toEqual([]);
    shared.write('a.txt', lines(22)).remove('b/c.txt');
    await expectAllTypes(shared);
  });

  it('fails clearly outside a repository', () => {
    expect(() => GitRepository.open('/nonexistent/dir')).toThrow(
      'Repository directory does not exist: /nonexistent/dir',
    );
    const r = new TempRepo();
    repos.push(r);
    expect(() => GitRepository.open(r.dir)).toThrow(`Not a git repository: ${r.dir}`);
  });
});
