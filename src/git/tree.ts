import { gitErrors } from './errors.ts';
import type { ObjectStore } from './objects.ts';

export const MODE_TREE = 0o040000;
export const MODE_FILE = 0o100644;
export const MODE_EXEC = 0o100755;
export const MODE_SYMLINK = 0o120000;
export const MODE_GITLINK = 0o160000;

export interface TreeEntry {
  /** Name bytes decoded as latin1. */
  name: string;
  mode: number;
  oid: string;
}

/** A tracked file (or symlink, or submodule) at one side of a diff. */
export interface FileVersion {
  path: string;
  oid: string;
  mode: number;
  /** Set for a working-tree file that was read already. */
  content?: Buffer;
}

/**
 * Trees are immutable by id, so one cache lives as long as the server:
 * a warm server re-reads no tree it has seen.
 */
export class TreeCache {
  /** Beyond this many trees the cache starts over, so a long-lived server's memory stays bounded. */
  static readonly MAX_TREES = 100_000;
  readonly trees = new Map<string, TreeEntry[]>();
}

export function parseTree(content: Buffer, oid: string): TreeEntry[] {
  const entries: TreeEntry[] = [];
  let pos = 0;
  while (pos < content.length) {
    const space = content.indexOf(0x20, pos);
    const nul = content.indexOf(0, space);
    if (space < 0 || nul < 0 || nul + 21 > content.length) throw gitErrors.corrupt(`tree ${oid}`);
    entries.push({
      mode: parseInt(content.toString('latin1', pos, space), 8),
      name: content.toString('latin1', space + 1, nul),
      oid: content.toString('hex', nul + 1, nul + 21),
    });
    pos = nul + 21;
  }
  return entries;
}

export async function readTree(store: ObjectStore, cache: TreeCache, oid: string): Promise<TreeEntry[]> {
  let entries = cache.trees.get(oid);
  if (!entries) {
    const object = await store.read(oid);
    if (object.type !== 'tree') throw gitErrors.corrupt(`${oid} is a ${object.type}, not a tree`);
    entries = parseTree(object.content, oid);
    if (cache.trees.size >= TreeCache.MAX_TREES) cache.trees.clear();
    cache.trees.set(oid, entries);
  }
  return entries;
}

/** A changed path: `old` missing means added, `new` missing means deleted. */
export interface FilePair {
  old: FileVersion | null;
  new: FileVersion | null;
}

export function pairPath(pair: FilePair): string {
  return pair.old?.path ?? pair.new?.path ?? '';
}

/** git's tree order: a tree sorts as if its name ended with '/'. */
function orderKey(entry: TreeEntry): string {
  return entry.mode === MODE_TREE ? `${entry.name}/` : entry.name;
}

/**
 * The changed files between two trees (either may be absent: the empty
 * tree), skipping every subtree whose id is the same on both sides.
 */
export async function diffTrees(
  store: ObjectStore,
  cache: TreeCache,
  a: string | null,
  b: string | null,
): Promise<FilePair[]> {
  const pairs: FilePair[] = [];
  // An entry on one side only: the file, or everything under the directory, was added or deleted.
  const one = async (entry: TreeEntry, prefix: string, side: 'old' | 'new'): Promise<void> => {
    const path = prefix + entry.name;
    if (entry.mode === MODE_TREE) {
      for (const child of await readTree(store, cache, entry.oid)) await one(child, `${path}/`, side);
    } else {
      const version = { path, oid: entry.oid, mode: entry.mode };
      pairs.push(side === 'old' ? { old: version, new: null } : { old: null, new: version });
    }
  };
  const walk = async (oldOid: string | null, newOid: string | null, prefix: string): Promise<void> => {
    const left = oldOid ? await readTree(store, cache, oldOid) : [];
    const right = newOid ? await readTree(store, cache, newOid) : [];
    let i = 0;
    let j = 0;
    while (i < left.length || j < right.length) {
      const l = left[i];
      const r = right[j];
      const cmp = l && r ? compareKeys(orderKey(l), orderKey(r)) : l ? -1 : 1;
      if (l && cmp < 0) {
        i++;
        await one(l, prefix, 'old');
      } else if (r && cmp > 0) {
        j++;
        await one(r, prefix, 'new');
      } else if (l && r) {
        i++;
        j++;
        if (l.oid === r.oid && l.mode === r.mode) continue;
        if (l.mode === MODE_TREE) await walk(l.oid, r.oid, `${prefix}${l.name}/`);
        else {
          const path = prefix + l.name;
          pairs.push({ old: { path, oid: l.oid, mode: l.mode }, new: { path, oid: r.oid, mode: r.mode } });
        }
      }
    }
  };
  await walk(a, b, '');
  return pairs;
}

/** Byte order of latin1 strings (what git's strcmp gives). */
export function compareKeys(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
