import { readFileSync, statSync } from 'node:fs';
import { gitErrors } from './errors.ts';

const EXTENDED = 0x4000;
const ASSUME_VALID = 0x8000;
const SKIP_WORKTREE = 0x4000;
const INTENT_TO_ADD = 0x2000;

/**
 * One stage-0 entry of `.git/index`, with the stat data git cached for it.
 * Its fields are read from the index's bytes when asked: a diff needs the
 * path of every entry but the rest of few, and 100,000 entries parsed into
 * plain fields and hex ids cost a fresh process more time and memory than
 * the lstat calls they are compared with. It is a FileVersion and a
 * WorkingFile itself (path, oid, mode).
 */
export class IndexEntry {
  /** Path bytes decoded as latin1 (one char per byte). */
  readonly path: string;
  readonly #buf: Buffer;
  readonly #at: number;
  #oid: string | undefined;

  constructor(path: string, buf: Buffer, at: number) {
    this.path = path;
    this.#buf = buf;
    this.#at = at;
  }

  get oid(): string {
    return (this.#oid ??= this.#buf.toString('hex', this.#at + 40, this.#at + 60));
  }
  get mode(): number {
    return this.#buf.readUInt32BE(this.#at + 24);
  }
  get ctimeS(): number {
    return this.#buf.readUInt32BE(this.#at);
  }
  get ctimeNs(): number {
    return this.#buf.readUInt32BE(this.#at + 4);
  }
  get mtimeS(): number {
    return this.#buf.readUInt32BE(this.#at + 8);
  }
  get mtimeNs(): number {
    return this.#buf.readUInt32BE(this.#at + 12);
  }
  get ino(): number {
    return this.#buf.readUInt32BE(this.#at + 20);
  }
  get size(): number {
    return this.#buf.readUInt32BE(this.#at + 36);
  }
  private get flags(): number {
    return this.#buf.readUInt16BE(this.#at + 60);
  }
  private get extendedFlags(): number {
    return this.flags & EXTENDED ? this.#buf.readUInt16BE(this.#at + 62) : 0;
  }
  /** assume-unchanged or skip-worktree: git never looks at the working file. */
  get trustIndex(): boolean {
    return (this.flags & ASSUME_VALID) !== 0 || (this.extendedFlags & SKIP_WORKTREE) !== 0;
  }
  /** `git add -N`: tracked, but nothing staged yet. */
  get intentToAdd(): boolean {
    return (this.extendedFlags & INTENT_TO_ADD) !== 0;
  }
}

/**
 * git's cache-tree (the index's `TREE` extension): for a folder of the index, the
 * tree id its entries would be written as, so a folder whose id equals HEAD's
 * needs neither HEAD's tree read nor its entries compared (git skips such
 * folders the same way). A folder changed since the last write has no id.
 */
export interface CacheTree {
  /** Undefined when invalidated (an entry under it was added, removed or restaged). */
  oid: string | undefined;
  /** How many index entries the folder holds (all of them, nested ones too). */
  entryCount: number;
  children: Map<string, CacheTree>;
}

export interface GitIndex {
  /** In git's order: by path bytes. */
  entries: IndexEntry[];
  /** Paths in conflict (stages 1–3 only); left out of every diff. */
  unmerged: Set<string>;
  /** The index file's own mtime: entries modified at or after it are "racily clean" and must be re-read. */
  mtimeS: number;
  mtimeNs: number;
  /** The root folder's cache-tree, when git wrote one. */
  cacheTree: CacheTree | undefined;
}

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
 * The `TREE` extension's bytes (`start` to `end`): each folder is its name, NUL, its entry count (negative when
 * invalidated), a space, its subfolder count, a newline, then its 20-byte tree id unless invalidated; subfolders
 * follow their parent, depth first.
 */
function readCacheTree(buf: Buffer, start: number, end: number, file: string): CacheTree | undefined {
  if (start === end) return undefined;
  let pos = start;
  const folder = (): [name: string, tree: CacheTree] => {
    const nul = buf.indexOf(0, pos);
    const newline = buf.indexOf(0x0a, nul);
    const counts = /^(-?\d+) (\d+)$/.exec(buf.toString('latin1', nul + 1, newline));
    if (nul < 0 || newline < 0 || newline >= end || !counts) throw gitErrors.corrupt(`cache-tree of index ${file}`);
    const name = buf.toString('latin1', pos, nul);
    const entryCount = Number(counts[1]);
    pos = newline + 1;
    let oid: string | undefined;
    if (entryCount >= 0) {
      oid = buf.toString('hex', pos, pos + 20);
      pos += 20;
    }
    const children = new Map<string, CacheTree>();
    for (let k = Number(counts[2]); k > 0; k--) {
      const [childName, child] = folder();
      children.set(childName, child);
    }
    if (pos > end) throw gitErrors.corrupt(`cache-tree of index ${file}`);
    return [name, { oid, entryCount, children }];
  };
  return folder()[1];
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
      return { entries: [], unmerged: new Set(), mtimeS: 0, mtimeNs: 0, cacheTree: undefined };
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
    pos = start + (flags & EXTENDED ? 64 : 62);
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
    entries.push(new IndexEntry(path, buf, start));
  }
  // Extensions follow the entries, then a 20-byte checksum. Two of them mean the entries above are not all there is.
  let cacheTree: CacheTree | undefined;
  for (let at = pos; at + 8 <= buf.length - 20; at += 8 + buf.readUInt32BE(at + 4)) {
    const signature = buf.toString('latin1', at, at + 4);
    if (signature === 'link') throw gitErrors.unsupported('a split index (core.splitIndex)');
    if (signature === 'sdir') throw gitErrors.unsupported('a sparse index (index.sparse)');
    if (signature === 'TREE') cacheTree = readCacheTree(buf, at + 8, at + 8 + buf.readUInt32BE(at + 4), file);
  }
  return { entries, unmerged, ...stat, cacheTree };
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
