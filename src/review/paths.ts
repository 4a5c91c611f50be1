import { lstat, realpath } from 'node:fs/promises';
import path from 'node:path';

/** True when `child` is `parent` or lies below it (both absolute and normalised). */
export function isInside(child: string, parent: string): boolean {
  const relative = path.relative(parent, child);
  return relative !== '..' && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative);
}

/** realpath, or the plain resolved path when it does not exist (yet). */
async function realOrResolved(p: string): Promise<string> {
  try {
    return await realpath(p);
  } catch {
    return path.resolve(p);
  }
}

/**
 * Where `target` really lands: the realpath of its deepest existing ancestor
 * plus the segments that do not exist yet (which cannot be symlinks), so a
 * folder that is about to be created is judged by where it will be created.
 * Null when the path cannot be resolved at all (a NUL byte, a symlink loop, a
 * name too long, a folder it may not look into): nothing can be written there.
 */
export async function realTarget(target: string): Promise<string | null> {
  const missing: string[] = [];
  let current = path.resolve(target);
  for (;;) {
    try {
      return path.join(await realpath(current), ...missing.reverse());
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') return null;
      const parent = path.dirname(current);
      if (parent === current) return path.resolve(target);
      missing.push(path.basename(current));
      current = parent;
    }
  }
}

/**
 * The real location of `target` when it is inside one of `roots` (roots are
 * compared by their own realpath too, so `/tmp` → `/private/tmp` still
 * matches), else null. `..` and symlinks cannot escape: both are resolved first.
 */
export async function resolveInsideRoots(target: string, roots: readonly string[]): Promise<string | null> {
  const real = await realTarget(target);
  if (real === null) return null;
  for (const root of roots) {
    if (isInside(real, await realOrResolved(root))) return real;
  }
  return null;
}

/** Expands a leading `~` and resolves relative paths against `base`. */
export function userPath(p: string, { home, base }: { home: string; base: string }): string {
  if (p === '~') return home;
  if (p.startsWith('~/')) return path.join(home, p.slice(2));
  return path.resolve(base, p);
}

/** Linux's limits: a whole path, and one name in it. */
const PATH_MAX = 4096;
const NAME_MAX = 255;

/**
 * Why files cannot be saved in `folder` (an absolute, resolved path), or null
 * when it is a folder or can be made one: a path too long for a file name to
 * fit under it, or something there (or above it) that is not a folder: a
 * file, a dangling symlink.
 */
export async function folderProblem(folder: string): Promise<string | null> {
  const names = folder.split(path.sep);
  if (Buffer.byteLength(folder) + 1 + NAME_MAX > PATH_MAX || names.some((n) => Buffer.byteLength(n) > NAME_MAX)) {
    return `at most ${PATH_MAX - NAME_MAX - 1} bytes in all and ${NAME_MAX} per name`;
  }
  for (let current = folder; ; current = path.dirname(current)) {
    try {
      return (await lstat(current)).isDirectory() ? null : `${current} is not a folder`;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') return `${current} cannot be read (${code ?? 'unknown error'})`;
      if (path.dirname(current) === current) return null;
    }
  }
}
