import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DIFF_TYPES } from '../../../src/git/diff-type.ts';
import { GitError } from '../../../src/git/errors.ts';
import { GitRepository } from '../../../src/git/repository.ts';
import { ThreadedRepository } from '../../../src/git/thread.ts';
import { TempRepo } from '../../support/git-repo.ts';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function repoWithChanges(): TempRepo {
  const r = TempRepo.init('main');
  cleanups.push(() => r.cleanup());
  r.write('a.txt', 'one\ntwo\nthree\n').write('bin.dat', Buffer.from([0, 1, 2, 255]));
  r.commitAll('base');
  r.write('a.txt', 'one\n2\nthree\n').write('new.txt', 'new\n');
  r.commitAll('second');
  r.write('a.txt', 'one\n2\n3\n');
  return r;
}

async function threaded(dir: string): Promise<ThreadedRepository> {
  const engine = await ThreadedRepository.open(dir, {});
  cleanups.push(() => engine.close());
  return engine;
}

describe('ThreadedRepository: the diff engine on its own thread', () => {
  it('answers every call as GitRepository does on this thread', async () => {
    const r = repoWithChanges();
    const here = GitRepository.open(r.dir);
    const engine = await threaded(r.dir);
    expect(engine.workdir).toBe(here.layout.workdir);
    expect(await engine.context()).toEqual(await here.context());
    for (const type of DIFF_TYPES) {
      const [ours, theirs] = await Promise.all([engine.diff(type), here.diff(type)]);
      expect(ours).toEqual(theirs);
    }
    const content = await engine.sideContent('last-commit', 'new', 'new.txt');
    expect(Buffer.isBuffer(content)).toBe(true);
    expect(content?.toString()).toBe('new\n');
    expect(await engine.sideContent('uncommitted', 'old', 'a.txt')).toEqual(Buffer.from('one\n2\nthree\n'));
    expect(await engine.sideContent('uncommitted', 'new', 'absent.txt')).toBeNull();
  });

  it('fails to open what is no repository with the GitError GitRepository.open throws', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gatehouse-not-a-repo-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const expected = (() => {
      try {
        GitRepository.open(dir);
      } catch (error) {
        return error as Error;
      }
      throw new Error('GitRepository.open should have failed');
    })();
    const opened = ThreadedRepository.open(dir, {});
    await expect(opened).rejects.toBeInstanceOf(GitError);
    await expect(opened).rejects.toThrow(expected.message);
  });

  it("passes a call's GitError back as a GitError, and keeps answering", async () => {
    const r = TempRepo.init('main');
    cleanups.push(() => r.cleanup());
    r.write('a.txt', 'a\n');
    const engine = await threaded(r.dir);
    const failed = engine.diff('last-commit');
    await expect(failed).rejects.toBeInstanceOf(GitError);
    await expect(failed).rejects.toThrow('Cannot diff the last commit: the repository has no commits yet');
    expect((await engine.context()).currentBranch).toBe('main');
  });

  it('answers calls made at once, each with its own answer', async () => {
    const r = repoWithChanges();
    const engine = await threaded(r.dir);
    const answers = await Promise.all(DIFF_TYPES.flatMap((type) => [engine.diff(type), engine.diff(type)]));
    const here = GitRepository.open(r.dir);
    expect(answers).toEqual(await Promise.all(DIFF_TYPES.flatMap((type) => [here.diff(type), here.diff(type)])));
  });

  it('starts a new thread when its thread has stopped', async () => {
    const r = repoWithChanges();
    const engine = await threaded(r.dir);
    const before = await engine.diff('uncommitted');
    await engine.close();
    expect(await engine.diff('uncommitted')).toEqual(before);
  });

  it('keeps the process alive while a call is out, and not after', () => {
    const r = repoWithChanges();
    const thread = new URL('../../../src/git/thread.ts', import.meta.url).href;
    const script = `const { ThreadedRepository } = await import(${JSON.stringify(thread)});
      const engine = await ThreadedRepository.open(${JSON.stringify(r.dir)}, {});
      setTimeout(() => engine.diff('uncommitted').then((d) => console.log(d.rawPatch.length > 0)), 100);`;
    const file = path.join(r.dir, 'run.mjs');
    writeFileSync(file, script);
    const run = spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 20_000 });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toBe('true\n');
  });

  it('fails the calls of a thread that cannot open the repository again, with its reason', async () => {
    const r = repoWithChanges();
    const engine = await threaded(r.dir);
    await engine.close();
    r.cleanup();
    await expect(engine.diff('uncommitted')).rejects.toBeInstanceOf(GitError);
  });
});
