import { ORIGINS } from '../config/review.ts';
import { MAX_TIMER_MS } from '../review/instance.ts';
import { KIND_NAMES, REVIEW_KINDS, type KindName } from '../review/kinds.ts';
import { readBody, shortText, type FieldReader } from '../review/validate.ts';
import type { NewReview } from './store.ts';

/**
 * The longest `timeoutMs`: the longest a Node timer waits (about 24.8 days).
 * Every number a submitter sends is range-checked before it is stored, so
 * that what is stored reads back as the same number.
 */
export const TIMEOUT_MAX_MS = MAX_TIMER_MS;

type Content<K extends KindName = KindName> = { [P in K]: Pick<NewReview<P>, 'kind' | 'payload'> }[K];

/**
 * The kind's content, read by its own reader, with the title and branch the
 * inbox shows when the submission names none.
 */
function readContent<K extends KindName>(name: K, body: FieldReader, branch: string) {
  const kind = REVIEW_KINDS[name];
  const payload = kind.readPayload(body);
  const content: Content<K> = { kind: name, payload };
  return { ...content, title: shortText(body, 'title', kind.label), branch: branch || kind.branch(payload) };
}

/**
 * The body of `POST /api/reviews`, checked field by field (each error names
 * the field): `kind` (see src/review/kinds.ts) with that kind's own fields
 * (a plan's `plan` and `permissionMode`, a code review's `diffType`, `diffs`
 * and `gitContext`); optional `title`, `origin`, `project`, `branch`,
 * `session` and `timeoutMs`.
 */
export function readSubmission(
  raw: unknown,
  now: number,
  request: { requestKey: string | null; baseUrl: string; submitter: string },
): NewReview {
  const body = readBody(raw);
  const kind = body.requiredEnum('kind', KIND_NAMES);
  const origin = body.optionalEnum('origin', ORIGINS) ?? 'claude-code';
  const timeoutMs =
    body.fields['timeoutMs'] == null
      ? null
      : body.requiredNumber('timeoutMs', { integer: true, min: 1, max: TIMEOUT_MAX_MS });
  const content = readContent(kind, body, shortText(body, 'branch', ''));
  return {
    ...content,
    origin,
    project: shortText(body, 'project', ''),
    session: shortText(body, 'session', ''),
    deadline: timeoutMs === null ? null : now + timeoutMs,
    ...request,
  };
}
