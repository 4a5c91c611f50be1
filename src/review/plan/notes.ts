import { readFile, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import YAML from 'yaml';
import type { NotevaultRequest } from '../contract.ts';
import { reviewErrors } from '../errors.ts';
import { folderProblem, isInside, realTarget, resolveInsideRoots, userPath } from '../paths.ts';
import { localDateTime, planTitle, writeNewFile } from './files.ts';

export interface NoteOptions {
  /** The note app's configuration file (config `notevaultConfigPath`). */
  configPath: string;
  allowedRoots: readonly string[];
  home: string;
  projectDir: string;
}

async function isDirectory(p: string): Promise<boolean> {
  return (await stat(p).catch(() => null))?.isDirectory() ?? false;
}

/**
 * The vault folders listed in the note app's configuration file
 * (`{"vaults": {"<id>": {"path": "<dir>"}}}`) that exist. A missing or
 * unreadable file means no vaults, not an error: most reviewers have none.
 */
export async function listVaults(configPath: string): Promise<string[]> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(configPath, 'utf8'));
  } catch {
    return [];
  }
  const vaults = (parsed as { vaults?: unknown } | null)?.vaults;
  if (typeof vaults !== 'object' || vaults === null) return [];
  const paths = Object.values(vaults)
    .map((v) => (v as { path?: unknown } | null)?.path)
    .filter((p): p is string => typeof p === 'string' && path.isAbsolute(p));
  const exists = await Promise.all(paths.map(isDirectory));
  return paths.filter((_, i) => exists[i]);
}

/** A file name from the plan's title, without the characters note apps and file systems refuse. */
export function noteTitle(plan: string): string {
  const title = (planTitle(plan) ?? '')
    .replace(/[\\/:*?"<>|#^[\]\p{Cc}]/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 80)
    .trim();
  return title || 'Plan';
}

/** The note: YAML front matter (`created`, `source: gatehouse`, `tags`), then the plan. */
export function noteContent(plan: string, tags: readonly string[], now: Date): string {
  const front = YAML.stringify({ created: now.toISOString(), source: 'gatehouse', tags: [...tags] });
  return `---\n${front}---\n\n${plan.endsWith('\n') ? plan : `${plan}\n`}`;
}

/**
 * Where a note may go: the vault must exist and be listed in the app's
 * configuration or lie inside an allowed root; the folder must be relative,
 * without `..`, and must not lead out of the vault through a symlink.
 * Returns the real target folder, or throws the 400 naming the field.
 */
export async function noteFolder(request: NotevaultRequest, options: NoteOptions): Promise<string> {
  const folder = request.folder ?? '';
  if (path.isAbsolute(folder) || folder.split(/[\\/]/).includes('..') || folder.includes('\0')) {
    throw reviewErrors.invalidField('notevault.folder', 'a folder inside the vault, relative and without ..');
  }
  const requested = userPath(request.vaultPath, { home: options.home, base: options.projectDir });
  if (!(await isDirectory(requested))) throw reviewErrors.vaultNotFound();
  const vault = await realpath(requested);
  const listed = await Promise.all((await listVaults(options.configPath)).map((v) => realpath(v).catch(() => v)));
  if (!listed.includes(vault) && (await resolveInsideRoots(vault, options.allowedRoots)) === null) {
    throw reviewErrors.pathNotAllowed('notevault.vaultPath');
  }
  const target = await realTarget(path.join(vault, folder));
  if (target === null || !isInside(target, vault)) throw reviewErrors.pathNotAllowed('notevault.folder');
  const problem = await folderProblem(target);
  if (problem !== null) throw reviewErrors.notAFolder('notevault.folder', problem);
  return target;
}

/** Writes the note as `<folder>/<Title> - <YYYY-MM-DD HH-mm>.md` (never overwriting) and returns its path. */
export function writeNote(folder: string, request: NotevaultRequest, now: Date): Promise<string> {
  return writeNewFile(
    folder,
    `${noteTitle(request.plan)} - ${localDateTime(now)}`,
    '.md',
    noteContent(request.plan, request.tags ?? [], now),
  );
}

/** The notememo app's create-note URL: `{title}` and `{text}` of the template, URL-encoded. */
export function notememoUrl(template: string, plan: string): string {
  return template
    .replaceAll('{title}', encodeURIComponent(noteTitle(plan)))
    .replaceAll('{text}', encodeURIComponent(plan));
}
