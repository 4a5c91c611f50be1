import { describe, expect, it } from 'vitest';
import type { CodeAnnotation, PlanAnnotation } from '../../../web/src/annotations.ts';
import { blockquote, codeFeedback, fenced, languageOf, planFeedback } from '../../../web/src/feedback.ts';

const plan = (over: Partial<PlanAnnotation>): PlanAnnotation => ({
  id: 'x',
  kind: 'comment',
  quote: 'q',
  start: 0,
  end: 1,
  text: '',
  ...over,
});

describe('planFeedback', () => {
  it('is empty without annotations, so the server default applies', () => {
    expect(planFeedback([])).toBe('');
  });

  it('quotes each passage with what to do, general comments first, then in document order', () => {
    const md = planFeedback([
      plan({ id: 'b', kind: 'replace', quote: 'use Redis', start: 50, end: 59, text: 'use an in-memory map' }),
      plan({ id: 'a', kind: 'comment', quote: 'token bucket\nper key', start: 10, end: 30, text: 'Why per key?' }),
      plan({ id: 'g', kind: 'global', quote: '', start: -1, end: -1, text: 'Split into two PRs.' }),
      plan({ id: 'd', kind: 'delete', quote: 'Step 4', start: 80, end: 86, text: '' }),
    ]);
    expect(md).toBe(
      [
        '# Plan review feedback',
        'The reviewer did not approve this plan yet. Address each of the 4 items below, then present the revised plan.',
        '### 1. General comment\n\nSplit into two PRs.',
        '### 2. Comment\n\n> token bucket\n> per key\n\nWhy per key?',
        '### 3. Replace this\n\n> use Redis\n\nReplace the quoted passage with:\n\n```\nuse an in-memory map\n```',
        '### 4. Remove this\n\n> Step 4\n\nRemove the quoted passage from the plan.',
      ].join('\n\n') + '\n',
    );
  });

  it('keeps a deletion reason', () => {
    expect(planFeedback([plan({ kind: 'delete', text: 'Out of scope.' })])).toContain(
      'Remove the quoted passage from the plan. Out of scope.',
    );
  });
});

describe('fenced and blockquote', () => {
  it('fences text that itself contains backtick fences with a longer fence', () => {
    expect(fenced('a\n```js\nx\n```', 'md')).toBe('````md\na\n```js\nx\n```\n````');
    expect(fenced('plain')).toBe('```\nplain\n```');
  });

  it('quotes blank lines without trailing spaces', () => {
    expect(blockquote('a\n\nb')).toBe('> a\n>\n> b');
  });
});

describe('codeFeedback', () => {
  const lookup = (path: string, side: string, start: number, end: number): string[] =>
    path === 'src/a.ts' ? Array.from({ length: end - start + 1 }, (_, i) => `${side}${start + i}`) : [];
  const ann = (over: Partial<CodeAnnotation>): CodeAnnotation => ({
    id: 'i',
    type: 'comment',
    filePath: 'src/a.ts',
    lineStart: 1,
    lineEnd: 1,
    side: 'new',
    ...over,
  });

  it('is empty when there is nothing to say', () => {
    expect(codeFeedback([], '  ', ['src/a.ts'], lookup)).toBe('');
  });

  it('orders by file as the diff does, then line, and quotes the code on the annotated side', () => {
    const md = codeFeedback(
      [
        ann({
          id: '2',
          filePath: 'src/a.ts',
          lineStart: 7,
          lineEnd: 8,
          side: 'old',
          type: 'suggestion',
          text: 'simpler',
          suggestedCode: 'return x;',
        }),
        ann({ id: '1', filePath: 'z.py', lineStart: 3, lineEnd: 3, type: 'concern', text: 'race' }),
        ann({ id: '3', filePath: 'src/a.ts', lineStart: 2, lineEnd: 2, text: 'name?' }),
      ],
      'Overall fine.',
      ['z.py', 'src/a.ts'],
      lookup,
    );
    expect(md).toBe(
      [
        '# Code review feedback',
        'Overall fine.',
        '### 1. Concern: `z.py` line 3 (new version)\n\nrace',
        '### 2. Comment: `src/a.ts` line 2 (new version)\n\n```ts\nnew2\n```\n\nname?',
        '### 3. Suggestion: `src/a.ts` lines 7-8 (old version, before the change)\n\n```ts\nold7\nold8\n```\n\nsimpler\n\nSuggested code:\n\n```ts\nreturn x;\n```',
      ].join('\n\n') + '\n',
    );
  });

  it('names fence languages from extensions', () => {
    expect(languageOf('a/b.tsx')).toBe('tsx');
    expect(languageOf('Makefile')).toBe('');
    expect(languageOf('x.YML')).toBe('yaml');
  });
});
