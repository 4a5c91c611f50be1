import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { GitRepository } from '../../../src/git/repository.ts';
import { TempRepo } from '../../support/git-repo.ts';

/**
 * Random moves, edits, deletions and additions over files with distinct
 * lines (so hunks are unambiguous): which pairs git calls renames, with
 * which similarity, and in which order, must match exactly.
 */

const repos: TempRepo[] = [];
afterEach(() => {
  for (const r of repos.splice(0)) r.cleanup();
});

const DIRS = ['a', 'b', 'a/deep', 'c'];
const NAMES = ['util.ts', 'index.ts', 'readme.md', 'data.json', 'main.c'];

const content = (seed: number, lines: number, edited: number) =>
  Array.from({ length: lines }, (_, i) =>
    i < edited ? `edited ${seed} ${i}\n` : `file ${seed} line ${i} ${'x'.repeat(i % 13)}\n`,
  ).join('');

const operation = fc.record({
  kind: fc.constantFrom('move', 'move-edit', 'delete', 'add', 'copy-add', 'keep'),
  dir: fc.constantFrom(...DIRS),
  name: fc.constantFrom(...NAMES),
  edited: fc.nat({ max: 12 }),
});

describe('rename detection vs git on random moves', () => {
  it('pairs the same files with the same similarity, in the same order', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.nat({ max: 40 }), { minLength: 4, maxLength: 10 }),
        fc.array(operation, { minLength: 4, maxLength: 10 }),
        async (sizes, ops) => {
          const r = TempRepo.init();
          repos.push(r);
          const files = sizes.map((lines, i) => ({
            path: `${DIRS[i % DIRS.length]}/${NAMES[i % NAMES.length]}${i}`,
            seed: i,
            lines: lines + 2,
          }));
          for (const f of files) r.write(f.path, content(f.seed, f.lines, 0));
          r.commitAll('base');
          ops.forEach((op, k) => {
            const f = files[k % files.length];
            if (!f) return;
            const target = `${op.dir}/${k}-${op.name}`;
            if (op.kind === 'move' || op.kind === 'move-edit') {
              r.remove(f.path).write(target, content(f.seed, f.lines, op.kind === 'move' ? 0 : op.edited));
            } else if (op.kind === 'delete') {
              r.remove(f.path);
            } else if (op.kind === 'add') {
              r.write(target, content(1000 + k, 5 + op.edited, 0));
            } else if (op.kind === 'copy-add') {
              r.write(target, content(f.seed, f.lines, op.edited));
            }
          });
          r.commitAll('moves');
          const engine = GitRepository.open(r.dir);
          expect((await engine.diff('last-commit')).latin1Patch).toBe(r.diff('HEAD~1..HEAD'));
          r.cleanup();
        },
      ),
      { numRuns: 30, seed: 42 },
    );
  }, 120_000);
});
