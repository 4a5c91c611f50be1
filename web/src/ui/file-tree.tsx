// The changed files as a folder tree with +/- counts; a click scrolls the diff there.
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import type { TreeDir, TreeNode } from '../file-tree-model.ts';

export interface FileTreeProps {
  root: TreeDir;
  current: number | undefined;
  notes: ReadonlyMap<number, number>;
  onOpen: (file: number) => void;
}

function Stat({ add, del }: { add: number; del: number }): JSX.Element {
  return (
    <span class="stat" aria-label={`${add} added, ${del} removed`}>
      {add > 0 && <span class="plus">+{add}</span>}
      {del > 0 && <span class="minus">−{del}</span>}
    </span>
  );
}

function Node({ node, depth, props }: { node: TreeNode; depth: number; props: FileTreeProps }): JSX.Element {
  const [open, setOpen] = useState(true);
  const pad = { paddingLeft: `${depth * 14 + 8}px` };
  if (node.kind === 'file') {
    const notes = props.notes.get(node.file) ?? 0;
    return (
      <li role="treeitem" aria-selected={props.current === node.file}>
        <button
          type="button"
          class={props.current === node.file ? 'tree-row file on' : 'tree-row file'}
          style={pad}
          onClick={() => props.onOpen(node.file)}
          title={node.name}
        >
          <span class="name">{node.name}</span>
          {notes > 0 && <span class="count">{notes}</span>}
          <Stat add={node.additions} del={node.deletions} />
        </button>
      </li>
    );
  }
  return (
    <li role="treeitem" aria-expanded={open}>
      <button type="button" class="tree-row dir" style={pad} onClick={() => setOpen(!open)} title={node.path}>
        <span class="chev" aria-hidden="true">
          {open ? '▾' : '▸'}
        </span>
        <span class="name">{node.name}/</span>
      </button>
      {open && (
        <ul role="group">
          {node.children.map((c) => (
            <Node key={c.kind === 'file' ? `f${c.file}` : c.path} node={c} depth={depth + 1} props={props} />
          ))}
        </ul>
      )}
    </li>
  );
}

export function FileTree(props: FileTreeProps): JSX.Element {
  return (
    <ul class="tree" role="tree" aria-label="Changed files">
      {props.root.children.map((c) => (
        <Node key={c.kind === 'file' ? `f${c.file}` : c.path} node={c} depth={0} props={props} />
      ))}
    </ul>
  );
}
