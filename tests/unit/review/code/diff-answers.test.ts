import { describe, expect, it } from 'vitest';
import type { DiffType } from '../../../../src/git/diff-type.ts';
import type { JsonAnswer } from '../../../../src/http/json-bytes.ts';
import { DiffAnswers, type ComputedAnswer } from '../../../../src/review/code/diff-answers.ts';

/** A diff source whose computations the test finishes by hand. */
function source() {
  const calls: { type: DiffType; finish: (answer: ComputedAnswer | Error) => void }[] = [];
  const compute = (type: DiffType) =>
    new Promise<ComputedAnswer>((resolve, reject) => {
      calls.push({ type, finish: (a) => (a instanceof Error ? reject(a) : resolve(a)) });
    });
  return { calls, answers: new DiffAnswers(compute) };
}

const answer = (patch: string): ComputedAnswer => ({ state: ['ctx', patch], answer: { rawPatch: patch, note: 'é' } });

describe('DiffAnswers', () => {
  it('reads arriving while a diff is computed share that computation and its bytes', async () => {
    const { calls, answers } = source();
    const reads = Array.from({ length: 5 }, () => answers.get('uncommitted'));
    expect(calls.length).toBe(1);
    calls[0]?.finish(answer('p1'));
    const bytes = await Promise.all(reads);
    expect(new Set(bytes).size).toBe(1);
    expect(JSON.parse((bytes[0] as JsonAnswer).bytes.toString('utf8'))).toEqual({ rawPatch: 'p1', note: 'é' });
  });

  it('computes again once the last one ended; the same state reuses its bytes, a new one is serialised', async () => {
    const { calls, answers } = source();
    const first = answers.get('uncommitted');
    calls[0]?.finish(answer('p1'));
    const a = await first;
    const second = answers.get('uncommitted');
    expect(calls.length).toBe(2);
    calls[1]?.finish(answer('p1'));
    expect(await second).toBe(a);
    const third = answers.get('uncommitted');
    calls[2]?.finish(answer('p2'));
    const c = await third;
    expect(c).not.toBe(a);
    expect(JSON.parse(c.bytes.toString('utf8'))).toMatchObject({ rawPatch: 'p2' });
  });

  it('keeps each diff type apart', async () => {
    const { calls, answers } = source();
    const u = answers.get('uncommitted');
    const l = answers.get('last-commit');
    expect(calls.map((c) => c.type)).toEqual(['uncommitted', 'last-commit']);
    calls[0]?.finish(answer('u'));
    calls[1]?.finish(answer('l'));
    expect(JSON.parse((await u).bytes.toString('utf8'))).toMatchObject({ rawPatch: 'u' });
    expect(JSON.parse((await l).bytes.toString('utf8'))).toMatchObject({ rawPatch: 'l' });
  });

  it('a failed computation fails every read that shared it, and the next read tries again', async () => {
    const { calls, answers } = source();
    const reads = [answers.get('staged'), answers.get('staged')];
    calls[0]?.finish(new Error('git failed'));
    for (const read of reads) await expect(read).rejects.toThrow('git failed');
    const retry = answers.get('staged');
    calls[1]?.finish(answer('s'));
    expect(JSON.parse((await retry).bytes.toString('utf8'))).toMatchObject({ rawPatch: 's' });
  });
});
