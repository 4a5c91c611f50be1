import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { inflateSync } from 'node:zlib';
import { gitErrors } from './errors.ts';
import { PackSet, type GitObject, type ObjectCache, type ObjectType, type Pack } from './pack.ts';

export const NULL_OID = '0'.repeat(40);

/** The id git gives `content` as a blob. */
export function hashBlob(content: Buffer): string {
  return createHash('sha1').update(`blob ${content.length}\0`).update(content).digest('hex');
}

function readLoose(dir: string, oid: string): GitObject | undefined {
  let deflated: Buffer;
  try {
    deflated = fs.readFileSync(path.join(dir, oid.slice(0, 2), oid.slice(2)));
  } catch {
    return undefined;
  }
  const raw = inflateSync(deflated);
  const space = raw.indexOf(0x20);
  const nul = raw.indexOf(0, space);
  if (space < 0 || nul < 0) throw gitErrors.corrupt(`object ${oid}`);
  return { type: raw.toString('latin1', 0, space) as ObjectType, content: raw.subarray(nul + 1) };
}

function commonHexPrefix(a: string, b: string): number {
  let i = 0;
  while (i < 40 && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

/**
 * One object folder: the repository's own, or one it borrows from through
 * `objects/info/alternates` (`git clone --shared`/`--reference`). Its packs
 * are kept across requests.
 */
export interface ObjectSource {
  dir: string;
  packs: PackSet;
}

/** The repository's object folder, then those its alternates name (nested ones too, as git allows). */
export function objectSources(objectsDir: string): ObjectSource[] {
  const sources: ObjectSource[] = [];
  const add = (dir: string, depth: number) => {
    if (depth > 5 || sources.some((s) => s.dir === dir)) return;
    sources.push({ dir, packs: new PackSet(dir) });
    let text: string;
    try {
      text = fs.readFileSync(path.join(dir, 'info', 'alternates'), 'utf8');
    } catch {
      return;
    }
    for (const line of text.split('\n')) {
      const entry = line.trim();
      if (entry && !entry.startsWith('#')) add(path.resolve(dir, entry), depth + 1);
    }
  };
  add(objectsDir, 0);
  return sources;
}

/**
 * Reads objects for the length of one request, loose and packed, with
 * Node's native zlib: several times faster than a JavaScript inflate, and
 * packs are read entry by entry, never whole.
 */
export class ObjectStore {
  private readonly sources: { dir: string; packs: Pack[]; cache: ObjectCache }[];
  private readonly looseListings = new Map<string, string[]>();

  constructor(sources: ObjectSource[]) {
    this.sources = sources.map((s) => ({ dir: s.dir, packs: s.packs.current(), cache: s.packs.cache }));
  }

  read(oid: string): Promise<GitObject> {
    const found = this.find(oid);
    if (!found) return Promise.reject(gitErrors.missingObject(oid));
    return Promise.resolve(found);
  }

  async readBlob(oid: string): Promise<Buffer> {
    return (await this.read(oid)).content;
  }

  /** Packs first, as git looks (an index search costs no system call), then loose objects. */
  private find(oid: string): GitObject | undefined {
    const lookup = (base: string) => {
      const object = this.find(base);
      if (!object) throw gitErrors.missingObject(base);
      return object;
    };
    for (const source of this.sources) {
      for (const pack of source.packs) {
        const object = pack.read(oid, source.cache, lookup);
        if (object) return object;
      }
    }
    for (const source of this.sources) {
      const object = readLoose(source.dir, oid);
      if (object) return object;
    }
    return undefined;
  }

  private looseNames(prefix: string): string[] {
    let names = this.looseListings.get(prefix);
    if (!names) {
      names = this.sources.flatMap((source) => {
        try {
          return fs.readdirSync(path.join(source.dir, prefix));
        } catch {
          return [];
        }
      });
      this.looseListings.set(prefix, names);
    }
    return names;
  }

  /**
   * git's abbreviated id: at least 7 hex digits, more as the packed object
   * count grows (git 2.39 counts packed objects only), then lengthened until
   * no other object shares the prefix.
   */
  abbrev(oid: string): string {
    const packs = this.sources.flatMap((source) => source.packs.map((p) => p.index));
    const count = packs.reduce((n, p) => n + p.count, 0);
    const msb = count > 0 ? Math.floor(Math.log2(count)) : 0;
    let len = Math.max(7, Math.ceil((msb + 1) / 2));
    const raw = Buffer.from(oid, 'hex');
    const consider = (other: string) => {
      if (other === oid) return;
      len = Math.max(len, commonHexPrefix(oid, other) + 1);
    };
    for (const pack of packs) {
      const [at, found] = pack.search(raw);
      const after = found ? at + 1 : at;
      if (after < pack.count) consider(pack.oidAt(after).toString('hex'));
      if (at > 0) consider(pack.oidAt(at - 1).toString('hex'));
    }
    const rest = oid.slice(2);
    for (const name of this.looseNames(oid.slice(0, 2))) {
      if (name.length === 38 && name.startsWith(rest.slice(0, len - 2))) consider(oid.slice(0, 2) + name);
    }
    return oid.slice(0, Math.min(len, 40));
  }
}
