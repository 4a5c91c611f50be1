import { describe, expect, it } from 'vitest';
import { TtlStore } from '../../../../src/proxy/translate/stores.ts';

describe('TtlStore', () => {
  const clock = () => {
    let now = 0;
    return { now: () => now, advance: (ms: number) => (now += ms) };
  };

  it('forgets an entry once its time to live has passed', () => {
    const c = clock();
    const store = new TtlStore<string>({ maxEntries: 10, maxBytes: 1000, ttlMs: 100 }, c.now);
    store.set('a', 'A', 1);
    c.advance(99);
    expect(store.get('a')).toBe('A');
    c.advance(1);
    expect(store.get('a')).toBeUndefined();
    expect(store.size).toBe(0);
  });

  it('drops the oldest entries beyond the entry limit', () => {
    const store = new TtlStore<number>({ maxEntries: 3, maxBytes: 1000, ttlMs: 1000 });
    for (let i = 0; i < 5; i++) store.set(String(i), i, 1);
    expect([0, 1, 2, 3, 4].map((i) => store.get(String(i)))).toEqual([undefined, undefined, 2, 3, 4]);
  });

  it('drops the oldest entries beyond the byte limit, and never keeps one larger than it', () => {
    const store = new TtlStore<string>({ maxEntries: 100, maxBytes: 10, ttlMs: 1000 });
    store.set('a', 'A', 4);
    store.set('b', 'B', 4);
    store.set('c', 'C', 4);
    expect([store.get('a'), store.get('b'), store.get('c')]).toEqual([undefined, 'B', 'C']);
    store.set('huge', 'H', 11);
    expect(store.get('huge')).toBeUndefined();
    expect(store.get('c')).toBe('C');
  });

  it('replaces an entry set again under the same key', () => {
    const store = new TtlStore<string>({ maxEntries: 2, maxBytes: 10, ttlMs: 1000 });
    store.set('a', 'A', 6);
    store.set('a', 'A2', 6);
    expect(store.get('a')).toBe('A2');
    expect(store.size).toBe(1);
  });
});
