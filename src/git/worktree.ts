import fs from 'node:fs';
import { gitErrors } from './errors.ts';
import type { GitIndex, IndexEntry } from './index-file.ts';
import { hashBlob } from './objects.ts';
import { MODE_EXEC, MODE_FILE, MODE_GITLINK, MODE_SYMLINK } from './tree.ts';

/** A working-tree file as git sees it; `content` is set when it had to be read. */
export interface WorkingFile {
  oid: string;
  mode: number;
  content?: Buffer;
}

const U32 = 2 ** 32;
// eslint-disable-next-line no-control-regex
const ASCII = /^[\x00-\x7f]*$/;

/** An index time (seconds, nanoseconds) as Node reports it in `mtimeMs`. */
const timeMs = (s: number, ns: number) => s * 1e3 + ns / 1e6;

/**
 * Reads working files by index entry, as git does: an entry whose cached
 * stat data (mtime, ctime, size, inode) still matches the file is unchanged
 * and is neither read nor hashed. Everything here is synchronous: for
 * thousands of tiny files that beats a thread-pool round trip per call.
 */
export class Worktree {
  private readonly root: Buffer;
  private readonly rootText: string;
  private readonly filemode: boolean;
  private readonly index: GitIndex;

  constructor(workdir: string, filemode: boolean, index: GitIndex) {
    this.rootText = `${workdir}/`;
    this.root = Buffer.from(this.rootText);
    this.filemode = filemode;
    this.index = index;
  }

  /** Index paths are bytes (kept as latin1); the file system wants them back as bytes (ASCII is both). */
  private pathOf(path: string): Buffer | string {
    return ASCII.test(path) ? this.rootText + path : Buffer.concat([this.root, Buffer.from(path, 'latin1')]);
  }

  /** The file at `entry.path` now, or null when it is gone; the entry itself when it is unchanged. */
  read(entry: IndexEntry): WorkingFile | null {
    if (entry.trustIndex) return entry;
    const file = this.pathOf(entry.path);
    let st: fs.Stats | undefined;
    try {
      st = fs.lstatSync(file, { throwIfNoEntry: false });
    } catch (error) {
      // A parent turned into a file: the path is gone.
      if ((error as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
      throw gitErrors.unreadable(entry.path, error);
    }
    if (!st) return null;
    if (st.isDirectory()) {
      // A submodule's checkout: its commit is taken from the index (see docs).
      return entry.mode === MODE_GITLINK ? entry : null;
    }
    const mode = st.isSymbolicLink() ? MODE_SYMLINK : this.regularMode(st, entry.mode);
    if (mode === entry.mode && this.statMatches(entry, st)) return entry;
    let content: Buffer;
    try {
      content = mode === MODE_SYMLINK ? fs.readlinkSync(file, { encoding: 'buffer' }) : fs.readFileSync(file);
    } catch (error) {
      throw gitErrors.unreadable(entry.path, error);
    }
    return { oid: hashBlob(content), mode, content };
  }

  private regularMode(st: fs.Stats, indexMode: number): number {
    if (!this.filemode) return indexMode === MODE_EXEC ? MODE_EXEC : MODE_FILE;
    return st.mode & 0o100 ? MODE_EXEC : MODE_FILE;
  }

  /**
   * Node's plain stats give times in milliseconds, computed from seconds and
   * nanoseconds as below: equal times give equal values, and different ones
   * only collide when under about 0.25 µs apart (and size, inode and the
   * other time match too). BigInt stats, exact, cost a large share of a
   * 100,000-file diff in allocations.
   */
  private statMatches(entry: IndexEntry, st: fs.Stats): boolean {
    if (st.mtimeMs !== timeMs(entry.mtimeS, entry.mtimeNs)) return false;
    if (st.ctimeMs !== timeMs(entry.ctimeS, entry.ctimeNs)) return false;
    if (entry.size !== st.size % U32 || entry.ino !== st.ino % U32) return false;
    // Racily clean: written in the same instant as the index (or after it), so the stat data proves nothing.
    return st.mtimeMs < timeMs(this.index.mtimeS, this.index.mtimeNs);
  }
}
