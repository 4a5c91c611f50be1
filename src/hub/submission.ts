import { ORIGINS } from '../config/review.ts';
import { DIFF_TYPES, type DiffType } from '../git/diff-type.ts';
import type { DiffEngine, GitContext } from '../git/repository.ts';
import { reviewErrors } from '../review/errors.ts';
import { MAX_TIMER_MS } from '../review/instance.ts';
import { readBody, type FieldReader } from '../review/validate.ts';
import type { NewReview } from './store.ts';

/** A plan review's content. */
export interface PlanPayload {
  plan: string;
  permissionMode: string;
}

/** One diff computed by the submitter's engine, or why it could not be. */
export type SubmittedDiff = { rawPatch: string; gitRef: string } | { error: string };

/** A code review's content: every diff type the submitter could compute, so `/api/diff/switch` works on the hub. */
export interface CodePayload {
  diffType: DiffType;
  diffs: Partial<Record<DiffType, SubmittedDiff>>;
  gitContext: GitContext;
}

const TEXT_MAX = 200;
/**
 * The longest `timeoutMs`: the longest a Node timer waits (about 24.8 days).
 * Every number a submitter sends is range-checked before it is stored, so
 * that what is stored reads back as the same number.
 */
export const TIMEOUT_MAX_MS = MAX_TIMER_MS;

function shortText(body: FieldReader, key: string, fallback: string): string {
  const value = body.optionalString(key)?.trim() ?? '';
  if (value.length > TEXT_MAX) throw reviewErrors.invalidField(key, `at most ${TEXT_MAX} characters`);
  return value || fallback;
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
 * `project`, `branch`, `session` and `timeoutMs`.
 */
export function readSubmission(
  raw: unknown,
  now: number,
  request: { requestKey: string | null; baseUrl: string; submitter: string },
): NewReview {
  const body = readBody(raw);
  const kind = body.requiredEnum('kind', ['plan', 'code'] as const);
  const origin = body.optionalEnum('origin', ORIGINS) ?? 'claude-code';
  const timeoutMs =
    body.fields['timeoutMs'] == null
      ? null
      : body.requiredNumber('timeoutMs', { integer: true, min: 1, max: TIMEOUT_MAX_MS });
  let payload: PlanPayload | CodePayload;
  let branch = shortText(body, 'branch', '');
  if (kind === 'plan') {
    const plan = body.requiredString('plan');
    if (plan.trim() === '') throw reviewErrors.invalidField('plan', 'a non-empty string');
    payload = { plan, permissionMode: shortText(body, 'permissionMode', 'default') };
  } else {
    payload = readCode(body);
    branch ||= payload.gitContext.currentBranch;
  }
  return {
    kind,
    title: shortText(body, 'title', kind === 'plan' ? 'Plan' : 'Code review'),
    origin,
    project: shortText(body, 'project', ''),
    branch,
    session: shortText(body, 'session', ''),
    payload,
    deadline: timeoutMs === null ? null : now + timeoutMs,
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
