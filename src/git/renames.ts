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
    const c = content[i] ?? 0;
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
  pair: FilePair;
  version: FileVersion;
  content?: Buffer;
  spans?: Map<number, number>;
  used: boolean;
}

const sizeOf = (c: Candidate) => c.content?.length ?? 0;

function spansOf(c: Candidate): Map<number, number> {
  c.spans ??= spanHashes(c.content ?? Buffer.alloc(0));
  return c.spans;
}

/** git's estimate_similarity: bytes of `dst` found in `src`, scaled to MAX_SCORE by the larger size. */
function similarity(src: Candidate, dst: Candidate): number {
  if (!isRegular(src.version.mode) || !isRegular(dst.version.mode)) return 0;
  const max = Math.max(sizeOf(src), sizeOf(dst));
  const base = Math.min(sizeOf(src), sizeOf(dst));
  if (max === 0 || max * (MAX_SCORE - MIN_SCORE) < (max - base) * MAX_SCORE) return 0;
  const a = spansOf(src);
  const b = spansOf(dst);
  let copied = 0;
  for (const [hash, count] of a) {
    const other = b.get(hash);
    if (other !== undefined) copied += Math.min(count, other);
  }
  return Math.floor((copied * MAX_SCORE) / max);
}

/** Candidates by file name, for the names that occur once only. */
function uniqueNames(candidates: Candidate[]): Map<string, Candidate> {
  const seen = new Map<string, Candidate | null>();
  for (const c of candidates) {
    const name = basename(c.version.path);
    seen.set(name, seen.has(name) ? null : c);
  }
  const unique = new Map<string, Candidate>();
  for (const [name, c] of seen) if (c) unique.set(name, c);
  return unique;
}

interface Scored {
  dst: Candidate;
  src: Candidate;
  score: number;
  sameName: number;
}

function byScore(a: Scored, b: Scored): number {
  return a.score === b.score ? b.sameName - a.sameName : b.score - a.score;
}

export type ContentLoader = (version: FileVersion) => Promise<Buffer>;

/**
 * Turns deleted/added pairs into renames where git would. `pairs` must be
 * in path order; the result keeps it, a rename standing where its new path is.
 */
export async function detectRenames(pairs: FilePair[], load: ContentLoader): Promise<DiffItem[]> {
  const sources: Candidate[] = [];
  const dests: Candidate[] = [];
  for (const pair of pairs) {
    if (pair.old && !pair.new) sources.push({ pair, version: pair.old, used: false });
    else if (pair.new && !pair.old) dests.push({ pair, version: pair.new, used: false });
  }
  if (sources.length === 0 || dests.length === 0) return pairs;

  const renameOf = new Map<FilePair, { src: Candidate; score: number }>();
  const record = (dst: Candidate, src: Candidate, score: number) => {
    src.used = true;
    dst.used = true;
    renameOf.set(dst.pair, { src, score });
  };

  // 1. Exact renames: the same blob (and the same mode unless both are regular files).
  for (const dst of dests) {
    let best: Candidate | undefined;
    for (const src of sources) {
      if (src.used || src.version.oid !== dst.version.oid) continue;
      if ((!isRegular(src.version.mode) || !isRegular(dst.version.mode)) && src.version.mode !== dst.version.mode)
        continue;
      if (basename(src.version.path) === basename(dst.version.path)) {
        best = src;
        break;
      }
      best ??= src;
    }
    if (best) record(dst, best, MAX_SCORE);
  }

  let srcLeft = sources.filter((c) => !c.used);
  let dstLeft = dests.filter((c) => !c.used);
  if (srcLeft.length > 0 && dstLeft.length > 0) {
    await Promise.all([...srcLeft, ...dstLeft].map(async (c) => (c.content = await load(c.version))));

    // 2. A file name unique among the remaining sources and among the remaining destinations.
    const srcByName = uniqueNames(srcLeft);
    const dstByName = uniqueNames(dstLeft);
    for (const [name, src] of srcByName) {
      const dst = dstByName.get(name);
      if (!dst) continue;
      const score = similarity(src, dst);
      if (score >= MIN_BASENAME_SCORE) record(dst, src, score);
    }

    // 3. Everything else: the best-scoring pairs first, keeping the best few per destination.
    srcLeft = srcLeft.filter((c) => !c.used);
    dstLeft = dstLeft.filter((c) => !c.used);
    if (srcLeft.length > 0 && dstLeft.length * srcLeft.length <= RENAME_LIMIT * RENAME_LIMIT) {
      const scored: Scored[] = [];
      for (const dst of dstLeft) {
        const top: Scored[] = [];
        for (const src of srcLeft) {
          top.push({
            dst,
            src,
            score: similarity(src, dst),
            sameName: basename(src.version.path) === basename(dst.version.path) ? 1 : 0,
          });
          top.sort(byScore);
          if (top.length > CANDIDATES_PER_DST) top.pop();
        }
        scored.push(...top);
      }
      scored.sort(byScore);
      for (const { dst, src, score } of scored) {
        if (score < MIN_SCORE) break;
        if (!dst.used && !src.used) record(dst, src, score);
      }
    }
  }

  const renamedAway = new Set(sources.filter((c) => c.used).map((c) => c.pair));
  const items: DiffItem[] = [];
  for (const pair of pairs) {
    const rename = renameOf.get(pair);
    if (rename) items.push({ old: rename.src.version, new: pair.new, score: rename.score });
    else if (!renamedAway.has(pair)) items.push(pair);
  }
  return items;
}
