import { HttpError } from '../http/errors.ts';

/**
 * The hub's own error answers, rendered `{"error": "<message>"}` like the
 * review servers' (a review under /r/<id>/ answers with reviewErrors).
 */
export const hubErrors = {
  hostNotAllowed: (host: string) =>
    new HttpError(403, `Host ${JSON.stringify(host)} is not served here (hub.allowed_hosts)`),
  unauthenticated: (role: string) =>
    new HttpError(401, `Authentication required: send a ${role} token as Authorization: Bearer, or sign in`, {
      headers: { 'www-authenticate': 'Bearer realm="gatehouse-hub"' },
    }),
  forbidden: (role: string) => new HttpError(403, `This token may not do that: a ${role} token is needed`),
  wrongToken: () => new HttpError(401, 'Unknown token'),
  tooManyWrongTokens: (retryAfterSeconds: number) =>
    new HttpError(429, `Too many wrong tokens from this client: try again in ${retryAfterSeconds} s`, {
      headers: { 'retry-after': String(retryAfterSeconds) },
    }),
  reviewNotFound: () => new HttpError(404, 'No such review'),
  notFound: () => new HttpError(404, 'Not found'),
  submissionTooLarge: (limitBytes: number) =>
    new HttpError(413, `Submission too large: the limit is ${limitBytes} bytes`),
} as const;
