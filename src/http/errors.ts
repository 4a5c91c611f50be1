/**
 * An error that is an HTTP answer: a status and a message meant for the
 * client. Each service family renders it in its own body shape; the message
 * catalogues live with the families (src/review/errors.ts, src/proxy/errors.ts).
 */
export class HttpError extends Error {
  override readonly name = 'HttpError';
  readonly status: number;
  /** Extra response headers, e.g. `retry-after`. */
  readonly headers: Readonly<Record<string, string>>;
  /** A machine-readable kind for families whose bodies carry one. */
  readonly kind: string | undefined;

  constructor(
    status: number,
    message: string,
    options: { kind?: string; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.status = status;
    this.kind = options.kind;
    this.headers = options.headers ?? {};
  }
}

interface BodyParserError {
  status?: unknown;
  statusCode?: unknown;
  httpCode?: unknown;
  type?: unknown;
  expose?: unknown;
}

/**
 * Turns anything thrown below the error middleware into an HttpError.
 * Body-parser failures keep their 4xx status with a plain message; anything
 * else is an internal error whose details stay in the log.
 */
export function toHttpError(error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  const e = (error ?? {}) as BodyParserError;
  const status = [e.status, e.statusCode, e.httpCode].find((s): s is number => typeof s === 'number');
  if (status === 413 || e.type === 'entity.too.large')
    return new HttpError(413, 'Request body too large', { kind: 'too_large', cause: error });
  // co-body (under koa-body) throws a bare SyntaxError with status 400.
  if (e.type === 'entity.parse.failed' || (error instanceof SyntaxError && status === 400))
    return new HttpError(400, 'Invalid JSON body', { kind: 'invalid_json', cause: error });
  if (status === 415)
    return new HttpError(415, 'Unsupported media type', { kind: 'unsupported_media_type', cause: error });
  if (status !== undefined && status >= 400 && status < 500) {
    return new HttpError(status, error instanceof Error ? error.message : 'Bad request', {
      kind: 'bad_request',
      cause: error,
    });
  }
  return new HttpError(500, 'Internal server error', { kind: 'internal', cause: error });
}
