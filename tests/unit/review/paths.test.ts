import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { folderProblem } from '../../../src/review/paths.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'gatehouse-paths-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

describe('folderProblem', () => {
  it('accepts a folder, or one that can be made under folders', async () => {
    await mkdir(path.join(dir, 'plans'));
    expect(await folderProblem(path.join(dir, 'plans'))).toBeNull();
    expect(await folderProblem(path.join(dir, 'plans', 'new', 'deeper'))).toBeNull();
    expect(await folderProblem(path.join(dir, ...Array<string>(1_000).fill('a')))).toBeNull();
  });

  it('names what is in the way: a file, a dangling symlink, a file above, a path too long', async () => {
    await writeFile(path.join(dir, 'file'), 'x');
    await symlink(path.join(dir, 'nowhere'), path.join(dir, 'dangling'));
    expect(await folderProblem(path.join(dir, 'file'))).toBe(`${path.join(dir, 'file')} is not a folder`);
    expect(await folderProblem(path.join(dir, 'dangling'))).toBe(`${path.join(dir, 'dangling')} is not a folder`);
    expect(await folderProblem(path.join(dir, 'dangling', 'below'))).toContain('is not a folder');
    expect(await folderProblem(path.join(dir, 'file', 'below'))).toMatch(/cannot be read \(ENOTDIR\)$/);
    const tooLong = 'at most 3840 bytes in all and 255 per name';
    expect(await folderProblem(path.join(dir, ...Array<string>(2_000).fill('a')))).toBe(tooLong);
    expect(await folderProblem(path.join(dir, 'n'.repeat(256)))).toBe(tooLong);
  });
});
