import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HubStore, type NewReview } from '../../../src/hub/store.ts';

let dir: string;
let file: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'gatehouse-store-'));
  file = path.join(dir, 'nested', 'hub.db');
});
afterEach(() => rm(dir, { recursive: true, force: true }));

const plan = (overrides: Partial<NewReview<'plan'>> = {}): NewReview<'plan'> => ({
  kind: 'plan',
  title: 'A plan',
  origin: 'claude-code',
  project: 'p',
  branch: '',
  session: '',
  submitter: '',
  payload: { plan: '# A\n', permissionMode: 'default' },
  deadline: null,
  requestKey: null,
  baseUrl: 'http://localhost:19432/',
  ...overrides,
});

describe('HubStore', () => {
  it('numbers the versions of a session and finds the one before', () => {
    const store = new HubStore(file);
    expect(store.insert('a', plan({ session: 's' }), 1).review.version).toBe(1);
    expect(store.insert('b', plan({ session: 'other' }), 2).review.version).toBe(1);
    expect(
      store.insert('c', plan({ session: 's', payload: { plan: '# C\n', permissionMode: 'default' } }), 3).review
        .version,
    ).toBe(2);
    expect(store.insert('d', plan(), 4).review.version).toBe(1);
    const c = store.get('c');
    expect(c).toMatchObject({ id: 'c', version: 2, payload: { plan: '# C\n' }, createdAt: 3 });
    expect(c).toMatchObject({ decision: null, decidedAt: null });
    expect(c?.baseUrl).toBe('http://localhost:19432/');
    expect(c && store.previousVersion(c)?.id).toBe('a');
    const d = store.get('d');
    expect(d && store.previousVersion(d)).toBeUndefined();
    expect(d).toBeDefined();
    store.close();
  });

  it('records one decision only, and keeps everything across a reopen', () => {
    const store = new HubStore(file);
    store.insert('a', plan({ deadline: 99 }), 1);
    store.insert('b', plan(), 2);
    expect(store.decisionOf('a')).toBeNull();
    expect(store.decisionOf('nope')).toBeUndefined();
    expect(store.decide('a', { decision: 'approved' }, 5)).toBe(true);
    expect(store.decide('a', { decision: 'denied' }, 6)).toBe(false);
    store.close();
    const reopened = new HubStore(file);
    expect(reopened.decisionOf('a')).toEqual({ decision: 'approved' });
    expect(reopened.pending().map((r) => r.id)).toEqual(['b']);
    const decided = reopened.recentlyDecided(10);
    expect(decided).toMatchObject([{ id: 'a', decidedAt: 5, deadline: 99, decision: { decision: 'approved' } }]);
    reopened.close();
  });

  it('answers a retried submission with the review it made', () => {
    const store = new HubStore(file);
    const first = store.insert('a', plan({ requestKey: 'k', session: 's' }), 1);
    const retry = store.insert('b', plan({ requestKey: 'k', session: 's' }), 2);
    expect(first.created).toBe(true);
    expect(retry).toMatchObject({ created: false, review: { id: 'a', version: 1 } });
    expect(store.pending()).toHaveLength(1);
    store.close();
  });

  it('sets aside a row it cannot read, and keeps serving and reopening', () => {
    const setAside: [string, string][] = [];
    const store = new HubStore(file, (id, problem) => setAside.push([id, problem]));
    store.insert('good', plan({ deadline: 10 }), 1);
    store.insert('huge', plan({ requestKey: 'k' }), 2);
    store.insert('broken', plan(), 3);
    store.close();
    // What an older hub let in (a deadline past a JavaScript number), and a payload that no longer parses.
    const db = new DatabaseSync(file);
    db.prepare('UPDATE reviews SET deadline = ? WHERE id = ?').run(2n ** 62n, 'huge');
    db.prepare("UPDATE reviews SET payload = '{' WHERE id = ?").run('broken');
    db.close();

    const reopened = new HubStore(file, (id, problem) => setAside.push([id, problem]));
    expect(reopened.pending().map((r) => r.id)).toEqual(['good', 'broken']);
    expect(reopened.get('broken')).toBeUndefined();
    expect(setAside.map(([id]) => id)).toEqual(['huge', 'broken']);
    expect(setAside[0]?.[1]).toContain('deadline 4611686018427387904');
    // Set aside once: later reads skip it, a decision cannot land on it, its request key is free again.
    expect(reopened.pending().map((r) => r.id)).toEqual(['good']);
    expect(reopened.decisionOf('huge')).toBeUndefined();
    expect(reopened.decide('huge', { decision: 'approved' }, 4)).toBe(false);
    expect(reopened.insert('again', plan({ requestKey: 'k' }), 5).created).toBe(true);
    expect(setAside).toHaveLength(2);
    reopened.close();
  });

  it('keeps browser sessions, with their token, until they expire or end', () => {
    const store = new HubStore(file);
    store.addBrowserSession('d1', 100, 't1');
    store.addBrowserSession('d2', 100, 't2');
    expect(store.browserSessionToken('d1', 99)).toBe('t1');
    store.endBrowserSession('d2');
    expect(store.browserSessionToken('d2', 99)).toBeUndefined();
    expect(store.browserSessionToken('d1', 100)).toBeUndefined();
    expect(store.browserSessionToken('d1', 50)).toBeUndefined();
    expect(store.browserSessionToken('unknown', 0)).toBeUndefined();
    store.close();
  });

  it("keeps each submitter's sessions, versions and request keys apart", () => {
    const store = new HubStore(file);
    const alice = (o: Partial<NewReview<'plan'>>) => plan({ submitter: 'alice', session: 's', ...o });
    const bob = (o: Partial<NewReview<'plan'>>) => plan({ submitter: 'bob', session: 's', ...o });
    expect(store.insert('a1', alice({ requestKey: 'k' }), 1).review.version).toBe(1);
    // The same session name and the same key from bob are bob's own: version 1, a new review.
    expect(store.insert('b1', bob({ requestKey: 'k' }), 2)).toMatchObject({ created: true, review: { version: 1 } });
    expect(store.insert('a2', alice({}), 3).review.version).toBe(2);
    expect(store.insert('again', alice({ requestKey: 'k' }), 4)).toMatchObject({
      created: false,
      review: { id: 'a1' },
    });
    const a2 = store.get('a2');
    expect(a2 && store.previousVersion(a2)?.id).toBe('a1');
    expect(store.submitterOf('b1')).toBe('bob');
    expect(store.submitterOf('nope')).toBeUndefined();
    store.close();
  });
});
