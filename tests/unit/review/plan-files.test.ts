import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isInside, resolveInsideRoots, userPath } from '../../../src/review/paths.ts';
import { localDate, localDateTime, planSlug, planTitle, writeNewFile } from '../../../src/review/plan/files.ts';
import { listVaults, noteContent, noteFolder, notememoUrl, noteTitle } from '../../../src/review/plan/notes.ts';
import { savedPlanContent, savePlan } from '../../../src/review/plan/routes.ts';

let root: string;
beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'gatehouse-files-'));
});
afterAll(() => rm(root, { recursive: true, force: true }));

describe('plan names', () => {
  it('slugs the first # heading', () => {
    expect(planSlug('intro\n## Sub\n# Add Caching Layer!\n# Second')).toBe('add-caching-layer');
    expect(planSlug('# Café — déjà vu  ')).toBe('cafe-deja-vu');
    expect(planSlug('# ../../etc/passwd')).toBe('etc-passwd');
    expect(planSlug('no heading at all\n## only h2')).toBe('plan');
    expect(planSlug('# !!!')).toBe('plan');
    expect(planSlug(`# ${'word '.repeat(40)}`).length).toBeLessThanOrEqual(60);
    expect(planTitle('#NoSpace\n# Real Title ##')).toBe('Real Title');
  });

  it('formats local dates', () => {
    const d = new Date(2026, 0, 5, 7, 3);
    expect(localDate(d)).toBe('2026-01-05');
    expect(localDateTime(d)).toBe('2026-01-05 07-03');
  });

  it('note titles drop characters file systems and note apps refuse', () => {
    expect(noteTitle('# A/B: C? <d> | "e" #tag [x]')).toBe('A B C d e tag x');
    expect(noteTitle('nothing')).toBe('Plan');
  });
});

describe('writeNewFile', () => {
  it('never overwrites: -2, -3…, and leaves no temporary file', async () => {
    const dir = path.join(root, 'new', 'nested');
    const first = await writeNewFile(dir, 'p-2026-01-01-approved', '.md', 'one');
    const second = await writeNewFile(dir, 'p-2026-01-01-approved', '.md', 'two');
    const third = await writeNewFile(dir, 'p-2026-01-01-approved', '.md', 'three');
    expect([first, second, third].map((p) => path.basename(p))).toEqual([
      'p-2026-01-01-approved.md',
      'p-2026-01-01-approved-2.md',
      'p-2026-01-01-approved-3.md',
    ]);
    expect(await readFile(first, 'utf8')).toBe('one');
    expect(await readFile(third, 'utf8')).toBe('three');
    expect((await readdir(dir)).sort()).toEqual([
      'p-2026-01-01-approved-2.md',
      'p-2026-01-01-approved-3.md',
      'p-2026-01-01-approved.md',
    ]);
  });

  it('gives concurrent writers distinct files', async () => {
    const dir = path.join(root, 'race');
    const paths = await Promise.all(
      Array.from({ length: 12 }, (_, i) => writeNewFile(dir, 'same', '.md', `content ${i}`)),
    );
    expect(new Set(paths).size).toBe(12);
    const contents = await Promise.all(paths.map((p) => readFile(p, 'utf8')));
    expect(new Set(contents).size).toBe(12);
    expect(await readdir(dir)).toHaveLength(12);
  });
});

describe('savePlan', () => {
  it('names <slug>-<date>-approved.md / -denied.md and appends the deny feedback', async () => {
    const now = new Date(2026, 10, 23, 9, 30);
    const dir = path.join(root, 'plans');
    const approved = await savePlan(dir, '# Ship It\nsteps', 'approved', null, now);
    expect(approved).toBe(path.join(dir, 'ship-it-2026-11-23-approved.md'));
    expect(await readFile(approved, 'utf8')).toBe('# Ship It\nsteps\n');
    const denied = await savePlan(dir, '# Ship It\nsteps', 'denied', 'Too risky', now);
    expect(path.basename(denied)).toBe('ship-it-2026-11-23-denied.md');
    expect(await readFile(denied, 'utf8')).toContain('Too risky');
    expect(savedPlanContent('# P', 'denied', 'why')).toMatch(/^# P\n[\s\S]*why\n$/);
    expect(path.basename(await savePlan(dir, '# Ship It\nsteps', 'approved', null, now))).toBe(
      'ship-it-2026-11-23-approved-2.md',
    );
  });
});

describe('path checks', () => {
  it('isInside', () => {
    expect(isInside('/a/b', '/a')).toBe(true);
    expect(isInside('/a', '/a')).toBe(true);
    expect(isInside('/ab', '/a')).toBe(false);
    expect(isInside('/a/../b', '/a')).toBe(false);
    expect(isInside('/a/..b', '/a')).toBe(true);
  });

  it('resolveInsideRoots is null for what cannot be resolved: NUL, a symlink loop, a name too long', async () => {
    const allowed = path.join(root, 'allowed-unresolvable');
    await mkdir(allowed, { recursive: true });
    await symlink('loop', path.join(allowed, 'loop'));
    const targets = ['a\0b', path.join('loop', 'x'), 'x'.repeat(70_000)].map((name) => path.join(allowed, name));
    for (const target of targets) {
      expect(await resolveInsideRoots(target, [allowed]), target.slice(0, 80)).toBeNull();
    }
  });

  it('resolveInsideRoots follows .. and symlinks (existing or not) before judging', async () => {
    const allowed = path.join(root, 'allowed');
    const outside = path.join(root, 'outside');
    await mkdir(path.join(allowed, 'sub'), { recursive: true });
    await mkdir(outside, { recursive: true });
    await symlink(outside, path.join(allowed, 'link-out'));
    await symlink(path.join(allowed, 'sub'), path.join(root, 'link-in'));
    const roots = [allowed];
    expect(await resolveInsideRoots(path.join(allowed, 'sub'), roots)).toBe(path.join(allowed, 'sub'));
    expect(await resolveInsideRoots(path.join(allowed, 'not', 'yet'), roots)).toBe(path.join(allowed, 'not', 'yet'));
    expect(await resolveInsideRoots(path.join(allowed, '..', 'outside'), roots)).toBeNull();
    expect(await resolveInsideRoots(path.join(allowed, 'link-out'), roots)).toBeNull();
    expect(await resolveInsideRoots(path.join(allowed, 'link-out', 'new-folder'), roots)).toBeNull();
    expect(await resolveInsideRoots(path.join(root, 'link-in', 'x'), roots)).toBe(path.join(allowed, 'sub', 'x'));
    expect(await resolveInsideRoots('/etc', roots)).toBeNull();
  });

  it('userPath expands ~ and resolves relative paths against the project', () => {
    const where = { home: '/home/u', base: '/work/p' };
    expect(userPath('~', where)).toBe('/home/u');
    expect(userPath('~/plans', where)).toBe('/home/u/plans');
    expect(userPath('docs/plans', where)).toBe('/work/p/docs/plans');
    expect(userPath('/abs', where)).toBe('/abs');
  });
});

describe('notes', () => {
  it('lists the existing vaults of the note app configuration; a missing or broken file is no vaults', async () => {
    const vault = path.join(root, 'vault-a');
    await mkdir(vault, { recursive: true });
    const config = path.join(root, 'notevault.json');
    await writeFile(
      config,
      JSON.stringify({
        vaults: { a: { path: vault, ts: 1 }, b: { path: path.join(root, 'gone') }, c: { path: 'relative' }, d: null },
      }),
    );
    expect(await listVaults(config)).toEqual([vault]);
    expect(await listVaults(path.join(root, 'missing.json'))).toEqual([]);
    await writeFile(path.join(root, 'broken.json'), '{not json');
    expect(await listVaults(path.join(root, 'broken.json'))).toEqual([]);
  });

  it('writes YAML front matter (created, source, tags) before the plan', () => {
    const text = noteContent('# T\nbody', ['plan', 'a: b'], new Date('2026-11-23T10:00:00Z'));
    const [, front, rest] = text.split('---\n');
    expect(YAML.parse(front as string)).toEqual({
      created: '2026-11-23T10:00:00.000Z',
      source: 'gatehouse',
      tags: ['plan', 'a: b'],
    });
    expect(rest).toBe('\n# T\nbody\n');
  });

  it('checks the vault and the folder', async () => {
    const listed = path.join(root, 'listed-vault');
    const unlisted = path.join(root, 'unlisted-vault');
    await mkdir(path.join(listed, 'Plans'), { recursive: true });
    await mkdir(unlisted, { recursive: true });
    await symlink(root, path.join(listed, 'escape'));
    const configPath = path.join(root, 'vaults.json');
    await writeFile(configPath, JSON.stringify({ vaults: { x: { path: listed } } }));
    const options = { configPath, allowedRoots: [path.join(root, 'nowhere')], home: root, projectDir: root };
    expect(await noteFolder({ vaultPath: listed, folder: 'Plans/2026', plan: 'p' }, options)).toBe(
      path.join(listed, 'Plans', '2026'),
    );
    expect(await noteFolder({ vaultPath: listed, plan: 'p' }, options)).toBe(listed);
    await expect(noteFolder({ vaultPath: unlisted, plan: 'p' }, options)).rejects.toThrow(
      'Invalid field notevault.vaultPath: must be a folder inside an allowed root',
    );
    expect(await noteFolder({ vaultPath: unlisted, plan: 'p' }, { ...options, allowedRoots: [root] })).toBe(unlisted);
    await expect(noteFolder({ vaultPath: path.join(root, 'no-vault'), plan: 'p' }, options)).rejects.toThrow(
      'no such vault folder',
    );
    for (const folder of ['../x', 'a/../../x', '/abs']) {
      await expect(noteFolder({ vaultPath: listed, folder, plan: 'p' }, options), folder).rejects.toThrow(
        'Invalid field notevault.folder',
      );
    }
    await expect(noteFolder({ vaultPath: listed, folder: 'escape/sub', plan: 'p' }, options)).rejects.toThrow(
      'Invalid field notevault.folder',
    );
  });

  it('builds the notememo URL from the template', () => {
    expect(notememoUrl('notememo://x-callback-url/create?title={title}&text={text}', '# My Plan\nA & B')).toBe(
      'notememo://x-callback-url/create?title=My%20Plan&text=%23%20My%20Plan%0AA%20%26%20B',
    );
  });
});

describe('resolveInsideRoots (property)', () => {
  it('without symlinks, agrees with the lexical answer for any mix of .., . and odd names', async () => {
    const fc = await import('fast-check');
    const base = path.join(root, 'prop-root');
    await mkdir(path.join(base, 'a', 'b'), { recursive: true });
    const segment = fc.constantFrom('a', 'b', '..', '.', '..x', 'x..', '...', 'new');
    await fc.assert(
      fc.asyncProperty(fc.array(segment, { maxLength: 6 }), async (segments) => {
        // Unnormalised on purpose: `..` after a folder that does not exist yet, `..x` names…
        const target = [base, ...segments].join('/');
        const expected = isInside(path.resolve(target), base);
        const got = await resolveInsideRoots(target, [base]);
        expect(got !== null).toBe(expected);
        if (got !== null) expect(got).toBe(path.resolve(target));
      }),
      { numRuns: 300 },
    );
  });
});
