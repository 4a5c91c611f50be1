import { describe, expect, it } from 'vitest';
import { annotate } from '../../../src/review/annotate/kind.ts';
import { REVIEW_KINDS } from '../../../src/review/kinds.ts';
import { readBody } from '../../../src/review/validate.ts';

describe('the annotate kind', () => {
  it('is in the registry under its name', () => {
    expect(REVIEW_KINDS.annotate).toBe(annotate);
  });

  it('exits 0 for an approval or sent annotations, 2 for a denial, 3 for a timeout', () => {
    const { codec } = annotate;
    expect(codec.timeout()).toEqual({ decision: 'timeout', feedback: null });
    const codes = (['approved', 'feedback', 'denied', 'timeout'] as const).map((d) =>
      codec.exitCode({ decision: d, feedback: null }),
    );
    expect(codes).toEqual([0, 0, 2, 3]);
    expect(codec.encode({ decision: 'feedback', feedback: 'x' })).toEqual({ decision: 'feedback', feedback: 'x' });
  });

  it('reads a hub submission field by field', () => {
    const read = (body: unknown) => annotate.readPayload(readBody(body));
    expect(read({ document: '# D\n' })).toEqual({ document: '# D\n', file: 'document', gate: false });
    expect(read({ document: '# D\n', file: ' a.md ', gate: true })).toEqual({
      document: '# D\n',
      file: 'a.md',
      gate: true,
    });
    expect(() => read({})).toThrow('Missing field document');
    expect(() => read({ document: '  ' })).toThrow('Invalid field document: must be a non-empty string');
    expect(() => read({ document: '# D', gate: 'yes' })).toThrow('Invalid field gate: must be true or false');
    expect(() => read({ document: '# D', file: 'x'.repeat(201) })).toThrow('Invalid field file');
  });

  it('names its outcome as the inbox shows it, and compares versions by the document', () => {
    expect(annotate.outcome({ decision: 'feedback', feedback: null })).toBe('feedback');
    expect(annotate.text({ document: '# D\n', file: 'd.md', gate: false })).toBe('# D\n');
  });
});
