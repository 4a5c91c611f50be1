import fs from 'node:fs';
import path from 'node:path';
import { gitErrors } from './errors.ts';

/** Where a work tree's git data lives. */
export interface RepoLayout {
  /** The work tree's root. */
  workdir: string;
  /** HEAD and index live here (a linked worktree has its own). */
  gitdir: string;
  /** Objects, refs and config live here (the same as gitdir except in a linked worktree). */
  commondir: string;
  /** core.filemode: whether the executable bit of working files counts. */
  filemode: boolean;
}

function readGitFile(file: string): string {
  const text = fs.readFileSync(file, 'utf8');
  const target = /^gitdir:\s*(.+?)\s*$/m.exec(text)?.[1];
  if (!target) throw gitErrors.corrupt(`${file} names no gitdir`);
  return path.resolve(path.dirname(file), target);
}

/** core.filemode from the repository config (git's default is true). */
function readFilemode(commondir: string): boolean {
  let text: string;
  try {
    text = fs.readFileSync(path.join(commondir, 'config'), 'utf8');
  } catch {
    return true;
  }
  let section = '';
  for (const raw of text.split('\n')) {
    const line = raw.replace(/[#;].*$/, '').trim();
    const header = /^\[\s*([^\]\s"]+)[^\]]*\]$/.exec(line)?.[1];
    if (header) section = header.toLowerCase();
    else if (section === 'core') {
      const value = /^filemode\s*=\s*(\S+)$/i.exec(line)?.[1];
      if (value) return !/^(false|no|off|0)$/i.test(value);
    }
  }
  return true;
}

/**
 * Finds the repository containing `dir` the way git does: the nearest
 * ancestor with a `.git` directory (or a `.git` file pointing at one).
 */
export function openRepository(dir: string): RepoLayout {
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
      return { workdir: current, gitdir, commondir, filemode: readFilemode(commondir) };
    }
    if (path.dirname(current) === current) throw gitErrors.notARepository(start);
  }
}
