import { ORIGINS } from '../config/review.ts';
import { DIFF_TYPES } from '../git/diff-type.ts';
import type { DiffEngine } from '../git/repository.ts';
import { reviewErrors } from '../review/errors.ts';
import { MAX_TIMER_MS } from '../review/instance.ts';
import { readBody, type FieldReader } from '../review/validate.ts';
import {
  REVIEW_KINDS,
  type CodeSubmission,
  type PlanSubmission,
  type SubmissionRequest,
  type SubmittedDiff,
} from './contract.ts';
import type { NewReview } from './store.ts';

/** A plan review's content. */
export interface PlanPayload {
  plan: string;
  permissionMode: string;
}

/** A code review's content: every diff type the submitter could compute, so `/api/diff/switch` works on the hub. */
export type CodePayload = Pick<CodeSubmission, 'diffType' | 'diffs' | 'gitContext'>;

const TEXT_MAX = 200;
/**
 * The longest `timeoutMs`: the longest a Node timer waits (about 24.8 days).
 * Every number a submitter sends is range-checked before it is stored, so
 * that what is stored reads back as the same number.
 */
export const TIMEOUT_MAX_MS = MAX_TIMER_MS;

/** A short text trimmed, at most TEXT_MAX characters; blank is absent. */
function shortText(body: FieldReader, key: string): string | undefined {
  const value = body.optionalString(key)?.trim() ?? '';
  if (value.length > TEXT_MAX) throw reviewErrors.invalidField(key, `at most ${TEXT_MAX} characters`);
  return value || undefined;
}

function readDiff(entry: FieldReader): SubmittedDiff {
  const error = entry.optionalString('error');
  if (error !== undefined) return { error };
  return { rawPatch: entry.requiredString('rawPatch'), gitRef: entry.requiredString('gitRef') };
}

function readCode(body: FieldReader): CodePayload {
  const diffType = body.requiredEnum('diffType', DIFF_TYPES);
  const diffsReader = body.optionalObject('diffs');
  if (diffsReader === undefined) throw reviewErrors.missingField('diffs');
  const diffs: CodePayload['diffs'] = {};
  for (const type of DIFF_TYPES) {
    const entry = diffsReader.optionalObject(type);
    if (entry !== undefined) diffs[type] = readDiff(entry);
  }
  if (diffs[diffType] === undefined) throw reviewErrors.missingField(`diffs.${diffType}`);
  const context = body.optionalObject('gitContext');
  if (context === undefined) throw reviewErrors.missingField('gitContext');
  const diffOptions = (context.optionalObjectArray('diffOptions') ?? []).map((o) => ({
    id: o.requiredString('id'),
    label: o.requiredString('label'),
  }));
  return {
    diffType,
    diffs,
    gitContext: {
      currentBranch: context.requiredString('currentBranch'),
      defaultBranch: context.requiredString('defaultBranch'),
      diffOptions,
    },
  };
}

/**
 * The body of `POST /api/reviews`, checked field by field (each error names
 * the field): `kind` `plan` with `plan` (and `permissionMode`), or `code`
 * with `diffType`, `diffs` and `gitContext`; optional `title`, `origin`,
 * `project`, `branch`, `session` and `timeoutMs`. Texts come back trimmed,
 * a blank one absent.
 */
export function readSubmission(raw: unknown): SubmissionRequest {
  const body = readBody(raw);
  const kind = body.requiredEnum('kind', REVIEW_KINDS);
  const origin = body.optionalEnum('origin', ORIGINS);
  const timeoutMs =
    body.fields['timeoutMs'] == null
      ? undefined
      : body.requiredNumber('timeoutMs', { integer: true, min: 1, max: TIMEOUT_MAX_MS });
  const branch = shortText(body, 'branch');
  // Read after the kind's own fields, so errors come in the order they always have.
  const common = (): Omit<PlanSubmission, 'kind' | 'plan' | 'permissionMode'> => ({
    title: shortText(body, 'title'),
    origin,
    project: shortText(body, 'project'),
    branch,
    session: shortText(body, 'session'),
    timeoutMs,
  });
  if (kind === 'plan') {
    const plan = body.requiredString('plan');
    if (plan.trim() === '') throw reviewErrors.invalidField('plan', 'a non-empty string');
    return { kind, plan, permissionMode: shortText(body, 'permissionMode'), ...common() };
  }
  return { kind, ...readCode(body), ...common() };
}

/**
 * A checked submission as the hub stores it: its defaults filled in (the
 * kind's title, `claude-code`, a code review's current branch), its
 * deadline `timeoutMs` from `now`, with who sent it and how.
 */
export function newReview(
  submission: SubmissionRequest,
  now: number,
  request: { requestKey: string | null; baseUrl: string; submitter: string },
): NewReview {
  const { kind, title, origin, project, branch, session, timeoutMs } = submission;
  const payload: PlanPayload | CodePayload =
    submission.kind === 'plan'
      ? { plan: submission.plan, permissionMode: submission.permissionMode ?? 'default' }
      : { diffType: submission.diffType, diffs: submission.diffs, gitContext: submission.gitContext };
  return {
    kind,
    title: title ?? (kind === 'plan' ? 'Plan' : 'Code review'),
    origin: origin ?? 'claude-code',
    project: project ?? '',
    branch: branch ?? (submission.kind === 'code' ? submission.gitContext.currentBranch : ''),
    session: session ?? '',
    payload,
    deadline: timeoutMs === undefined ? null : now + timeoutMs,
    ...request,
  };
}

/** The repository a code review's routes read: the diffs as submitted. */
export function submittedRepository(payload: CodePayload): DiffEngine {
  return {
    diff(type) {
      const diff = payload.diffs[type];
      // The submitter's own words are its report, never a git error of the hub's (and a 400: nothing failed here).
      if (diff === undefined) return Promise.reject(reviewErrors.diffNotSubmitted(type));
      if ('error' in diff) return Promise.reject(reviewErrors.diffNotComputed(type, diff.error));
      const latin1Patch = Buffer.from(diff.rawPatch, 'utf8').toString('latin1');
      return Promise.resolve({ rawPatch: diff.rawPatch, gitRef: diff.gitRef, latin1Patch });
    },
    context() {
      return Promise.resolve(payload.gitContext);
    },
    sideContent() {
      // A submission carries its patches, not whole files: there are no lines to reveal around a hunk.
      return Promise.reject(reviewErrors.linesNotSubmitted());
    },
  };
}
