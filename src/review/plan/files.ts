import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { copyFile, link, mkdir, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** The text of the plan's first `# ` heading, or undefined. */
export function planTitle(plan: string): string | undefined {
  const heading = /^# +(.+?)\s*#*\s*$/m.exec(plan);
  return heading?.[1]?.trim() || undefined;
}

/** A file-name slug of the plan's first `# ` heading (`plan` when there is none). */
export function planSlug(plan: string): string {
  const slug = (planTitle(plan) ?? '')
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 60)
    .replace(/-+$/, '');
  return slug || 'plan';
}

const pad = (n: number) => String(n).padStart(2, '0');

/** `YYYY-MM-DD` in local time. */
export function localDate(date: Date): string {
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
}

/** `YYYY-MM-DD HH-mm` in local time (no `:`, which some file systems refuse). */
export function localDateTime(date: Date): string {
  return `${localDate(date)} ${pad(date.getHours())}-${pad(date.getMinutes())}`;
}

/** `name.md`, then `name-2.md`, `name-3.md`… */
function candidate(dir: string, stem: string, ext: string, n: number): string {
  return path.join(dir, n === 1 ? `${stem}${ext}` : `${stem}-${n}${ext}`);
}

/**
 * Writes `content` as a new file `<dir>/<stem><ext>` (creating `dir`),
 * never overwriting: a taken name moves on to `-2`, `-3`… The content is
 * written to a temporary file first and then hard-linked into place, which
 * fails atomically on a taken name, so a reader never sees half a file and
 * two writers never clobber each other. Returns the absolute path written.
 */
export async function writeNewFile(dir: string, stem: string, ext: string, content: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  const temp = path.join(dir, `.${stem}.${randomBytes(6).toString('hex')}.tmp`);
  await writeFile(temp, content, { flag: 'wx' });
  try {
    for (let n = 1; ; n++) {
      const target = candidate(dir, stem, ext, n);
      try {
        await link(temp, target);
        return path.resolve(target);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'EEXIST') continue;
        // File systems without hard links: an exclusive copy still never overwrites.
        if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'EMLINK') throw error;
        try {
          await copyFile(temp, target, constants.COPYFILE_EXCL);
          return path.resolve(target);
        } catch (copyError) {
          if ((copyError as NodeJS.ErrnoException).code !== 'EEXIST') throw copyError;
        }
      }
    }
  } finally {
    await unlink(temp).catch(() => undefined);
  }
}
