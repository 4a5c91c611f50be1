// The file tree beside the diff: changed paths folded into folders, with the
// summed +/- counts a reviewer scans to see where the change is.

export interface TreeFile {
  kind: 'file';
  name: string;
  /** Index into the diff's file list. */
  file: number;
  additions: number;
  deletions: number;
}

export interface TreeDir {
  kind: 'dir';
  /** One folder, or a chain of single-child folders joined with "/". */
  name: string;
  path: string;
  children: TreeNode[];
  additions: number;
  deletions: number;
}

export type TreeNode = TreeFile | TreeDir;

export interface TreeInput {
  path: string;
  additions: number;
  deletions: number;
}

function sortNodes(nodes: TreeNode[]): void {
  nodes.sort((a, b) => (a.kind === b.kind ? a.name.localeCompare(b.name) : a.kind === 'dir' ? -1 : 1));
}

/** Folds a folder that holds only one folder into it, as "src/review/plan". */
function compact(dir: TreeDir): TreeDir {
  dir.children = dir.children.map((c) => (c.kind === 'dir' ? compact(c) : c));
  const only = dir.children[0];
  if (dir.children.length === 1 && only !== undefined && only.kind === 'dir' && dir.path !== '') {
    return { ...only, name: `${dir.name}/${only.name}` };
  }
  return dir;
}

export function buildTree(files: readonly TreeInput[]): TreeDir {
  const root: TreeDir = { kind: 'dir', name: '', path: '', children: [], additions: 0, deletions: 0 };
  files.forEach((input, index) => {
    const parts = input.path.split('/');
    const name = parts.pop() ?? input.path;
    let dir = root;
    dir.additions += input.additions;
    dir.deletions += input.deletions;
    for (const part of parts) {
      const path = dir.path === '' ? part : `${dir.path}/${part}`;
      let next = dir.children.find((c): c is TreeDir => c.kind === 'dir' && c.path === path);
      if (next === undefined) {
        next = { kind: 'dir', name: part, path, children: [], additions: 0, deletions: 0 };
        dir.children.push(next);
      }
      next.additions += input.additions;
      next.deletions += input.deletions;
      dir = next;
    }
    dir.children.push({ kind: 'file', name, file: index, additions: input.additions, deletions: input.deletions });
  });
  const visit = (dir: TreeDir): void => {
    sortNodes(dir.children);
    for (const c of dir.children) if (c.kind === 'dir') visit(c);
  };
  visit(root);
  return compact(root);
}
