import { describe, expect, it } from 'vitest';
import type { CodeAnnotation } from '../../../web/src/annotations.ts';
import { diffRows, linesOf, parseDiff, splitHunk } from '../../../web/src/diff-model.ts';
import { viewRows } from '../../../web/src/diff-rows.ts';
import { buildTree } from '../../../web/src/file-tree-model.ts';

// What `git diff HEAD` printed for a binary change, a new staged file and a rename with edits.
const PATCH = `diff --git a/i.png b/i.png
index 45a21f1..bccac03 100644
Binary files a/i.png and b/i.png differ
diff --git a/n.txt b/n.txt
new file mode 100644
index 0000000..3e75765
--- /dev/null
+++ b/n.txt
@@ -0,0 +1 @@
+new
diff --git a/x.txt b/y.txt
similarity index 57%
rename from x.txt
rename to y.txt
index de98044..f8f7a32 100644
--- a/x.txt
+++ b/y.txt
@@ -1,3 +1,4 @@
 a
-b
+B
 c
+d
\\ No newline at end of file
diff --git a/old.txt b/old.txt
deleted file mode 100644
index 1111111..0000000
--- a/old.txt
+++ /dev/null
@@ -1,2 +0,0 @@
-gone
-too
`;

describe('parseDiff', () => {
  const files = parseDiff(PATCH);

  it('names files without the a/ b/ prefixes and knows their status', () => {
    expect(files.map((f) => [f.path, f.status, f.binary, f.additions, f.deletions])).toEqual([
      ['i.png', 'modified', true, 0, 0],
      ['n.txt', 'added', false, 1, 0],
      ['y.txt', 'renamed', false, 2, 1],
      ['old.txt', 'deleted', false, 0, 2],
    ]);
    expect(files[2]?.oldPath).toBe('x.txt');
  });

  it('numbers lines on each side the way git counts them', () => {
    const lines = files[2]?.hunks[0]?.lines.map((l) => [l.kind, l.oldNo, l.newNo, l.text]);
    expect(lines).toEqual([
      ['context', 1, 1, 'a'],
      ['del', 2, undefined, 'b'],
      ['add', undefined, 2, 'B'],
      ['context', 3, 3, 'c'],
      ['add', undefined, 4, 'd'],
    ]);
    expect(files[1]?.hunks[0]?.lines).toEqual([{ kind: 'add', oldNo: undefined, newNo: 1, text: 'new' }]);
    expect(files[3]?.hunks[0]?.lines.map((l) => l.oldNo)).toEqual([1, 2]);
  });

  it("keeps git's hunk headers as printed, function context included", () => {
    expect(files.flatMap((f) => f.hunks.map((h) => h.header))).toEqual([
      '@@ -0,0 +1 @@',
      '@@ -1,3 +1,4 @@',
      '@@ -1,2 +0,0 @@',
    ]);
    const withContext = parseDiff(
      'diff --git a/a.ts b/a.ts\n--- a/a.ts\n+++ b/a.ts\n@@ -10,2 +10,2 @@ function take(key) {\n-a\n+b\n x\n',
    );
    expect(withContext[0]?.hunks[0]?.header).toBe('@@ -10,2 +10,2 @@ function take(key) {');
  });

  it('treats an empty patch as no files', () => {
    expect(parseDiff('')).toEqual([]);
    expect(parseDiff('\n')).toEqual([]);
  });

  it('quotes lines of either side', () => {
    const file = files[2];
    if (file === undefined) throw new Error('missing file');
    expect(linesOf(file, 'old', 1, 2)).toEqual(['a', 'b']);
    expect(linesOf(file, 'new', 2, 4)).toEqual(['B', 'c', 'd']);
  });

  it('parses a 50,000-line diff', () => {
    const body = Array.from({ length: 25_000 }, (_, i) => `-old ${i}\n+new ${i}`).join('\n');
    const big = parseDiff(
      `diff --git a/big.txt b/big.txt\n--- a/big.txt\n+++ b/big.txt\n@@ -1,25000 +1,25000 @@\n${body}\n`,
    );
    expect(big[0]?.additions).toBe(25_000);
    expect(big[0]?.hunks[0]?.lines.at(-1)).toEqual({ kind: 'add', oldNo: undefined, newNo: 25_000, text: 'new 24999' });
  });
});

describe('split view', () => {
  it('pairs each run of deletions with the additions after it', () => {
    const hunk = parseDiff(PATCH)[2]?.hunks[0];
    if (hunk === undefined) throw new Error('missing hunk');
    expect(splitHunk(hunk).map((r) => [r.left?.oldNo, r.right?.newNo])).toEqual([
      [1, 1],
      [2, 2],
      [3, 3],
      [undefined, 4],
    ]);
  });
});

describe('rows', () => {
  const files = parseDiff(PATCH);

  it('lists file headers, placeholders, hunks and lines; collapsed files show only their header', () => {
    const rows = diffRows(files, 'unified', new Set([3]));
    expect(rows.map((r) => r.type)).toEqual([
      'file',
      'empty',
      'file',
      'hunk',
      'line',
      'file',
      'hunk',
      'line',
      'line',
      'line',
      'line',
      'line',
      'file',
    ]);
  });

  it('puts annotations and the open form after the line their range ends on, on their side', () => {
    const note: CodeAnnotation = {
      id: 'n1',
      type: 'comment',
      filePath: 'y.txt',
      lineStart: 1,
      lineEnd: 2,
      side: 'old',
      text: 'x',
    };
    const rows = viewRows(files, 'unified', new Set(), [note], { file: 2, side: 'new', start: 4, end: 4 }, true);
    const at = rows.findIndex((r) => r.type === 'notes');
    expect(rows[at - 1]).toMatchObject({ type: 'line', line: { kind: 'del', oldNo: 2 } });
    const form = rows.findIndex((r) => r.type === 'form');
    expect(rows[form - 1]).toMatchObject({ type: 'line', line: { newNo: 4 } });
    // The same annotation in the split layout sits after the row whose left side is old line 2.
    // While a range is still being dragged out, the form waits.
    expect(
      viewRows(files, 'unified', new Set(), [], { file: 2, side: 'new', start: 1, end: 4, dragging: true }, true).some(
        (r) => r.type === 'form',
      ),
    ).toBe(false);
    const split = viewRows(files, 'split', new Set(), [note], undefined, false);
    const s = split.findIndex((r) => r.type === 'notes');
    expect(split[s - 1]).toMatchObject({ type: 'split', row: { left: { oldNo: 2 } } });
  });
});

describe('file tree', () => {
  it('folds folders, sums counts and lists folders before files', () => {
    const tree = buildTree([
      { path: 'src/review/plan/a.ts', additions: 3, deletions: 1 },
      { path: 'src/review/plan/b.ts', additions: 1, deletions: 0 },
      { path: 'README.md', additions: 2, deletions: 2 },
      { path: 'src/cli.ts', additions: 0, deletions: 5 },
    ]);
    expect(tree.additions).toBe(6);
    const [src, readme] = tree.children;
    expect(readme).toMatchObject({ kind: 'file', name: 'README.md', file: 2 });
    expect(src).toMatchObject({ kind: 'dir', name: 'src', additions: 4, deletions: 6 });
    if (src?.kind !== 'dir') throw new Error('src is a folder');
    expect(src.children.map((c) => c.name)).toEqual(['review/plan', 'cli.ts']);
    expect(src.children[0]).toMatchObject({ path: 'src/review/plan', additions: 4, deletions: 1 });
  });
});
