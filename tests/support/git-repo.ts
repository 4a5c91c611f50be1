import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** git with no user or system configuration, so host settings cannot change its output. */
export const GIT_ENV: NodeJS.ProcessEnv = {
  ...process.env,
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_AUTHOR_NAME: 'Test',
  GIT_AUTHOR_EMAIL: 'test@example.com',
  GIT_COMMITTER_NAME: 'Test',
  GIT_COMMITTER_EMAIL: 'test@example.com',
  LC_ALL: 'C',
};

/** The git revision arguments of each diff type. */
export const GIT_ARGS = {
  uncommitted: ['HEAD'],
  staged: ['--staged'],
  'last-commit': ['HEAD~1..HEAD'],
} as const;

/** Each `POST /api/diff/switch` value: its gitRef, the canonical diffType answered, and the git arguments it equals. */
export const DIFF_SWITCHES = [
  ['staged', '--staged', 'staged', ['--staged']],
  ['last-commit', 'HEAD~1..HEAD', 'last-commit', ['HEAD~1..HEAD']],
  ['vs main', 'main..HEAD', 'vs main', ['main..HEAD']],
  ['branch', 'main..HEAD', 'vs main', ['main..HEAD']],
  ['uncommitted', 'HEAD', 'uncommitted', ['HEAD']],
] as const;

/** The `gitContext` a code review reports for a repository on `currentBranch`. */
export function expectedGitContext(currentBranch: string, defaultBranch = 'main') {
  return {
    currentBranch,
    defaultBranch,
    diffOptions: [
      { id: 'uncommitted', label: 'Uncommitted changes' },
      { id: 'last-commit', label: 'Last commit' },
      { id: 'branch', label: `vs ${defaultBranch}` },
    ],
  };
}

/** A throwaway repository driven by the real git CLI (on the host; the image has none). */
export class TempRepo {
  readonly dir: string;

  constructor(dir?: string) {
    this.dir = dir ?? mkdtempSync(path.join(os.tmpdir(), 'gatehouse-repo-'));
  }

  static init(branch = 'main'): TempRepo {
    const repo = new TempRepo();
    repo.git('init', '-q', '-b', branch);
    return repo;
  }

  /** Runs git; output bytes as latin1 (one char per byte). */
  git(...args: string[]): string {
    return execFileSync('git', args, { cwd: this.dir, env: GIT_ENV, encoding: 'latin1', maxBuffer: 512 * 1024 * 1024 });
  }

  /** `git diff <args>` exactly as printed. */
  diff(...args: string[]): string {
    return this.git('diff', ...args);
  }

  write(file: string, content: string | Buffer, mode?: number): this {
    const full = path.join(this.dir, file);
    mkdirSync(path.dirname(full), { recursive: true });
    writeFileSync(full, content);
    if (mode !== undefined) chmodSync(full, mode);
    return this;
  }

  remove(file: string): this {
    rmSync(path.join(this.dir, file), { recursive: true, force: true });
    return this;
  }

  commitAll(message = 'commit'): this {
    this.git('add', '-A');
    this.git('commit', '-q', '--allow-empty', '-m', message);
    return this;
  }

  cleanup(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
