import { DIFF_TYPES } from '../../git/diff-type.ts';
import type { DiffEngine } from '../../git/repository.ts';
import type { CodeSubmission, SubmittedDiff } from '../../hub/contract.ts';
import { reviewErrors } from '../errors.ts';
import type { DecisionCodec } from '../decision.ts';
import type { ReviewKind } from '../kind.ts';
import type { FieldReader } from '../validate.ts';
import { codeReviewRoutes, readCodeDecision, type CodeDecision } from './routes.ts';

/** A code review's content: every diff type the submitter could compute, so `/api/diff/switch` works on a hub. */
export type CodePayload = Pick<CodeSubmission, 'diffType' | 'diffs' | 'gitContext'>;

/** `gatehouse code-review`'s output: the feedback as sent; exit 0, or 3 on timeout. */
export const codeDecisionCodec: DecisionCodec<CodeDecision> = {
  timeout: () => ({ decision: 'timeout', feedback: null, annotations: [], agentSwitch: null }),
  encode: (decision) => decision,
  exitCode: (decision) => (decision.decision === 'timeout' ? 3 : 0),
};

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

/** The repository a submitted code review's routes read: the diffs as submitted. */
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

/** A git diff, answered with feedback and line-anchored annotations. */
export const code: ReviewKind<'code', CodePayload, CodeDecision> = {
  name: 'code',
  title: 'Code review',
  label: 'Code review',
  readPayload: readCode,
  branch: (payload) => payload.gitContext.currentBranch,
  routes: (payload, { config, log }) =>
    codeReviewRoutes({
      repo: submittedRepository(payload),
      diffType: payload.diffType,
      offered: payload.gitContext.diffOptions,
      config,
      log,
    }),
  readDecision: readCodeDecision,
  codec: codeDecisionCodec,
  outcome: (decision) => decision.decision ?? 'feedback',
  text: () => null,
};
