import path from 'node:path';
import type { Branches, DiffType } from './diff-type.ts';
import { Attributes } from './attributes.ts';
import { gitErrors } from './errors.ts';
import { IndexCache, type CacheTree, type GitIndex, type IndexEntry } from './index-file.ts';
import { NULL_OID, objectSources, ObjectStore, type ObjectSource } from './objects.ts';
import { formatPatch } from './patch.ts';
import { defaultBranch, readCommit, readHead, resolveBranch, type Head } from './refs.ts';
import { detectRenames, type DiffItem } from './renames.ts';
import { openRepository, type OpenOptions, type RepoLayout } from './repo.ts';
import {
  compareKeys,
  diffTrees,
  MODE_GITLINK,
  MODE_TREE,
  pairPath,
  readTree,
  TreeCache,
  type FilePair,
  type FileVersion,
} from './tree.ts';
import { Worktree, type WorkingFile } from './worktree.ts';

export interface DiffResult {
  /** The patch as `git diff` prints it, its bytes read as UTF-8. */
  rawPatch: string;
  /** The same patch byte for byte (each char one byte), for exact comparison. */
  latin1Patch: string;
  gitRef: string;
}

export type { Branches };

/** What a review server asks of a work tree: its diffs, one side of a file, and its branches. */
export type DiffEngine = Pick<GitRepository, 'diff' | 'context' | 'sideContent'>;

/** One read of the repository: objects and blobs are cached for its length only. */
interface Session {
  store: ObjectStore;
  head: Head;
  load: (version: FileVersion) => Promise<Buffer>;
}

/**
 * A work tree's diffs, computed without a git binary the way git computes
 * them (see docs/code-review.md for what is and is not covered). Opening
 * checks the repository; each diff reads it afresh, so edits made while the
 * server runs show up on the next request. Nothing is ever written to .git.
 */
export class GitRepository {
  readonly layout: RepoLayout;
  private readonly trees = new TreeCache();
  private readonly indexCache = new IndexCache();
  private readonly objects: ObjectSource[];

  private constructor(layout: RepoLayout) {
    this.layout = layout;
    this.objects = objectSources(path.join(layout.commondir, 'objects'));
  }

  static open(dir: string, options: OpenOptions = {}): GitRepository {
    return new GitRepository(openRepository(dir, options));
  }

  private async session(): Promise<Session> {
    const store = new ObjectStore(this.objects);
    const head = await readHead(this.layout);
    const blobs = new Map<string, Promise<Buffer>>();
    const load = (version: FileVersion): Promise<Buffer> => {
      if (version.content) return Promise.resolve(version.content);
      if (version.mode === MODE_GITLINK) return Promise.resolve(Buffer.from(`Subproject commit ${version.oid}\n`));
      let blob = blobs.get(version.oid);
      if (!blob) {
        blob = store.readBlob(version.oid);
        blobs.set(version.oid, blob);
      }
      return blob;
    };
    return { store, head, load };
  }

  private async treeOf(store: ObjectStore, commit: string): Promise<string> {
    return (await readCommit(store, commit)).tree;
  }

  /**
   * HEAD's files (none before the first commit) against what each index
   * entry stands for now: `versionOf` gives its version, null when it is
   * gone, undefined when it is not part of this diff. HEAD's paths missing
   * from the index are deleted. HEAD's trees and the index are both in path
   * order, so one walk pairs them, folder by folder; a folder whose
   * cache-tree id is HEAD's tree id holds HEAD's very files, so its tree is
   * not read at all (at 100,000 files, reading and flattening every tree
   * cost a fresh process more than all the rest of the diff).
   */
  private async headAgainst(
    s: Session,
    index: GitIndex,
    versionOf: (entry: IndexEntry) => WorkingFile | null | undefined,
  ): Promise<FilePair[]> {
    const pairs: FilePair[] = [];
    const { entries } = index;
    let i = 0;
    const compare = (entry: IndexEntry, old: FileVersion | null) => {
      const now = versionOf(entry);
      if (now === null && old) pairs.push({ old, new: null });
      else if (now && now !== old && (!old || old.oid !== now.oid || old.mode !== now.mode))
        pairs.push({ old, new: { path: entry.path, oid: now.oid, mode: now.mode, content: now.content } });
    };
    /**
     * Where the entries of the folder at `prefix` (from entry i) end when
     * they are the `count` its cache-tree says, else -1. An intent-to-add
     * entry is in the index but in no tree: git leaves its folder without an
     * id, and a folder holding one is never taken as HEAD's here either.
     */
    const coveredEnd = (prefix: string, count: number): number => {
      let j = i;
      for (let entry = entries[j]; entry?.path.startsWith(prefix); entry = entries[++j]) {
        if (entry.intentToAdd) return -1;
      }
      return j - i === count ? j : -1;
    };
    /** Entries sorting before `path` that HEAD does not have: added. */
    const addedBefore = (path: string) => {
      for (let entry = entries[i]; entry && entry.path < path; entry = entries[++i]) compare(entry, null);
    };
    const walk = async (treeOid: string, prefix: string, cached: CacheTree | undefined): Promise<void> => {
      const end = cached?.oid === treeOid ? coveredEnd(prefix, cached.entryCount) : -1;
      if (end >= 0) {
        // HEAD's version of each entry here is the entry itself.
        for (let entry = entries[i]; i < end && entry; entry = entries[++i]) compare(entry, entry);
        return;
      }
      for (const child of await readTree(s.store, this.trees, treeOid)) {
        const path = prefix + child.name;
        if (child.mode === MODE_TREE) {
          addedBefore(`${path}/`);
          await walk(child.oid, `${path}/`, cached?.children.get(child.name));
          continue;
        }
        addedBefore(path);
        const old = { path, oid: child.oid, mode: child.mode };
        const entry = entries[i];
        if (entry?.path === path) {
          i++;
          compare(entry, old);
        } else if (!index.unmerged.has(path)) pairs.push({ old, new: null });
      }
      for (let entry = entries[i]; entry?.path.startsWith(prefix); entry = entries[++i]) compare(entry, null);
    };
    if (s.head.commit) await walk(await this.treeOf(s.store, s.head.commit), '', index.cacheTree);
    for (let entry = entries[i]; entry; entry = entries[++i]) compare(entry, null);
    return pairs;
  }

  private readIndex(): GitIndex {
    return this.indexCache.read(path.join(this.layout.gitdir, 'index'));
  }

  /** `git diff HEAD`: against the tracked working files. */
  private uncommitted(s: Session): Promise<FilePair[]> {
    const index = this.readIndex();
    const worktree = new Worktree(this.layout.workdir, this.layout.config.filemode, index);
    return this.headAgainst(s, index, (entry) => worktree.read(entry));
  }

  /** `git diff --staged`: against the index; `git add -N` records a path, not content, so it is not staged. */
  private staged(s: Session): Promise<FilePair[]> {
    return this.headAgainst(s, this.readIndex(), (entry) => (entry.intentToAdd ? undefined : entry));
  }

  /** `git diff HEAD~1..HEAD`; a root commit is compared with the empty tree. */
  private async lastCommit(s: Session): Promise<FilePair[]> {
    if (!s.head.commit) throw gitErrors.noCommits('the last commit');
    const commit = await readCommit(s.store, s.head.commit);
    const parent = commit.parents[0];
    const parentTree = parent ? await this.treeOf(s.store, parent) : null;
    return diffTrees(s.store, this.trees, parentTree, commit.tree);
  }

  /** `git diff <default>..HEAD`: the two trees, as two-dot diff does (no merge base). */
  private async vsDefault(s: Session, branch: string | null): Promise<FilePair[]> {
    if (!s.head.commit) throw gitErrors.noCommits('against the default branch');
    if (!branch) throw gitErrors.noDefaultBranch();
    const base = await resolveBranch(this.layout, branch);
    if (!base) throw gitErrors.noDefaultBranch();
    return diffTrees(s.store, this.trees, await this.treeOf(s.store, base), await this.treeOf(s.store, s.head.commit));
  }

  /** A fresh read of the repository and the files a diff of `type` compares, in patch order, renames paired. */
  private async compared(type: DiffType): Promise<{ s: Session; branch: string | null; items: DiffItem[] }> {
    const s = await this.session();
    const branch = type === 'vs main' ? await defaultBranch(this.layout) : null;
    const pairs =
      type === 'uncommitted'
        ? await this.uncommitted(s)
        : type === 'staged'
          ? await this.staged(s)
          : type === 'last-commit'
            ? await this.lastCommit(s)
            : await this.vsDefault(s, branch);
    pairs.sort((a, b) => compareKeys(pairPath(a), pairPath(b)));
    return { s, branch, items: this.layout.config.renames ? await detectRenames(pairs, s.load) : pairs };
  }

  async diff(type: DiffType): Promise<DiffResult> {
    const { s, branch, items } = await this.compared(type);
    const attributes = new Attributes(this.layout.workdir, this.layout.commondir);
    const latin1Patch = await formatPatch(items, {
      load: s.load,
      abbrev: (oid) => s.store.abbrev(oid),
      nullOid: NULL_OID,
      quotePath: this.layout.config.quotePath,
      diffAttribute: (file) => attributes.diff(file),
    });
    return {
      rawPatch: Buffer.from(latin1Patch, 'latin1').toString('utf8'),
      latin1Patch,
      gitRef: gitRefOf(type, branch),
    };
  }

  /**
   * One file's content on one side of the diff of `type`, read from what that
   * diff compares (`old`: its base tree; `new`: the working file, the index or
   * the commit); null when the diff has no file at `filePath` on that side.
   */
  async sideContent(type: DiffType, side: 'old' | 'new', filePath: string): Promise<Buffer | null> {
    const { s, items } = await this.compared(type);
    // Paths are kept as git stores them, one char per byte.
    const wanted = Buffer.from(filePath, 'utf8').toString('latin1');
    const version = items.map((item) => item[side]).find((v) => v?.path === wanted);
    return version ? s.load(version) : null;
  }

  async context(): Promise<Branches> {
    const head = await readHead(this.layout);
    return { currentBranch: head.branch ?? 'HEAD', defaultBranch: (await defaultBranch(this.layout)) ?? 'main' };
  }
}

/** The git revision argument each diff type stands for. */
export function gitRefOf(type: DiffType, defaultBranchName: string | null): string {
  switch (type) {
    case 'uncommitted':
      return 'HEAD';
    case 'staged':
      return '--staged';
    case 'last-commit':
      return 'HEAD~1..HEAD';
    case 'vs main':
      return `${defaultBranchName ?? 'main'}..HEAD`;
  }
}
