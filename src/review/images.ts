import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, open, realpath, rename, rm, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { Context, Middleware, Next } from 'koa';
import type { Logger } from 'pino';
import type { File } from 'formidable';
import { HttpError } from '../http/errors.ts';
import type { UploadResponse } from './contract.ts';
import { reviewErrors } from './errors.ts';
import { isInside } from './paths.ts';

/** The image types both review servers accept and serve, by detected MIME type → stored extension. */
const IMAGE_TYPES: Readonly<Record<string, string>> = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/webp': 'webp' };

/** file-type needs at most this many leading bytes for PNG, JPEG and WebP. */
const SNIFF_BYTES = 4100;

/** Room for the multipart framing around a file of the maximum size. */
const MULTIPART_OVERHEAD_BYTES = 64 * 1024;

export interface ImageOptions {
  /** Where uploads are stored: this process's own folder (see createUploadDir). */
  uploadDir: string;
  /** The reviewed project's folder: its images may be shown too. */
  projectDir: string;
  /** Largest accepted upload (config `uploadMaxBytes`, 10 MiB). */
  maxBytes: number;
  log: Logger;
}

/**
 * This process's own upload folder, `<prefix>-XXXXXX`: mkdtemp creates it
 * new (mode 0700), so no other local user can have planted it or a symlink
 * in its place, as they could a fixed name in a shared /tmp.
 */
export async function createUploadDir(prefix: string): Promise<string> {
  await mkdir(path.dirname(prefix), { recursive: true, mode: 0o700 });
  return mkdtemp(`${prefix}-`);
}

/** The image type of the file's first bytes, or undefined when it is not a PNG, JPEG or WebP. */
async function sniffImage(handle: FileHandle): Promise<{ mime: string; ext: string } | undefined> {
  const head = Buffer.alloc(SNIFF_BYTES);
  const { bytesRead } = await handle.read(head, 0, SNIFF_BYTES, 0);
  // Imported on first use, as koa-body below: a review that never sees an image never loads them.
  const { fileTypeFromBuffer } = await import('file-type');
  const type = await fileTypeFromBuffer(head.subarray(0, bytesRead));
  const ext = type && IMAGE_TYPES[type.mime];
  return type && ext ? { mime: type.mime, ext } : undefined;
}

function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP' || code === 'ENAMETOOLONG' || code === 'EINVAL';
}

/**
 * `GET /api/image?path=<path>`: the bytes of a PNG, JPEG or WebP inside the
 * upload dir or the project dir (relative paths are relative to the project).
 * The realpath decides, so neither `..` nor a symlink leads out. Whatever is
 * missing, outside, not a regular file or not really an image is 404
 * `File not found`, so the answer tells nothing about the rest of the disk.
 */
export function serveImage({ uploadDir, projectDir }: ImageOptions): Middleware {
  return async (ctx: Context) => {
    const requested = ctx.query['path'];
    if (typeof requested !== 'string' || requested === '') throw reviewErrors.missingPath();
    if (requested.includes('\0')) throw reviewErrors.fileNotFound();
    const candidate = path.resolve(projectDir, requested);
    const roots = await Promise.all(
      [uploadDir, projectDir].map((root) => realpath(root).catch(() => path.resolve(root))),
    );
    const allowed = (p: string) => roots.some((root) => isInside(p, root));

    let real: string;
    try {
      real = await realpath(candidate);
    } catch (error) {
      if (isMissing(error) || !allowed(candidate)) throw reviewErrors.fileNotFound();
      throw reviewErrors.imageUnreadable(error);
    }
    if (!allowed(real)) throw reviewErrors.fileNotFound();

    let handle: FileHandle;
    try {
      handle = await open(real, 'r');
    } catch (error) {
      if (isMissing(error)) throw reviewErrors.fileNotFound();
      throw reviewErrors.imageUnreadable(error);
    }
    try {
      const stat = await handle.stat();
      if (!stat.isFile()) throw reviewErrors.fileNotFound();
      const type = await sniffImage(handle);
      if (!type) throw reviewErrors.fileNotFound();
      ctx.type = type.mime;
      ctx.length = stat.size;
      ctx.set('Cache-Control', 'no-store');
      // The stream owns the handle from here and closes it when done.
      ctx.body = handle.createReadStream({ start: 0, autoClose: true });
    } catch (error) {
      await handle.close();
      if (error instanceof HttpError) throw error;
      throw reviewErrors.imageUnreadable(error);
    }
  };
}

/** formidable's error codes for the limits the upload form has besides the file's size. */
const TOO_MANY_FIELDS = 1007;
const FIELDS_TOO_LARGE = 1006;
const MAX_FIELDS = 20;
const MAX_FIELDS_BYTES = 64 * 1024;

/** The refusal for a formidable error: the message names the limit that was hit. */
function uploadRefusal(error: unknown, maxBytes: number): HttpError {
  const { httpCode, code } = error as { httpCode?: number; code?: number };
  if (code === TOO_MANY_FIELDS) return reviewErrors.tooManyFields(MAX_FIELDS);
  if (code === FIELDS_TOO_LARGE) return reviewErrors.fieldsTooLarge(MAX_FIELDS_BYTES);
  if (httpCode === 413) return reviewErrors.uploadTooLarge(maxBytes);
  if (httpCode !== undefined && httpCode >= 400 && httpCode < 500) return reviewErrors.malformedUpload(error);
  return reviewErrors.uploadFailed(error);
}

/**
 * Multipart parsing for the upload route only. Each request's parts land in
 * a staging folder of its own inside the upload dir, removed once the request
 * is answered: whatever the refusal (a limit, a broken body, a client gone),
 * nothing it wrote stays behind. The accepted file is moved out before that.
 */
function multipartBody({ uploadDir, maxBytes }: ImageOptions): Middleware {
  return async (ctx: Context, next: Next) => {
    const declared = Number(ctx.get('content-length') || 0);
    // Refuse at once what cannot fit, before reading a byte of it.
    if (declared > maxBytes + MULTIPART_OVERHEAD_BYTES) throw reviewErrors.uploadTooLarge(maxBytes);
    let staging: string;
    try {
      await mkdir(uploadDir, { recursive: true, mode: 0o700 });
      staging = await mkdtemp(path.join(uploadDir, '.incoming-'));
    } catch (error) {
      throw reviewErrors.uploadFailed(error);
    }
    const { koaBody } = await import('koa-body');
    const parse = koaBody({
      multipart: true,
      json: false,
      urlencoded: false,
      text: false,
      formidable: {
        uploadDir: staging,
        maxFileSize: maxBytes,
        maxTotalFileSize: maxBytes,
        maxFields: MAX_FIELDS,
        maxFieldsSize: MAX_FIELDS_BYTES,
        allowEmptyFiles: true,
        minFileSize: 0,
        // Only the `file` field is written to disk; other file fields are dropped unread.
        filter: (part) => part.name === 'file',
        filename: () => `.upload-${randomUUID()}.part`,
      },
      onError: (error) => {
        throw uploadRefusal(error, maxBytes);
      },
    });
    try {
      await parse(ctx, next);
    } catch (error) {
      // Formidable reads on after a refusal: a client that finished sending meanwhile half-closes, and Node then
      // closes the connection before the 413 is written. Paused, it waits for the answer (see dropRestOfBody).
      ctx.req.pause();
      throw error;
    } finally {
      // Retries: a part's file may still be closing when the refusal is thrown.
      await rm(staging, { recursive: true, force: true, maxRetries: 3 }).catch(() => undefined);
    }
  };
}

function uploadedFiles(ctx: Context): File[] {
  const files = ctx.request.files ?? {};
  return Object.values(files).flatMap((entry) => (Array.isArray(entry) ? entry : [entry]));
}

/**
 * `POST /api/upload` (multipart, field `file`): checks the type by its magic
 * bytes and stores it as `<uploadDir>/<uuid>.<ext>` → `{path}`. The file is
 * staged first (see multipartBody) and moved out once accepted, so a refused
 * or broken upload leaves nothing behind.
 */
export function uploadImage(options: ImageOptions): Middleware[] {
  const store: Middleware = async (ctx: Context) => {
    const [file] = uploadedFiles(ctx);
    if (!file) throw reviewErrors.noFile();
    try {
      let type: { ext: string } | undefined;
      const handle = await open(file.filepath, 'r');
      try {
        type = await sniffImage(handle);
      } finally {
        await handle.close();
      }
      if (!type) throw reviewErrors.notAnImage();
      const stored = path.join(options.uploadDir, `${randomUUID()}.${type.ext}`);
      await rename(file.filepath, stored);
      options.log.info({ path: stored, bytes: file.size }, 'image uploaded');
      ctx.body = { path: stored } satisfies UploadResponse;
    } catch (error) {
      if (error instanceof HttpError) throw error;
      throw reviewErrors.uploadFailed(error);
    }
  };
  return [multipartBody(options), store];
}
