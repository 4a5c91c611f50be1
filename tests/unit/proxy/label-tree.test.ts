import { describe, expect, it } from 'vitest';
import { LabelTree } from '../../../src/proxy/label-tree.ts';

describe('LabelTree', () => {
  it('gives the same value for the same labels, made once', () => {
    const made: string[] = [];
    const tree = new LabelTree<[string, number, string], { id: string }>((labels) => {
      made.push(labels.join('/'));
      return { id: labels.join('/') };
    });
    const a = tree.get(['openai', 200, 'gpt']);
    expect(tree.get(['openai', 200, 'gpt'])).toBe(a);
    expect(tree.get(['openai', 429, 'gpt'])).not.toBe(a);
    expect(tree.get(['openai', 200, 'gpt-2'])).not.toBe(a);
    expect(tree.get(['anthropic', 200, 'gpt'])).not.toBe(a);
    expect(made).toEqual(['openai/200/gpt', 'openai/429/gpt', 'openai/200/gpt-2', 'anthropic/200/gpt']);
    expect(tree.size).toBe(4);
  });

  it('tells apart labels that a joined string would not', () => {
    const tree = new LabelTree<[string, string], string[]>((labels) => [...labels]);
    expect(tree.get(['a\0b', 'c'])).not.toBe(tree.get(['a', 'b\0c']));
    expect(tree.get(['', ''])).toEqual(['', '']);
    const mixed = new LabelTree<[number | string], string>(([label]) => typeof label);
    expect([mixed.get([200]), mixed.get(['200'])]).toEqual(['number', 'string']);
  });

  it('lists every value', () => {
    const tree = new LabelTree<[string, string], string>((labels) => labels.join('+'));
    expect([...tree.values()]).toEqual([]);
    for (const labels of [
      ['k1', 'm1'],
      ['k2', 'm1'],
      ['k1', 'm2'],
    ] as [string, string][])
      tree.get(labels);
    expect([...tree.values()].sort()).toEqual(['k1+m1', 'k1+m2', 'k2+m1']);
    const flat = new LabelTree<[string], number>(() => 1);
    flat.get(['x']);
    expect([...flat.values()]).toEqual([1]);
  });
});
