import { HttpError } from '../http/errors.ts';

/** The errno code of a thrown value, which need not be an Error at all. */
function errnoCode(cause: unknown): string | undefined {
  return typeof cause === 'object' && cause !== null ? (cause as NodeJS.ErrnoException).code : undefined;
}

/**
 * Every error answer of the review servers (plan and code), in one place.
 * Rendered as `{"error": "<message>"}` by renderPlainError; docs/api.md lists
 * them per endpoint. The others name the field or the limit.
 */
export const reviewErrors = {
  // GET /api/image
  missingPath: () => new HttpError(400, 'Missing path parameter'),
  fileNotFound: () => new HttpError(404, 'File not found'),
  imageUnreadable: (cause: unknown) => new HttpError(500, 'Could not read the image file', { cause }),

  // POST /api/upload
  noFile: () => new HttpError(400, 'No file provided'),
  notAnImage: () => new HttpError(400, 'Unsupported file type: only PNG, JPEG and WebP images are accepted'),
  uploadTooLarge: (limitBytes: number) =>
    new HttpError(413, `Upload too large: the limit is ${formatBytes(limitBytes)}`),
  tooManyFields: (limit: number) => new HttpError(413, `Too many form fields: the limit is ${limit}`),
  fieldsTooLarge: (limitBytes: number) =>
    new HttpError(413, `Form fields too large: the limit is ${formatBytes(limitBytes)} in all`),
  malformedUpload: (cause: unknown) => new HttpError(400, 'Malformed multipart/form-data body', { cause }),
  uploadFailed: (cause: unknown) => new HttpError(500, 'Upload failed: the file could not be stored', { cause }),

  // POST /api/diff/switch
  missingDiffType: () => new HttpError(400, 'Missing diffType'),
  unknownDiffType: (value: string) => new HttpError(400, `Unknown diffType: ${value}`),

  // GET /api/diff/lines
  missingParameter: (name: string) => new HttpError(400, `Missing ${name} parameter`),
  invalidParameter: (name: string, expected: string) =>
    new HttpError(400, `Invalid parameter ${name}: must be ${expected}`),
  notInDiff: (path: string, side: string) => new HttpError(404, `Not in the current diff on the ${side} side: ${path}`),
  binaryLines: (path: string) => new HttpError(400, `Binary file, no lines to show: ${path}`),
  rangePastEnd: (start: number, total: number) => {
    const length = total === 1 ? '1 line' : `${total} lines`;
    return new HttpError(400, `Invalid range: line ${start} is past the end of the file (${length})`);
  },
  rangeTooLong: (max: number) => new HttpError(400, `Invalid range: at most ${max} lines per request`),
  // A code review on the hub: the submitter computed its diffs
  diffNotSubmitted: (type: string) => new HttpError(400, `The submitter sent no ${type} diff to switch to`),
  diffNotComputed: (type: string, why: string) =>
    new HttpError(400, `The submitter could not compute the ${type} diff: ${why}`),
  linesNotSubmitted: () =>
    new HttpError(501, 'This review holds the submitted patch only: lines outside its hunks cannot be shown'),

  // Code review: the repository could not be read (the message says why)
  gitFailed: (cause: unknown) =>
    new HttpError(500, `Git error: ${cause instanceof Error ? cause.message : String(cause)}`, { cause }),

  // Every request
  hostNotServed: (host: string) =>
    new HttpError(
      403,
      `Host ${JSON.stringify(host)} is not served here: ` +
        'add its name to SERVICE_ALLOWED_HOSTS (comma-separated) to use it',
    ),

  // Every POST
  crossOrigin: () => new HttpError(403, 'Cross-origin request refused'),
  notJson: () =>
    new HttpError(415, 'Unsupported Content-Type: send application/json (multipart/form-data for /api/upload)'),
  badEncoding: () => new HttpError(400, 'The request body does not match its Content-Encoding'),
  bodyNotObject: () => new HttpError(400, 'Request body must be a JSON object'),
  /** A field of the wrong type or value; `field` is its path, e.g. `notevault.tags` or `annotations[2].side`. */
  invalidField: (field: string, expected: string) => new HttpError(400, `Invalid field ${field}: must be ${expected}`),
  missingField: (field: string) => new HttpError(400, `Missing field ${field}`),
  /** A decision POST after the review was already decided (or while another one is being recorded). */
  alreadyDecided: () => new HttpError(409, 'This review has already been decided'),

  // Plan save and notes
  pathNotAllowed: (field: string) =>
    new HttpError(400, `Invalid field ${field}: must be a folder inside an allowed root`),
  notAFolder: (field: string, why: string) => new HttpError(400, `Invalid field ${field}: must be a folder (${why})`),
  vaultNotFound: () => new HttpError(400, 'Invalid field notevault.vaultPath: no such vault folder'),
  saveFailed: (what: string, cause: unknown) =>
    new HttpError(
      500,
      `Could not save the ${what}: ${errnoCode(cause) ?? 'write failed'}; nothing was decided, try again`,
      { cause },
    ),
} as const;

/** The body of a failed agent list: status 200 (docs/api.md, `GET /api/agents`). */
export const AGENTS_FETCH_FAILED = 'Failed to fetch agents';

function formatBytes(bytes: number): string {
  const mib = bytes / (1024 * 1024);
  return Number.isInteger(mib) ? `${mib} MiB` : `${bytes} bytes`;
}
