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

const NS = 1_000_000_000n;
const U32 = 0xffffffffn;

/**
 * Reads working files by index entry, as git does: an entry whose cached
 * stat data (mtime, ctime, size, inode) still matches the file is unchanged
 * and is neither read nor hashed. Everything here is synchronous: for
 * thousands of tiny files that beats a thread-pool round trip per call.
 */
export class Worktree {
  private readonly root: Buffer;
  private readonly filemode: boolean;
  private readonly index: GitIndex;

  constructor(workdir: string, filemode: boolean, index: GitIndex) {
    this.root = Buffer.from(`${workdir}/`);
    this.filemode = filemode;
    this.index = index;
  }

  /** Index paths are bytes (kept as latin1); the file system wants them back as bytes. */
  private pathOf(path: string): Buffer {
    return Buffer.concat([this.root, Buffer.from(path, 'latin1')]);
  }

  /** The file at `entry.path` now, or null when it is gone. */
  read(entry: IndexEntry): WorkingFile | null {
    if (entry.trustIndex) return { oid: entry.oid, mode: entry.mode };
    const file = this.pathOf(entry.path);
    let st: fs.BigIntStats | undefined;
    try {
      st = fs.lstatSync(file, { bigint: true, throwIfNoEntry: false });
    } catch (error) {
      // A parent turned into a file: the path is gone.
      if ((error as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
      throw gitErrors.unreadable(entry.path, error);
    }
    if (!st) return null;
    if (st.isDirectory()) {
      // A submodule's checkout: its commit is taken from the index (see docs).
      return entry.mode === MODE_GITLINK ? { oid: entry.oid, mode: entry.mode } : null;
    }
    const mode = st.isSymbolicLink() ? MODE_SYMLINK : this.regularMode(st, entry.mode);
    if (mode === entry.mode && this.statMatches(entry, st)) return { oid: entry.oid, mode };
    let content: Buffer;
    try {
      content = mode === MODE_SYMLINK ? fs.readlinkSync(file, { encoding: 'buffer' }) : fs.readFileSync(file);
    } catch (error) {
      throw gitErrors.unreadable(entry.path, error);
    }
    return { oid: hashBlob(content), mode, content };
  }

  private regularMode(st: fs.BigIntStats, indexMode: number): number {
    if (!this.filemode) return indexMode === MODE_EXEC ? MODE_EXEC : MODE_FILE;
    return st.mode & 0o100n ? MODE_EXEC : MODE_FILE;
  }

  private statMatches(entry: IndexEntry, st: fs.BigIntStats): boolean {
    const mtimeS = Number((st.mtimeNs / NS) & U32);
    const mtimeNs = Number(st.mtimeNs % NS);
    if (entry.mtimeS !== mtimeS || entry.mtimeNs !== mtimeNs) return false;
    if (entry.ctimeS !== Number((st.ctimeNs / NS) & U32) || entry.ctimeNs !== Number(st.ctimeNs % NS)) return false;
    if (entry.size !== Number(st.size & U32) || entry.ino !== Number(st.ino & U32)) return false;
    // Racily clean: written in the same instant as the index, so the stat data proves nothing.
    const { mtimeS: indexS, mtimeNs: indexNs } = this.index;
    return !(indexS < mtimeS || (indexS === mtimeS && indexNs <= mtimeNs));
  }
}
