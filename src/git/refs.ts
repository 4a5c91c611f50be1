import fs from 'node:fs';
import path from 'node:path';
import { gitErrors } from './errors.ts';
import type { ObjectStore } from './objects.ts';
import type { RepoLayout } from './repo.ts';

export interface Head {
  /** The branch HEAD points at (possibly unborn), or null when detached. */
  branch: string | null;
  /** The commit HEAD resolves to, or null before the first commit. */
  commit: string | null;
}

export async function readHead(layout: RepoLayout): Promise<Head> {
  let text: string;
  try {
    text = fs.readFileSync(path.join(layout.gitdir, 'HEAD'), 'latin1').trim();
  } catch (error) {
    throw gitErrors.unreadable('HEAD', error);
  }
  if (/^[0-9a-f]{40}$/.test(text)) return { branch: null, commit: text };
  const branch = /^ref:\s*refs\/heads\/(.+)$/.exec(text)?.[1];
  if (branch === undefined) throw gitErrors.corrupt(`HEAD (${text})`);
  return { branch, commit: await resolveBranch(layout, branch) };
}

/** A loose branch file holding a commit id, read directly; anything else is left to isomorphic-git. */
function looseBranch(layout: RepoLayout, branch: string): string | undefined {
  try {
    const text = fs.readFileSync(path.join(layout.commondir, 'refs', 'heads', branch), 'latin1');
    return /^[0-9a-f]{40}\n?$/.exec(text)?.[0].slice(0, 40);
  } catch {
    return undefined;
  }
}

/**
 * The commit a local branch points at, or null if it does not exist. The
 * common case, a loose branch file, needs no library: isomorphic-git (packed
 * and symbolic refs) is loaded only when asked, as loading it costs a fresh
 * process several hundred milliseconds.
 */
export async function resolveBranch(layout: RepoLayout, branch: string): Promise<string | null> {
  const loose = looseBranch(layout, branch);
  if (loose) return loose;
  try {
    const { default: git } = await import('isomorphic-git');
    return await git.resolveRef({ fs, gitdir: layout.commondir, ref: `refs/heads/${branch}` });
  } catch (error) {
    if ((error as { code?: string }).code === 'NotFoundError') return null;
    throw gitErrors.unreadable(`branch ${branch}`, error);
  }
}

/** `main` if it exists, else `master` if it exists, else null. */
export async function defaultBranch(layout: RepoLayout): Promise<string | null> {
  for (const name of ['main', 'master']) {
    if ((await resolveBranch(layout, name)) !== null) return name;
  }
  return null;
}

export interface Commit {
  tree: string;
  parents: string[];
}

export async function readCommit(store: ObjectStore, oid: string): Promise<Commit> {
  let object = await store.read(oid);
  // An annotated tag may stand where a commit is expected.
  while (object.type === 'tag') {
    const target = /^object ([0-9a-f]{40})$/m.exec(object.content.toString('latin1'))?.[1];
    if (!target) throw gitErrors.corrupt(`tag ${oid}`);
    object = await store.read(target);
  }
  if (object.type !== 'commit') throw gitErrors.corrupt(`${oid} is a ${object.type}, not a commit`);
  const header = object.content.toString('latin1', 0, object.content.indexOf('\n\n'));
  const tree = /^tree ([0-9a-f]{40})$/m.exec(header)?.[1];
  if (!tree) throw gitErrors.corrupt(`commit ${oid}`);
  const parents = [...header.matchAll(/^parent ([0-9a-f]{40})$/gm)].flatMap((m) => m.slice(1));
  return { tree, parents };
}
