import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

let root: string | undefined;

/** The folder holding gatehouse's package.json, from src/ or from dist/src/ alike. */
export function packageRoot(): string {
  if (root !== undefined) return root;
  let dir = import.meta.dirname;
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('gatehouse package.json not found above ' + import.meta.dirname);
    dir = parent;
  }
  root = dir;
  return root;
}

/** The installed package's version: package.json is the one place it is written. */
export function packageVersion(): string {
  const manifest = JSON.parse(readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as { version?: unknown };
  if (typeof manifest.version !== 'string') throw new Error('gatehouse package.json has no version');
  return manifest.version;
}
