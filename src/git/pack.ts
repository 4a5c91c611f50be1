import fs from 'node:fs';
import path from 'node:path';
import { inflateSync } from 'node:zlib';
import { gitErrors } from './errors.ts';

export type ObjectType = 'blob' | 'tree' | 'commit' | 'tag';

/** An object as git stores it, read from a pack here or from a loose file (objects.ts). */
export interface GitObject {
  type: ObjectType;
  content: Buffer;
}

const TYPES: Record<number, ObjectType> = { 1: 'commit', 2: 'tree', 3: 'blob', 4: 'tag' };
const OFS_DELTA = 6;
const REF_DELTA = 7;
const FIRST_READ = 4096;

/** The sorted object ids of one pack's `.idx` file (versions 1 and 2), with their offsets. */
export class PackIndex {
  readonly count: number;
  private readonly buf: Buffer;
  private readonly v2: boolean;
  private readonly names: number;

  constructor(buf: Buffer) {
    this.buf = buf;
    this.v2 = buf.readUInt32BE(0) === 0xff744f63;
    const fanout = this.v2 ? 8 : 0;
    this.count = buf.readUInt32BE(fanout + 255 * 4);
    this.names = fanout + 1024;
  }

  oidAt(i: number): Buffer {
    const at = this.v2 ? this.names + i * 20 : this.names + i * 24 + 4;
    return this.buf.subarray(at, at + 20);
  }

  offsetAt(i: number): number {
    if (!this.v2) return this.buf.readUInt32BE(this.names + i * 24);
    const table = this.names + this.count * 24;
    const offset = this.buf.readUInt32BE(table + i * 4);
    if (!(offset & 0x80000000)) return offset;
    // Packs over 2 GiB keep large offsets in a second table.
    const large = table + this.count * 4 + (offset & 0x7fffffff) * 8;
    return Number(this.buf.readBigUInt64BE(large));
  }

  /** Position of `oid`, or where it would be inserted; and whether it is there. */
  search(oid: Buffer): [position: number, found: boolean] {
    let lo = 0;
    let hi = this.count;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const cmp = this.oidAt(mid).compare(oid);
      if (cmp === 0) return [mid, true];
      if (cmp < 0) lo = mid + 1;
      else hi = mid;
    }
    return [lo, false];
  }
}

/** zlib's worst case for `size` bytes that did not compress, plus the stream's own bytes. */
const deflateBound = (size: number) => size + (size >> 10) + 64;

function applyDelta(base: Buffer, delta: Buffer, oid: string): Buffer {
  let pos = 0;
  const varint = () => {
    let value = 0;
    let scale = 1;
    let c: number;
    do {
      c = delta.readUInt8(pos++);
      value += (c & 127) * scale;
      scale *= 128;
    } while (c & 128);
    return value;
  };
  if (varint() !== base.length) throw gitErrors.corrupt(`delta of ${oid} does not fit its base`);
  const out = Buffer.allocUnsafe(varint());
  let at = 0;
  while (pos < delta.length) {
    const op = delta.readUInt8(pos++);
    if (op & 0x80) {
      // Copy from the base: which offset and size bytes follow is in the op's low bits.
      let offset = 0;
      let size = 0;
      for (let bit = 0; bit < 4; bit++) if (op & (1 << bit)) offset += delta.readUInt8(pos++) * 2 ** (8 * bit);
      for (let bit = 0; bit < 3; bit++) if (op & (0x10 << bit)) size += delta.readUInt8(pos++) * 2 ** (8 * bit);
      if (size === 0) size = 0x10000;
      at += base.copy(out, at, offset, offset + size);
    } else if (op) {
      at += delta.copy(out, at, pos, pos + op);
      pos += op;
    } else {
      throw gitErrors.corrupt(`delta of ${oid}`);
    }
  }
  if (at !== out.length) throw gitErrors.corrupt(`delta of ${oid}`);
  return out;
}

/**
 * Inflated pack entries (delta bases above all), kept across requests: a
 * pack entry never changes. Bounded by bytes; when full it starts over.
 */
export class ObjectCache {
  static readonly MAX_BYTES = 64 * 1024 * 1024;
  private readonly entries = new Map<string, GitObject>();
  private bytes = 0;

  get(key: string): GitObject | undefined {
    return this.entries.get(key);
  }

  add(key: string, object: GitObject): void {
    if (this.bytes + object.content.length > ObjectCache.MAX_BYTES) {
      this.entries.clear();
      this.bytes = 0;
    }
    this.entries.set(key, object);
    this.bytes += object.content.length;
  }
}

/**
 * One pack file, read entry by entry with positioned reads and Node's
 * native zlib (never the whole file into memory). Deltas are resolved
 * against their bases, which stay cached (see ObjectCache).
 */
export class Pack {
  readonly name: string;
  readonly index: PackIndex;
  private readonly file: string;
  private fd: number | undefined;
  private size = 0;

  constructor(dir: string, name: string) {
    this.name = name;
    this.file = path.join(dir, `${name}.pack`);
    this.index = new PackIndex(fs.readFileSync(path.join(dir, `${name}.idx`)));
  }

  private open(): number {
    if (this.fd === undefined) {
      this.fd = fs.openSync(this.file, 'r');
      this.size = fs.fstatSync(this.fd).size;
    }
    return this.fd;
  }

  close(): void {
    if (this.fd !== undefined) fs.closeSync(this.fd);
    this.fd = undefined;
  }

  private readAt(offset: number, length: number): Buffer {
    const fd = this.open();
    const buf = Buffer.allocUnsafe(Math.max(0, Math.min(length, this.size - offset)));
    const read = fs.readSync(fd, buf, 0, buf.length, offset);
    return buf.subarray(0, read);
  }

  /** The object with this id, or undefined when this pack does not hold it. */
  read(oid: string, bases: ObjectCache, lookup: (oid: string) => GitObject): GitObject | undefined {
    const [position, found] = this.index.search(Buffer.from(oid, 'hex'));
    if (!found) return undefined;
    return this.readEntry(this.index.offsetAt(position), oid, bases, lookup);
  }

  private readEntry(offset: number, oid: string, bases: ObjectCache, lookup: (oid: string) => GitObject): GitObject {
    const key = `${this.name}:${offset}`;
    const cached = bases.get(key);
    if (cached) return cached;
    let chunk = this.readAt(offset, FIRST_READ);
    let pos = 0;
    let c = chunk.readUInt8(pos++);
    const type = (c >> 4) & 7;
    let size = c & 15;
    let scale = 16;
    while (c & 0x80) {
      c = chunk.readUInt8(pos++);
      size += (c & 127) * scale;
      scale *= 128;
    }
    let baseOffset = 0;
    let baseOid = '';
    if (type === OFS_DELTA) {
      c = chunk.readUInt8(pos++);
      let back = c & 127;
      while (c & 0x80) {
        c = chunk.readUInt8(pos++);
        back = (back + 1) * 128 + (c & 127);
      }
      baseOffset = offset - back;
    } else if (type === REF_DELTA) {
      baseOid = chunk.toString('hex', pos, pos + 20);
      pos += 20;
    }
    if (pos + deflateBound(size) > chunk.length) chunk = this.readAt(offset, pos + deflateBound(size));
    // An output chunk of the known size: zlib's default 16 KiB chunk would stay allocated behind every
    // small cached entry.
    const data = inflateSync(chunk.subarray(pos), { chunkSize: Math.max(64, size + 64) });
    if (data.length !== size) throw gitErrors.corrupt(`pack entry of ${oid} in ${this.name}`);
    let object: GitObject;
    const known = TYPES[type];
    if (known) object = { type: known, content: data };
    else if (type === OFS_DELTA || type === REF_DELTA) {
      const base = type === OFS_DELTA ? this.readEntry(baseOffset, oid, bases, lookup) : lookup(baseOid);
      object = { type: base.type, content: applyDelta(base.content, data, oid) };
    } else {
      throw gitErrors.corrupt(`pack entry of ${oid} in ${this.name} has type ${type}`);
    }
    bases.add(key, object);
    return object;
  }
}

/**
 * The packs of a repository, kept across requests: a pack's name is the
 * hash of its content, so a known name needs no re-reading. Each request
 * re-lists the folder, picking up new packs and dropping removed ones.
 */
export class PackSet {
  readonly cache = new ObjectCache();
  private readonly dir: string;
  private readonly packs = new Map<string, Pack>();

  constructor(objectsDir: string) {
    this.dir = path.join(objectsDir, 'pack');
  }

  current(): Pack[] {
    let names: string[] = [];
    try {
      names = fs
        .readdirSync(this.dir)
        .filter((n) => n.endsWith('.idx'))
        .map((n) => n.slice(0, -4));
    } catch {
      // No pack folder: every object is loose.
    }
    const live = new Set(names);
    for (const [name, pack] of this.packs) {
      if (!live.has(name)) {
        pack.close();
        this.packs.delete(name);
      }
    }
    for (const name of names) if (!this.packs.has(name)) this.packs.set(name, new Pack(this.dir, name));
    return [...this.packs.values()];
  }
}
