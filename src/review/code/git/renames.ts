import { isBinary } from './content.ts';
import type { FilePair, FileVersion } from './tree.ts';
import { MODE_EXEC, MODE_FILE } from './tree.ts';

/**
 * git's default rename detection (diff.renames=true): a deleted path and an
 * added path become one rename when their contents are at least 50% similar,
 * by git's own measure (diffcore-rename.c, diffcore-delta.c), in git's order:
 * exact matches first (preferring the same file name), then pairs whose file
 * names are unique on both sides and at least 75% similar, then the best
 * remaining pairs.
 */

/** A path of the final diff: a plain pair, or a rename with its similarity score. */
export interface DiffItem extends FilePair {
  /** Similarity in git's units (0–60000) when this is a rename. */
  score?: number;
}

export const MAX_SCORE = 60000;
const MIN_SCORE = MAX_SCORE / 2;
const MIN_BASENAME_SCORE = MIN_SCORE + 0.5 * (MAX_SCORE - MIN_SCORE);
const CANDIDATES_PER_DST = 4;
const RENAME_LIMIT = 1000;
const HASHBASE = 107927;

const isRegular = (mode: number) => mode === MODE_FILE || mode === MODE_EXEC;
const basename = (path: string) => path.slice(path.lastIndexOf('/') + 1);

/** Byte counts of content chunks (lines, or 64-byte runs) by chunk hash. */
function spanHashes(content: Buffer): Map<number, number> {
  const text = !isBinary(content);
  const spans = new Map<number, number>();
  let n = 0;
  let accum1 = 0;
  let accum2 = 0;
  const add = () => {
    // (accum1 + accum2 * 0x61) in 32-bit unsigned arithmetic, then mod HASHBASE.
    const hash = ((accum1 + Math.imul(accum2, 0x61)) >>> 0) % HASHBASE;
    spans.set(hash, (spans.get(hash) ?? 0) + n);
    n = 0;
    accum1 = 0;
    accum2 = 0;
  };
  for (let i = 0; i < content.length; i++) {
    const c = content[i]!;
    // A CR of a CRLF pair is not content in a text file.
    if (text && c === 0x0d && content[i + 1] === 0x0a) continue;
    const old1 = accum1;
    accum1 = (((accum1 << 7) ^ (accum2 >>> 25)) + c) >>> 0;
    accum2 = ((accum2 << 7) ^ (old1 >>> 25)) >>> 0;
    if (++n < 64 && c !== 0x0a) continue;
    add();
  }
  if (n > 0) add();
  return spans;
}

interface Candidate {
  version: FileVersion;
  content: Buffer;
  spans?: Map<number, number>;
  used: boolean;
}

function spansOf(c: Candidate): Map<number, number> {
  c.spans ??= spanHashes(c.content);
  return c.spans;
}

/** git's estimate_similarity: bytes of `dst` found in `src`, scaled to MAX_SCORE by the larger size. */
function similarity(src: Candidate, dst: Candidate): number {
  if (!isRegular(src.version.mode) || !isRegular(dst.version.mode)) return 0;
  const max = Math.max(src.content.length, dst.content.length);
  const base = Math.min(src.content.length, dst.content.length);
  if (max * (MAX_SCORE - MIN_SCORE) < (max - base) * MAX_SCORE) return 0;
  if (max === 0) return 0;
  const a = spansOf(src);
  const b = spansOf(dst);
  let copied = 0;
  for (const [hash, count] of a) {
    const other = b.get(hash);
    if (other !== undefined) copied += Math.min(count, other);
  }
  return Math.floor((copied * MAX_SCORE) / max);
}

export type ContentLoader = (version: FileVersion) => Promise<Buffer>;

/**
 * Turns deleted/added pairs into renames where git would. `pairs` must be
 * in path order; the result keeps it, a rename standing where its new path is.
 */
export async function detectRenames(pairs: FilePair[], load: ContentLoader): Promise<DiffItem[]> {
  const srcPairs = pairs.filter((p) => p.old && !p.new);
  const dstPairs = pairs.filter((p) => !p.old && p.new);
  if (srcPairs.length === 0 || dstPairs.length === 0) return pairs;

  const renameOf = new Map<FilePair, { src: Candidate; score: number }>();
  const usedSrc = new Set<FilePair>();
  const srcs = srcPairs.map((p) => ({ pair: p, version: p.old! }));

  // 1. Exact renames: same blob (and the same mode unless both are regular files).
  for (const dst of dstPairs) {
    const target = dst.new!;
    let best: { pair: FilePair; version: FileVersion } | undefined;
    for (const src of srcs) {
      if (usedSrc.has(src.pair) || src.version.oid !== target.oid) continue;
      if ((!isRegular(src.version.mode) || !isRegular(target.mode)) && src.version.mode !== target.mode) continue;
      if (basename(src.version.path) === basename(target.path)) {
        best = src;
        break;
      }
      best ??= src;
    }
    if (best) {
      usedSrc.add(best.pair);
      renameOf.set(dst, { src: { version: best.version, content: Buffer.alloc(0), used: true }, score: MAX_SCORE });
    }
  }

  const remainingDst = dstPairs.filter((p) => !renameOf.has(p));
  const remainingSrc = srcPairs.filter((p) => !usedSrc.has(p));
  if (remainingDst.length > 0 && remainingSrc.length > 0) {
    const srcCands: Candidate[] = await Promise.all(remainingSrc.map(async (p) => ({ version: p.old!, content: await load(p.old!), used: false })));
    const dstCands = new Map<FilePair, Candidate>();
    for (const p of remainingDst) dstCands.set(p, { version: p.new!, content: await load(p.new!), used: false });
    const srcPairOf = new Map(srcCands.map((c, i) => [c, remainingSrc[i]!]));
    const record = (dst: FilePair, src: Candidate, score: number) => {
      src.used = true;
      usedSrc.add(srcPairOf.get(src)!);
      renameOf.set(dst, { src, score });
    };

    // 2. File names unique among the remaining sources and destinations.
    const uniqueBy = <T>(items: T[], name: (t: T) => string) => {
      const seen = new Map<string, T | null>();
      for (const item of items) {
        const key = name(item);
        seen.set(key, seen.has(key) ? null : item);
      }
      return seen;
    };
    const srcByName = uniqueBy(srcCands, (c) => basename(c.version.path));
    const dstByName = uniqueBy(remainingDst, (p) => basename(p.new!.path));
    for (const src of srcCands) {
      const name = basename(src.version.path);
      const dst = dstByName.get(name);
      if (!dst || srcByName.get(name) !== src || renameOf.has(dst)) continue;
      const score = similarity(src, dstCands.get(dst)!);
      if (score >= MIN_BASENAME_SCORE) record(dst, src, score);
    }

    // 3. Everything else: the best-scoring pairs first.
    const sources = srcCands.filter((c) => !c.used);
    const dsts = remainingDst.filter((p) => !renameOf.has(p));
    const tooMany = dsts.length * sources.length > RENAME_LIMIT * RENAME_LIMIT;
    if (!tooMany && sources.length > 0) {
      const scored: { dst: FilePair; dstIndex: number; src: Candidate; score: number; sameName: number }[] = [];
      dsts.forEach((dst, dstIndex) => {
        const dstCand = dstCands.get(dst)!;
        const top: typeof scored = [];
        for (const src of sources) {
          const entry = { dst, dstIndex, src, score: similarity(src, dstCand), sameName: basename(src.version.path) === basename(dst.new!.path) ? 1 : 0 };
          // Keep the best few per destination, as git does.
          top.push(entry);
          top.sort(byScore);
          if (top.length > CANDIDATES_PER_DST) top.pop();
        }
        scored.push(...top);
      });
      scored.sort(byScore);
      for (const entry of scored) {
        if (entry.score < MIN_SCORE) break;
        if (renameOf.has(entry.dst) || entry.src.used) continue;
        record(entry.dst, entry.src, entry.score);
      }
    }
  }

  const items: DiffItem[] = [];
  for (const pair of pairs) {
    const rename = renameOf.get(pair);
    if (rename) items.push({ old: rename.src.version, new: pair.new, score: rename.score });
    else if (!usedSrc.has(pair)) items.push(pair);
  }
  return items;
}

function byScore(a: { score: number; sameName: number }, b: { score: number; sameName: number }): number {
  return a.score === b.score ? b.sameName - a.sameName : b.score - a.score;
}
