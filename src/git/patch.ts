import type { DiffAttribute } from './attributes.ts';
import { isBinary, quotePath } from './content.ts';
import { unifiedHunks } from './hunks.ts';
import { MAX_SCORE, type ContentLoader, type DiffItem } from './renames.ts';
import type { FileVersion } from './tree.ts';

const S_IFMT = 0o170000;
const NULL_PATH = '/dev/null';

const octalMode = (mode: number) => mode.toString(8).padStart(6, '0');

export interface PatchContext {
  load: ContentLoader;
  /** git's abbreviated object id. */
  abbrev: (oid: string) => string;
  nullOid: string;
  /** core.quotePath: escape non-ASCII path bytes. */
  quotePath: boolean;
  /** The path's `diff` attribute (from .gitattributes). */
  diffAttribute: (path: string) => DiffAttribute;
}

/** Binary by attribute (`binary`, `-diff`), text by attribute (`diff`), else by content. */
function showsAsBinary(ctx: PatchContext, version: FileVersion | null, content: Buffer): boolean {
  if (!version) return false;
  const attribute = ctx.diffAttribute(version.path);
  return attribute === 'binary' || (attribute === undefined && isBinary(content));
}

/** `--- a/x` and `+++ b/x`; git appends a tab to a name holding a space. */
function labelLine(marker: string, label: string): string {
  return `${marker} ${label}${label.includes(' ') ? '\t' : ''}\n`;
}

async function filePatch(
  ctx: PatchContext,
  oldV: FileVersion | null,
  newV: FileVersion | null,
  score: number | undefined,
): Promise<string> {
  const quote = (prefix: string, file: string) => quotePath(prefix, file, ctx.quotePath);
  const oldPath = oldV?.path ?? newV?.path ?? '';
  const newPath = newV?.path ?? oldPath;
  let out = `diff --git ${quote('a/', oldPath)} ${quote('b/', newPath)}\n`;
  if (!oldV) out += `new file mode ${octalMode(newV?.mode ?? 0)}\n`;
  else if (!newV) out += `deleted file mode ${octalMode(oldV.mode)}\n`;
  else if (oldV.mode !== newV.mode) out += `old mode ${octalMode(oldV.mode)}\nnew mode ${octalMode(newV.mode)}\n`;
  if (score !== undefined) {
    out += `similarity index ${Math.floor((score * 100) / MAX_SCORE)}%\n`;
    out += `rename from ${quote('', oldPath)}\nrename to ${quote('', newPath)}\n`;
  }
  const oldOid = oldV?.oid ?? ctx.nullOid;
  const newOid = newV?.oid ?? ctx.nullOid;
  if (oldOid === newOid) return out;
  out += `index ${ctx.abbrev(oldOid)}..${ctx.abbrev(newOid)}`;
  out += oldV && newV && oldV.mode === newV.mode ? ` ${octalMode(oldV.mode)}\n` : '\n';

  const [oldContent, newContent] = await Promise.all([
    oldV ? ctx.load(oldV) : Buffer.alloc(0),
    newV ? ctx.load(newV) : Buffer.alloc(0),
  ]);
  if (oldContent.equals(newContent)) return out;
  const oldLabel = oldV ? quote('a/', oldPath) : NULL_PATH;
  const newLabel = newV ? quote('b/', newPath) : NULL_PATH;
  if (showsAsBinary(ctx, oldV, oldContent) || showsAsBinary(ctx, newV, newContent))
    return `${out}Binary files ${oldLabel} and ${newLabel} differ\n`;
  const hunks = unifiedHunks(oldContent.toString('latin1'), newContent.toString('latin1'));
  return out + labelLine('---', oldLabel) + labelLine('+++', newLabel) + hunks;
}

/**
 * The whole patch, as `git diff` prints it, as a latin1 string (one char per
 * byte). A change between a file and a symlink (or a submodule) is shown as
 * git shows it: a deletion, then a creation.
 */
export async function formatPatch(items: DiffItem[], ctx: PatchContext): Promise<string> {
  const parts: string[] = [];
  for (const item of items) {
    if (item.old && item.new && item.score === undefined && (item.old.mode & S_IFMT) !== (item.new.mode & S_IFMT)) {
      parts.push(await filePatch(ctx, item.old, null, undefined), await filePatch(ctx, null, item.new, undefined));
    } else {
      parts.push(await filePatch(ctx, item.old, item.new, item.score));
    }
  }
  return parts.join('');
}
