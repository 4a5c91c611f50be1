import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { GitRepository } from '../../../src/git/repository.ts';
import { TempRepo } from '../../support/git-repo.ts';

/**
 * Random edits over a tiny vocabulary of code-like lines: the worst case for
 * ambiguity. Every file's header must equal git's. Its hunks must equal
 * git's too, except where git's xdiff and jsdiff pick two different but
 * equally small edits (Myers ties): then the patch must have the same
 * number of removed and added lines as git's and must rebuild the new file
 * exactly from the old one.
 */

const VOCAB = ['', '}', '{', '  return x;', 'function f() {', '  a();', '  b();', '\tif (x) {', '\t}', '// note', 'x', 'y'];
const FILES = 40;

const repos: TempRepo[] = [];
afterEach(() => {
  for (const r of repos.splice(0)) r.cleanup();
});

const fileText = (lines: string[], newlineAtEnd: boolean) => {
  const text = lines.map((l) => `${l}\n`).join('');
  return newlineAtEnd ? text : text.replace(/\n$/, '');
};

const edit = fc.record({
  at: fc.nat(),
  kind: fc.constantFrom('insert', 'delete', 'replace'),
  lines: fc.array(fc.constantFrom(...VOCAB), { minLength: 1, maxLength: 4 }),
});

const fileCase = fc.record({
  old: fc.array(fc.constantFrom(...VOCAB), { maxLength: 40 }),
  edits: fc.array(edit, { minLength: 1, maxLength: 5 }),
  newlineAtEnd: fc.boolean(),
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
const headerOf = (filePatch: string) => filePatch.slice(0, filePatch.indexOf('\n@@') + 1);
const count = (filePatch: string, marker: string) => filePatch.split('\n').filter((l) => l.startsWith(marker) && !l.startsWith(`${marker}${marker}${marker} `)).length;

describe('diff engine vs git diff on random edits', () => {
  it('matches git file for file; hunks exactly, or an equally small edit that rebuilds the file', async () => {
    let exact = 0;
    let ties = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(fileCase, { minLength: FILES, maxLength: FILES }), async (cases) => {
        const r = TempRepo.init();
        repos.push(r);
        cases.forEach((c, i) => r.write(`f${i}.txt`, fileText(c.old, true)));
        r.commitAll('old');
        const newTexts = cases.map((c) => fileText(applyEdits(c.old, c.edits), c.newlineAtEnd));
        newTexts.forEach((t, i) => r.write(`f${i}.txt`, t));
        r.commitAll('new');
        const ours = split((await GitRepository.open(r.dir).diff('last-commit')).latin1Patch);
        const theirs = split(r.diff('HEAD~1..HEAD'));
        expect(ours.map(headerOf)).toEqual(theirs.map(headerOf));
        ours.forEach((mine, k) => {
          const git = theirs[k] ?? '';
          if (mine === git) {
            exact++;
            return;
          }
          ties++;
          expect(count(mine, '-')).toBe(count(git, '-'));
          expect(count(mine, '+')).toBe(count(git, '+'));
          const index = Number(/^diff --git a\/f(\d+)\.txt/.exec(mine)?.[1]);
          const oldText = fileText(cases[index]?.old ?? [], true);
          expect(applyHunks(oldText, mine)).toBe(newTexts[index]);
        });
        r.cleanup();
      }),
      { numRuns: 12, seed: 20261123 },
    );
    // Ties are the exception, not the rule.
    expect(ties).toBeLessThan(exact / 10);
    console.log(`random edits: ${exact} files identical to git, ${ties} equally small alternative edits`);
  });
});
