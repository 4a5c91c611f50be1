import { readFileSync, statSync } from 'node:fs';
import { gitErrors } from './errors.ts';

/** One stage-0 entry of `.git/index`, with the stat data git cached for it. */
export interface IndexEntry {
  /** Path bytes decoded as latin1 (one char per byte). */
  path: string;
  oid: string;
  mode: number;
  ctimeS: number;
  ctimeNs: number;
  mtimeS: number;
  mtimeNs: number;
  ino: number;
  size: number;
  /** assume-unchanged or skip-worktree: git never looks at the working file. */
  trustIndex: boolean;
  /** `git add -N`: tracked, but nothing staged yet. */
  intentToAdd: boolean;
}

export interface GitIndex {
  entries: IndexEntry[];
  /** Paths in conflict (stages 1–3 only); left out of every diff. */
  unmerged: Set<string>;
  /** The index file's own mtime: entries modified at or after it are "racily clean" and must be re-read. */
  mtimeS: number;
  mtimeNs: number;
}

const EXTENDED = 0x4000;
const ASSUME_VALID = 0x8000;
const SKIP_WORKTREE = 0x4000;
const INTENT_TO_ADD = 0x2000;

/** git's offset varint (index v4 path prefix lengths). */
function readVarint(buf: Buffer, pos: number): [value: number, next: number] {
  let c = buf.readUInt8(pos++);
  let value = c & 127;
  while (c & 128) {
    c = buf.readUInt8(pos++);
    value = ((value + 1) << 7) | (c & 127);
  }
  return [value, pos];
}

/**
 * Reads `.git/index` (versions 2–4) as git wrote it. A missing index is an
 * empty one (a fresh repository).
 */
export function readIndex(file: string): GitIndex {
  let buf: Buffer;
  let stat: { mtimeS: number; mtimeNs: number };
  try {
    buf = readFileSync(file);
    stat = statTimes(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT')
      return { entries: [], unmerged: new Set(), mtimeS: 0, mtimeNs: 0 };
    throw error;
  }
  if (buf.length < 12 || buf.toString('latin1', 0, 4) !== 'DIRC') throw gitErrors.corrupt(`index ${file}`);
  const version = buf.readUInt32BE(4);
  if (version < 2 || version > 4) throw gitErrors.corrupt(`index ${file} has unsupported version ${version}`);
  const count = buf.readUInt32BE(8);
  const entries: IndexEntry[] = [];
  const unmerged = new Set<string>();
  let pos = 12;
  let previousPath = '';
  for (let i = 0; i < count; i++) {
    const start = pos;
    const flags = buf.readUInt16BE(start + 60);
    let extended = 0;
    pos = start + 62;
    if (flags & EXTENDED) {
      extended = buf.readUInt16BE(pos);
      pos += 2;
    }
    let path: string;
    if (version === 4) {
      const [strip, next] = readVarint(buf, pos);
      const end = buf.indexOf(0, next);
      path = previousPath.slice(0, previousPath.length - strip) + buf.toString('latin1', next, end);
      pos = end + 1;
    } else {
      const end = buf.indexOf(0, pos);
      path = buf.toString('latin1', pos, end);
      // Entries are NUL-padded to a multiple of 8 bytes.
      pos = start + ((end - start + 8) & ~7);
    }
    previousPath = path;
    if ((flags >> 12) & 3) {
      unmerged.add(path);
      continue;
    }
    entries.push({
      path,
      oid: buf.toString('hex', start + 40, start + 60),
      mode: buf.readUInt32BE(start + 24),
      ctimeS: buf.readUInt32BE(start),
      ctimeNs: buf.readUInt32BE(start + 4),
      mtimeS: buf.readUInt32BE(start + 8),
      mtimeNs: buf.readUInt32BE(start + 12),
      ino: buf.readUInt32BE(start + 20),
      size: buf.readUInt32BE(start + 36),
      trustIndex: (flags & ASSUME_VALID) !== 0 || (extended & SKIP_WORKTREE) !== 0,
      intentToAdd: (extended & INTENT_TO_ADD) !== 0,
    });
  }
  // Extensions follow the entries, then a 20-byte checksum. Two of them mean the entries above are not all there is.
  for (let at = pos; at + 8 <= buf.length - 20; at += 8 + buf.readUInt32BE(at + 4)) {
    const signature = buf.toString('latin1', at, at + 4);
    if (signature === 'link') throw gitErrors.unsupported('a split index (core.splitIndex)');
    if (signature === 'sdir') throw gitErrors.unsupported('a sparse index (index.sparse)');
  }
  return { entries, unmerged, ...stat };
}

/**
 * The last index read, kept while the file stays the same: git replaces the
 * index by renaming a new file over it, so its inode, size and times tell a
 * rewrite apart. A warm server then neither parses nor allocates 100,000
 * entries again per request.
 */
export class IndexCache {
  private last: { key: string; index: GitIndex } | undefined;

  read(file: string): GitIndex {
    const st = statSync(file, { bigint: true, throwIfNoEntry: false });
    const key = st ? `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}` : '';
    if (this.last?.key === key) return this.last.index;
    // A change after the stat above is seen by the next request: its key will differ.
    const index = readIndex(file);
    this.last = { key, index };
    return index;
  }
}

function statTimes(file: string): { mtimeS: number; mtimeNs: number } {
  const { mtimeNs } = statSync(file, { bigint: true });
  return { mtimeS: Number(mtimeNs / 1_000_000_000n), mtimeNs: Number(mtimeNs % 1_000_000_000n) };
}
