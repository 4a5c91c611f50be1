import fs from 'node:fs';
import path from 'node:path';
import { readGitConfig, type GitConfig } from './config.ts';
import { gitErrors } from './errors.ts';

/** Where a work tree's git data lives. */
export interface RepoLayout {
  /** The work tree's root. */
  workdir: string;
  /** HEAD and index live here (a linked worktree has its own). */
  gitdir: string;
  /** Objects, refs and config live here (the same as gitdir except in a linked worktree). */
  commondir: string;
  config: GitConfig;
}

export interface OpenOptions {
  /** The user's home, for ~/.gitconfig and ~/.config/git/config (none: repository config only). */
  home?: string;
}

function readGitFile(file: string): string {
  const text = fs.readFileSync(file, 'utf8');
  const target = /^gitdir:\s*(.+?)\s*$/m.exec(text)?.[1];
  if (!target) throw gitErrors.corrupt(`${file} names no gitdir`);
  return path.resolve(path.dirname(file), target);
}

/**
 * Finds the repository containing `dir` the way git does: the nearest
 * ancestor with a `.git` directory (or a `.git` file pointing at one), and
 * reads its configuration (system, global, repository).
 */
export function openRepository(dir: string, { home }: OpenOptions = {}): RepoLayout {
  const start = path.resolve(dir);
  if (!fs.existsSync(start)) throw gitErrors.repositoryMissing(start);
  for (let current = start; ; current = path.dirname(current)) {
    const dotgit = path.join(current, '.git');
    let stat: fs.Stats | undefined;
    try {
      stat = fs.statSync(dotgit);
    } catch {
      stat = undefined;
    }
    if (stat) {
      const gitdir = stat.isDirectory() ? dotgit : readGitFile(dotgit);
      let commondir = gitdir;
      try {
        commondir = path.resolve(gitdir, fs.readFileSync(path.join(gitdir, 'commondir'), 'utf8').trim());
      } catch {
        // Not a linked worktree.
      }
      if (!fs.existsSync(path.join(gitdir, 'HEAD'))) throw gitErrors.notARepository(start);
      const global = home ? [path.join(home, '.config', 'git', 'config'), path.join(home, '.gitconfig')] : [];
      return {
        workdir: current,
        gitdir,
        commondir,
        config: readGitConfig(['/etc/gitconfig', ...global, path.join(commondir, 'config')]),
      };
    }
    if (path.dirname(current) === current) throw gitErrors.notARepository(start);
  }
}
