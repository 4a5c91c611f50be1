import { diffLines as lineDiff, structuredPatch } from 'diff';
import { describe, expect, it } from 'vitest';
import { EXPAND_STEP, gapRange, showFile, withLines, type FileContext } from '../../../web/src/diff-context.ts';
import { changePairs, diffRows, parseDiff, partnerOf, type DiffFile } from '../../../web/src/diff-model.ts';
import { markRanges, wordChanges } from '../../../web/src/word-diff.ts';

const numbered = (n: number, change: Record<number, string | null> = {}) =>
  Array.from({ length: n }, (_, i) => change[i + 1] ?? (change[i + 1] === null ? null : `line ${i + 1}`)).filter(
    (l) => l !== null,
  );

/** A one-file patch as git prints it (3 lines of context), made by jsdiff from two texts. */
function patchOf(before: string[], after: string[]): DiffFile {
  const p = structuredPatch('f.ts', 'f.ts', `${before.join('\n')}\n`, `${after.join('\n')}\n`, '', '', { context: 3 });
  const hunks = p.hunks.map((h) =>
    [`@@ -${h.oldStart},${h.oldLines} +${h.newStart},${h.newLines} @@ fn()`, ...h.lines].join('\n'),
  );
  return parseDiff(
    `diff --git a/f.ts b/f.ts\nindex 1111111..2222222 100644\n--- a/f.ts\n+++ b/f.ts\n${hunks.join('\n')}\n`,
  )[0] as DiffFile;
}

/** Every line of a file as shown, numbered on both sides, with the gaps as `…from-to`. */
function render(file: DiffFile, gaps: { hunk: number; from: number; to: number | undefined }[]): string[] {
  const out: string[] = [];
  file.hunks.forEach((hunk, h) => {
    const gap = gaps.find((g) => g.hunk === h);
    if (gap) out.push(`…${gap.from}-${gap.to}`);
    out.push(hunk.header);
    for (const l of hunk.lines)
      out.push(`${l.oldNo ?? '_'}:${l.newNo ?? '_'} ${l.kind === 'add' ? '+' : l.kind === 'del' ? '-' : ' '}${l.text}`);
  });
  const end = gaps.find((g) => g.hunk === file.hunks.length);
  if (end) out.push(`…${end.from}-${end.to}`);
  return out;
}

/** The context a client holds after fetching every line of `lines` in `ranges`. */
function fetched(lines: string[], ...ranges: [number, number][]): FileContext {
  let context: FileContext | undefined;
  for (const [start, end] of ranges) context = withLines(context, start, lines.slice(start - 1, end), lines.length);
  return context as FileContext;
}

describe('showing more lines around hunks', () => {
  const before = numbered(100);
  // An edit at 30, an insertion after 60, a deletion of 80: three hunks, gaps between them.
  const after = numbered(100, { 30: 'changed 30', 61: 'line 61', 80: null });
  after.splice(60, 0, 'inserted');
  const file = patchOf(before, after);

  it('finds the gaps above, between and below the hunks; the end stays open while the file length is unknown', () => {
    expect(file.hunks.map((h) => h.header)).toEqual([
      '@@ -27,7 +27,7 @@ fn()',
      '@@ -58,6 +58,7 @@ fn()',
      '@@ -77,7 +78,6 @@ fn()',
    ]);
    expect(showFile(file, undefined).gaps).toEqual([
      { hunk: 0, from: 1, to: 26, above: false, below: true },
      { hunk: 1, from: 34, to: 57, above: true, below: true },
      { hunk: 2, from: 65, to: 77, above: true, below: true },
      { hunk: 3, from: 84, to: undefined, above: true, below: false },
    ]);
  });

  it('grows hunks with fetched lines, numbered on both sides, and merges them once a gap is closed', () => {
    const context = fetched(after, [7, 26], [34, 40], [65, 77], [84, 99]);
    const shown = showFile(file, context);
    expect(after).toHaveLength(100);
    expect(shown.gaps).toEqual([
      { hunk: 0, from: 1, to: 6, above: false, below: true },
      { hunk: 1, from: 41, to: 57, above: true, below: true },
      { hunk: 2, from: 100, to: 100, above: true, below: false },
    ]);
    const lines = render(shown.file, shown.gaps);
    expect(lines).toContain('@@ -7,34 +7,34 @@');
    expect(lines).toContain('@@ -58,42 +58,42 @@ fn()');
    expect(lines).toContain('34:34  line 34');
    expect(lines).toContain('66:67  line 66');
    expect(lines).toContain('78:79  line 78');
    expect(lines).toContain('81:81  line 81');
    expect(lines).toContain('99:99  line 99');
    expect(lines).not.toContain('100:100  line 100');
    // Every shown line is the file's own line on each side.
    for (const hunk of shown.file.hunks) {
      for (const l of hunk.lines) {
        if (l.oldNo !== undefined) expect(before[l.oldNo - 1], `old ${l.oldNo}`).toBe(l.text);
        if (l.newNo !== undefined) expect(after[l.newNo - 1], `new ${l.newNo}`).toBe(l.text);
      }
    }
  });

  it('ends a file whose last hunk has fewer trailing context lines than git prints, and one fetched to its end', () => {
    const tail = patchOf(numbered(50), numbered(50, { 49: 'changed' }));
    expect(showFile(tail, undefined).gaps.map((g) => g.hunk)).toEqual([0]);
    const closed = showFile(file, fetched(after, [84, 100]));
    expect(closed.gaps.map((g) => g.hunk)).toEqual([0, 1, 2]);
    expect(showFile(file, fetched(after, [1, 100]))).toMatchObject({
      gaps: [],
      file: { hunks: [{ header: '@@ -1,100 +1,100 @@' }] },
    });
  });

  it('numbers the lines below the last hunk past what it added or removed', () => {
    const shorter = numbered(50, { 40: null });
    const tail = patchOf(numbered(50), shorter);
    expect(tail.hunks.map((h) => h.header)).toEqual(['@@ -37,7 +37,6 @@ fn()']);
    const shown = showFile(tail, fetched(shorter, [43, 49]));
    expect(shown.gaps).toEqual([{ hunk: 0, from: 1, to: 36, above: false, below: true }]);
    expect(render(shown.file, shown.gaps)).toContain('44:43  line 44');
    expect(render(shown.file, shown.gaps).at(-1)).toBe('50:49  line 50');
  });

  it('leaves added, deleted and binary files whole', () => {
    const files = parseDiff(
      [
        'diff --git a/n b/n\nnew file mode 100644\n--- /dev/null\n+++ b/n\n@@ -0,0 +1 @@\n+x',
        'diff --git a/o b/o\ndeleted file mode 100644\n--- a/o\n+++ /dev/null\n@@ -1 +0,0 @@\n-x',
        'diff --git a/i.png b/i.png\nindex 45a21f1..bccac03 100644\nBinary files a/i.png and b/i.png differ\n',
      ].join('\n'),
    );
    expect(files.map((f) => [f.status, f.binary])).toEqual([
      ['added', false],
      ['deleted', false],
      ['modified', true],
    ]);
    for (const file of files) expect(showFile(file, undefined), file.path).toEqual({ file, gaps: [] });
  });

  it('asks for a step from the side chosen, or a whole short gap', () => {
    const gap = { hunk: 1, from: 34, to: 57, above: true, below: true };
    expect(gapRange(gap, 'down')).toEqual({ start: 34, end: 34 + EXPAND_STEP - 1 });
    expect(gapRange(gap, 'up')).toEqual({ start: 57 - EXPAND_STEP + 1, end: 57 });
    expect(gapRange(gap, 'all')).toEqual({ start: 34, end: 57 });
    expect(gapRange({ ...gap, from: 50 }, 'up')).toEqual({ start: 50, end: 57 });
    expect(gapRange({ hunk: 3, from: 84, to: undefined, above: true, below: false }, 'down')).toEqual({
      start: 84,
      end: 84 + EXPAND_STEP - 1,
    });
  });

  it('puts a "show more" row before each hunk with a gap above it and after the last one', () => {
    const shown = showFile(file, undefined);
    const rows = diffRows([shown.file], 'unified', new Set(), () => shown.gaps);
    expect(rows.filter((r) => r.type === 'expand' || r.type === 'hunk').map((r) => r.type)).toEqual([
      'expand',
      'hunk',
      'expand',
      'hunk',
      'expand',
      'hunk',
      'expand',
    ]);
    expect(rows.at(-1)).toMatchObject({ type: 'expand', gap: { hunk: 3 } });
    expect(diffRows([shown.file], 'unified').some((r) => r.type === 'expand')).toBe(false);
  });
});

describe('word-level changes', () => {
  it('pairs each removed line with the added line beside it, as the split view does', () => {
    const file = patchOf(['a', 'b', 'c', 'd'], ['a', 'B', 'C', 'x', 'd']);
    const hunk = file.hunks[0] as DiffFile['hunks'][number];
    const pairs = changePairs(hunk);
    const text = (t: string) => hunk.lines.find((l) => l.text === t && l.kind !== 'context');
    expect(pairs.get(text('b') as never)?.text).toBe('B');
    expect(pairs.get(text('C') as never)?.text).toBe('c');
    expect(pairs.has(text('x') as never)).toBe(false);
    const rows = diffRows([file], 'unified');
    expect(rows.flatMap((r) => (r.type === 'line' ? [partnerOf(hunk, r.line)?.text ?? '-'] : []))).toEqual([
      '-',
      'B',
      'C',
      'b',
      'c',
      '-',
      '-',
    ]);
  });

  it('marks the words that differ on each side', () => {
    const before = '  const v0 = compute(0, "old"); // 1';
    const after = '  const v0 = compute(0, "new", options); // 1';
    const changes = wordChanges(before, after);
    expect(changes?.old.map(([s, e]) => before.slice(s, e))).toEqual(['old']);
    expect(changes?.new.map(([s, e]) => after.slice(s, e))).toEqual(['new', ', options']);
    expect(wordChanges('same', 'same')).toBeUndefined();
    expect(wordChanges('return compute(a, b);', 'throw new Error("no way");')).toBeUndefined();
    expect(wordChanges(`x${'a'.repeat(2_000)}`, `y${'a'.repeat(2_000)}`)).toBeUndefined();
    // Sanity: the same changes line-diffed are one removed and one added line.
    expect(lineDiff(`${before}\n`, `${after}\n`).filter((p) => p.added || p.removed)).toHaveLength(2);
  });

  it('wraps marked characters of highlighted HTML in <mark>, entities counting as one, never across a tag', () => {
    const html = '<span class="kw">const</span> a = <span class="str">&quot;x&lt;y&quot;</span>;';
    // text: `const a = "x<y";`
    expect(markRanges(html, [[10, 15]])).toBe(
      '<span class="kw">const</span> a = <span class="str"><mark class="wd">&quot;x&lt;y&quot;</mark></span>;',
    );
    expect(markRanges(html, [[4, 7]])).toBe(
      '<span class="kw">cons<mark class="wd">t</mark></span><mark class="wd"> a</mark> = ' +
        '<span class="str">&quot;x&lt;y&quot;</span>;',
    );
    expect(markRanges(html, [[15, 16]])).toBe(
      '<span class="kw">const</span> a = <span class="str">&quot;x&lt;y&quot;</span><mark class="wd">;</mark>',
    );
    expect(markRanges(html, [])).toBe(html);
    expect(markRanges('a &amp; b', [[2, 3]])).toBe('a <mark class="wd">&amp;</mark> b');
  });
});
