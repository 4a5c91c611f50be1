/**
 * git's change compaction (xdiff's xdl_change_compact with the indent
 * heuristic, on by default since git 2.14), re-implemented over the change
 * marks a line diff produced. A run of added or deleted lines can often sit
 * at several positions with the same meaning ("ambiguous slides"); git picks
 * one by rules this module follows, so hunks land where git puts them.
 */

/** One file's lines and its change marks; `chg[i + 1]` marks line i (zero sentinels at both ends). */
export interface MarkedFile {
  lines: string[];
  chg: Uint8Array;
}

export function markedFile(lines: string[]): MarkedFile {
  return { lines, chg: new Uint8Array(lines.length + 2) };
}

interface Group {
  start: number;
  end: number;
}

const changed = (f: MarkedFile, i: number) => f.chg[i + 1] === 1;
const mark = (f: MarkedFile, i: number, v: 0 | 1) => {
  f.chg[i + 1] = v;
};

function groupInit(f: MarkedFile): Group {
  const g = { start: 0, end: 0 };
  while (changed(f, g.end)) g.end++;
  return g;
}

function groupNext(f: MarkedFile, g: Group): boolean {
  if (g.end === f.lines.length) return false;
  g.start = g.end + 1;
  g.end = g.start;
  while (changed(f, g.end)) g.end++;
  return true;
}

function groupPrevious(f: MarkedFile, g: Group): boolean {
  if (g.start === 0) return false;
  g.end = g.start - 1;
  g.start = g.end;
  while (changed(f, g.start - 1)) g.start--;
  return true;
}

function slideDown(f: MarkedFile, g: Group): boolean {
  if (g.end < f.lines.length && f.lines[g.start] === f.lines[g.end]) {
    mark(f, g.start++, 0);
    mark(f, g.end++, 1);
    while (changed(f, g.end)) g.end++;
    return true;
  }
  return false;
}

function slideUp(f: MarkedFile, g: Group): boolean {
  if (g.start > 0 && f.lines[g.start - 1] === f.lines[g.end - 1]) {
    mark(f, --g.start, 1);
    mark(f, --g.end, 0);
    while (changed(f, g.start - 1)) g.start--;
    return true;
  }
  return false;
}

// The indent heuristic's weights, as git tuned them.
const MAX_INDENT = 200;
const MAX_BLANKS = 20;
const INDENT_HEURISTIC_MAX_SLIDING = 100;
const START_OF_FILE_PENALTY = 1;
const END_OF_FILE_PENALTY = 21;
const TOTAL_BLANK_WEIGHT = -30;
const POST_BLANK_WEIGHT = 6;
const RELATIVE_INDENT_PENALTY = -4;
const RELATIVE_INDENT_WITH_BLANK_PENALTY = 10;
const RELATIVE_OUTDENT_PENALTY = 24;
const RELATIVE_OUTDENT_WITH_BLANK_PENALTY = 17;
const RELATIVE_DEDENT_PENALTY = 23;
const RELATIVE_DEDENT_WITH_BLANK_PENALTY = 17;
const INDENT_WEIGHT = 60;

/** Columns of leading whitespace (tabs to multiples of 8), or -1 for a blank line. */
function indentOf(line: string): number {
  let indent = 0;
  for (let i = 0; i < line.length; i++) {
    const c = line.charCodeAt(i);
    if (c === 0x20) indent += 1;
    else if (c === 0x09) indent += 8 - (indent % 8);
    else if (c !== 0x0a && c !== 0x0d) return indent;
    if (indent >= MAX_INDENT) return MAX_INDENT;
  }
  return -1;
}

interface Split {
  endOfFile: boolean;
  indent: number;
  preBlank: number;
  preIndent: number;
  postBlank: number;
  postIndent: number;
}

/**
 * Blank lines met walking from `from` by `step`, and the indent of the first
 * other line (-1: none; 0 after too many blanks).
 */
function blanksThenIndent(lines: string[], from: number, step: 1 | -1): [blanks: number, indent: number] {
  let blanks = 0;
  for (let i = from; i >= 0 && i < lines.length; i += step) {
    const indent = indentOf(lines[i] ?? '');
    if (indent !== -1) return [blanks, indent];
    if (++blanks === MAX_BLANKS) return [blanks, 0];
  }
  return [blanks, -1];
}

function measureSplit(f: MarkedFile, split: number): Split {
  const n = f.lines.length;
  const [preBlank, preIndent] = blanksThenIndent(f.lines, split - 1, -1);
  const [postBlank, postIndent] = blanksThenIndent(f.lines, split + 1, 1);
  return {
    endOfFile: split >= n,
    indent: split >= n ? -1 : indentOf(f.lines[split] ?? ''),
    preBlank,
    preIndent,
    postBlank,
    postIndent,
  };
}

interface Score {
  effectiveIndent: number;
  penalty: number;
}

function addSplit(m: Split, s: Score): void {
  if (m.preIndent === -1 && m.preBlank === 0) s.penalty += START_OF_FILE_PENALTY;
  if (m.endOfFile) s.penalty += END_OF_FILE_PENALTY;
  const postBlank = m.indent === -1 ? 1 + m.postBlank : 0;
  const totalBlank = m.preBlank + postBlank;
  s.penalty += TOTAL_BLANK_WEIGHT * totalBlank + POST_BLANK_WEIGHT * postBlank;
  const indent = m.indent !== -1 ? m.indent : m.postIndent;
  const anyBlanks = totalBlank !== 0;
  s.effectiveIndent += indent;
  if (indent === -1 || m.preIndent === -1 || indent === m.preIndent) return;
  if (indent > m.preIndent) s.penalty += anyBlanks ? RELATIVE_INDENT_WITH_BLANK_PENALTY : RELATIVE_INDENT_PENALTY;
  else if (m.postIndent !== -1 && m.postIndent > indent)
    s.penalty += anyBlanks ? RELATIVE_OUTDENT_WITH_BLANK_PENALTY : RELATIVE_OUTDENT_PENALTY;
  else s.penalty += anyBlanks ? RELATIVE_DEDENT_WITH_BLANK_PENALTY : RELATIVE_DEDENT_PENALTY;
}

function compareScores(a: Score, b: Score): number {
  const indents = Math.sign(a.effectiveIndent - b.effectiveIndent);
  return INDENT_WEIGHT * indents + (a.penalty - b.penalty);
}

const broken = () => new Error('diff change groups out of sync');

/** Slides every change group of `f` (keeping `other` in step) to where git would show it. */
export function compact(f: MarkedFile, other: MarkedFile): void {
  const g = groupInit(f);
  const go = groupInit(other);
  for (;;) {
    if (g.end !== g.start) {
      let groupSize: number;
      let earliestEnd: number;
      let endMatchingOther: number;
      do {
        groupSize = g.end - g.start;
        endMatchingOther = -1;
        while (slideUp(f, g)) if (!groupPrevious(other, go)) throw broken();
        earliestEnd = g.end;
        if (go.end > go.start) endMatchingOther = g.end;
        while (slideDown(f, g)) {
          if (!groupNext(other, go)) throw broken();
          if (go.end > go.start) endMatchingOther = g.end;
        }
      } while (groupSize !== g.end - g.start);

      if (g.end === earliestEnd) {
        // Nowhere to slide.
      } else if (endMatchingOther !== -1) {
        // Line up with the other side's change group.
        while (go.end === go.start) {
          if (!slideUp(f, g) || !groupPrevious(other, go)) throw broken();
        }
      } else {
        let shift = Math.max(earliestEnd, g.end - groupSize - 1, g.end - INDENT_HEURISTIC_MAX_SLIDING);
        let bestShift = -1;
        let best: Score = { effectiveIndent: 0, penalty: 0 };
        for (; shift <= g.end; shift++) {
          const score: Score = { effectiveIndent: 0, penalty: 0 };
          addSplit(measureSplit(f, shift), score);
          addSplit(measureSplit(f, shift - groupSize), score);
          if (bestShift === -1 || compareScores(score, best) <= 0) {
            best = score;
            bestShift = shift;
          }
        }
        while (g.end > bestShift) {
          if (!slideUp(f, g) || !groupPrevious(other, go)) throw broken();
        }
      }
    }
    if (!groupNext(f, g)) break;
    if (!groupNext(other, go)) throw broken();
  }
}
