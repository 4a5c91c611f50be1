import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { inflateSync } from 'node:zlib';
import git from 'isomorphic-git';
import { gitErrors } from './errors.ts';
import type { ObjectCache, Pack, PackSet } from './pack.ts';

export type ObjectType = 'blob' | 'tree' | 'commit' | 'tag';

export interface GitObject {
  type: ObjectType;
  content: Buffer;
}

export const NULL_OID = '0'.repeat(40);

/** The id git gives `content` as a blob. */
export function hashBlob(content: Buffer): string {
  return createHash('sha1').update(`blob ${content.length}\0`).update(content).digest('hex');
}

function commonHexPrefix(a: string, b: string): number {
  let i = 0;
  while (i < 40 && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

/**
 * Reads objects of one repository for the length of one request: loose
 * objects and packs with Node's native zlib (several times faster than
 * isomorphic-git's inflate, and packs are never read whole); isomorphic-git
 * is the fallback for an object found in neither (e.g. behind alternates).
 */
export class ObjectStore {
  readonly gitdir: string;
  private readonly objectsDir: string;
  private readonly isoCache: object;
  private readonly packs: Pack[];
  private readonly packed: ObjectCache;
  private readonly looseListings = new Map<string, string[]>();

  constructor(gitdir: string, packs: PackSet, isoCache: object) {
    this.gitdir = gitdir;
    this.objectsDir = path.join(gitdir, 'objects');
    this.isoCache = isoCache;
    this.packs = packs.current();
    this.packed = packs.cache;
  }

  async read(oid: string): Promise<GitObject> {
    const found = this.readLocal(oid);
    if (found) return found;
    try {
      const { type, object } = await git.readObject({ fs, gitdir: this.gitdir, oid, format: 'content', cache: this.isoCache });
      const content = object as Uint8Array;
      return { type: type as ObjectType, content: Buffer.from(content.buffer, content.byteOffset, content.byteLength) };
    } catch (error) {
      throw gitErrors.missingObject(oid, error);
    }
  }

  async readBlob(oid: string): Promise<Buffer> {
    return (await this.read(oid)).content;
  }

  /** A packed or loose object of this repository (packs first, as git looks: an index search costs no system call). */
  private readLocal(oid: string): GitObject | undefined {
    const lookup = (base: string) => {
      const object = this.readLocal(base);
      if (!object) throw gitErrors.missingObject(base);
      return object;
    };
    for (const pack of this.packs) {
      const object = pack.read(oid, this.packed, lookup);
      if (object) return object;
    }
    return this.readLoose(oid);
  }

  private readLoose(oid: string): GitObject | undefined {
    let deflated: Buffer;
    try {
      deflated = fs.readFileSync(path.join(this.objectsDir, oid.slice(0, 2), oid.slice(2)));
    } catch {
      return undefined;
    }
    const raw = inflateSync(deflated);
    const space = raw.indexOf(0x20);
    const nul = raw.indexOf(0, space);
    if (space < 0 || nul < 0) throw gitErrors.corrupt(`object ${oid}`);
    return { type: raw.toString('latin1', 0, space) as ObjectType, content: raw.subarray(nul + 1) };
  }

  private looseNames(prefix: string): string[] {
    let names = this.looseListings.get(prefix);
    if (!names) {
      try {
        names = fs.readdirSync(path.join(this.objectsDir, prefix));
      } catch {
        names = [];
      }
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
    const packs = this.packs.map((p) => p.index);
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
