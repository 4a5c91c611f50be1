import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { GitRepository } from '../../../src/git/repository.ts';
import { TempRepo } from '../../support/git-repo.ts';

/**
 * Random edits over tiny vocabularies of code-like lines, the worst case for
 * ambiguity (repeated lines, blank lines, indented blocks), and long edits
 * of long files, where git's search gives up on the smallest edit: every
 * file's patch must equal git's byte for byte, and must rebuild the new file
 * from the old one.
 */

const VOCAB = [
  '',
  '}',
  '{',
  '  return x;',
  'function f() {',
  '  a();',
  '  b();',
  '\tif (x) {',
  '\t}',
  '// note',
  'x',
  'y',
];
/** Indented blocks and blank lines, where the indent heuristic decides where a change group sits. */
const BLOCKS = ['', '', 'function g() {', '  if (a) {', '    x();', '    y();', '  }', '  return;', '}', '\t\tz();'];
const FILES = 40;

const repos: TempRepo[] = [];
afterEach(() => {
  for (const r of repos.splice(0)) r.cleanup();
});

const fileText = (lines: string[], newlineAtEnd: boolean) => {
  const text = lines.map((l) => `${l}\n`).join('');
  return newlineAtEnd ? text : text.replace(/\n$/, '');
};

const fileCase = (vocab: string[]) =>
  fc.record({
    old: fc.array(fc.constantFrom(...vocab), { maxLength: 40 }),
    edits: fc.array(
      fc.record({
        at: fc.nat(),
        kind: fc.constantFrom('insert', 'delete', 'replace'),
        lines: fc.array(fc.constantFrom(...vocab), { minLength: 1, maxLength: 4 }),
      }),
      { minLength: 1, maxLength: 5 },
    ),
    newlineAtEnd: fc.boolean(),
  });

/** Long files with many long edits over a few hundred distinct lines: past the search's cost limits. */
const longCase = fc.record({
  old: fc.array(
    fc.nat({ max: 300 }).map((n) => `line ${n}`),
    { minLength: 1500, maxLength: 3000 },
  ),
  edits: fc.array(
    fc.record({
      at: fc.nat(),
      kind: fc.constantFrom('insert', 'delete', 'replace'),
      lines: fc.array(
        fc.nat({ max: 300 }).map((n) => `line ${n}`),
        { minLength: 1, maxLength: 300, size: 'max' },
      ),
    }),
    { minLength: 20, maxLength: 60, size: 'max' },
  ),
  newlineAtEnd: fc.constant(true),
});

function applyEdits(lines: string[], edits: { at: number; kind: string; lines: string[] }[]): string[] {
  const out = [...lines];
  for (const e of edits) {
    const at = e.at % (out.length + 1);
    if (e.kind === 'insert') out.splice(at, 0, ...e.lines);
    else if (e.kind === 'delete') out.splice(at, e.lines.length);
    else out.splice(at, 1, ...e.lines);
  }
  return out;
}

/** Rebuilds the new text from the old one and a file's unified hunks. */
function applyHunks(oldText: string, filePatch: string): string {
  const oldLines = oldText.match(/[^\n]*\n|[^\n]+$/g) ?? [];
  const body = filePatch.slice(filePatch.indexOf('\n@@') + 1).split('\n');
  const out: string[] = [];
  let next = 0;
  for (let i = 0; i < body.length; i++) {
    const line = body[i] ?? '';
    const header = /^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@/.exec(line);
    if (header) {
      const start = Number(header[1]) - (header[2] === '0' ? 0 : 1);
      while (next < start) out.push(oldLines[next++] ?? '');
      continue;
    }
    const noNewline = body[i + 1] === '\\ No newline at end of file';
    const text = line.slice(1) + (noNewline ? '' : '\n');
    if (line.startsWith(' ') || line.startsWith('-')) {
      expect(oldLines[next]).toBe(text);
      next++;
    }
    if (line.startsWith(' ') || line.startsWith('+')) out.push(text);
  }
  while (next < oldLines.length) out.push(oldLines[next++] ?? '');
  return out.join('');
}

const split = (patch: string) => patch.split(/^(?=diff --git )/m).filter(Boolean);

interface FileCase {
  old: string[];
  edits: { at: number; kind: string; lines: string[] }[];
  newlineAtEnd: boolean;
}

/** Commits every case's old and new text and compares the last-commit patch with git's, file by file. */
async function matchesGit(cases: FileCase[]): Promise<number> {
  const r = TempRepo.init();
  repos.push(r);
  cases.forEach((c, i) => r.write(`f${i}.txt`, fileText(c.old, true)));
  r.commitAll('old');
  const newTexts = cases.map((c) => fileText(applyEdits(c.old, c.edits), c.newlineAtEnd));
  newTexts.forEach((t, i) => r.write(`f${i}.txt`, t));
  r.commitAll('new');
  const ours = split((await GitRepository.open(r.dir).diff('last-commit')).latin1Patch);
  const theirs = split(r.diff('HEAD~1..HEAD'));
  expect(ours).toEqual(theirs);
  for (const mine of ours) {
    if (!mine.includes('\n@@')) continue;
    const index = Number(/^diff --git a\/f(\d+)\.txt/.exec(mine)?.[1]);
    expect(applyHunks(fileText(cases[index]?.old ?? [], true), mine)).toBe(newTexts[index]);
  }
  r.cleanup();
  return ours.length;
}

describe('diff engine vs git diff on random edits', () => {
  it('matches git byte for byte over a tiny vocabulary of code lines', async () => {
    let files = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(fileCase(VOCAB), { minLength: FILES, maxLength: FILES }), async (cases) => {
        files += await matchesGit(cases);
      }),
      { numRuns: 12, seed: 20261123 },
    );
    console.log(`random edits: ${files} files identical to git`);
  });

  it('matches git byte for byte on indented blocks and blank lines', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fileCase(BLOCKS), { minLength: FILES, maxLength: FILES }), async (cases) => {
        await matchesGit(cases);
      }),
      { numRuns: 6, seed: 20261124 },
    );
  });

  it('matches git byte for byte on long edits of long files', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(longCase, { minLength: 4, maxLength: 4 }), async (cases) => {
        await matchesGit(cases);
      }),
      { numRuns: 3, seed: 20261125 },
    );
  });
});
