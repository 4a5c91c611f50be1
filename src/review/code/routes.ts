import { Router } from '../../http/router.ts';
import type { Context } from 'koa';
import type { Logger } from 'pino';
import type { ReviewConfig } from '../../config/review.ts';
import { DIFF_TYPES, type DiffType } from '../../git/diff-type.ts';
import { sendJson } from '../../http/json-bytes.ts';
import {
  ANNOTATION_TYPES,
  canonicalDiffType,
  DIFF_TYPE_NAMES,
  gitContextOf,
  LINE_SIDES,
  type Annotation,
  type CodeDecision,
  type DiffOption,
  type DiffResponse,
  type DiffSwitchRequest,
  type DiffSwitchResponse,
  type FeedbackRequest,
  type FeedbackResponse,
} from '../contract.ts';
import { reviewErrors } from '../errors.ts';
import type { DecisionGate } from '../decision.ts';
import { readBody, type FieldReader } from '../validate.ts';
import { fromGit } from './git-errors.ts';
import { diffLines } from './lines.ts';
import type { Branches, DiffEngine, DiffResult } from '../../git/repository.ts';
import { DiffAnswers } from './diff-answers.ts';

export type { CodeDecision };

function readDiffSwitch(body: FieldReader): DiffSwitchRequest {
  const value = body.fields['diffType'];
  if (value === undefined || value === null) throw reviewErrors.missingDiffType();
  if (typeof value !== 'string')
    throw reviewErrors.invalidField('diffType', `a string (one of ${DIFF_TYPES.join(', ')})`);
  const diffType = DIFF_TYPE_NAMES.find((name) => name === value);
  if (!diffType) throw reviewErrors.unknownDiffType(value);
  return { diffType };
}

/** The largest line number an annotation may name (numbers are range-checked before a decision stores them). */
export const LINE_MAX = 2 ** 31 - 1;

function readAnnotation(a: FieldReader): Annotation {
  const lineStart = a.requiredNumber('lineStart', { integer: true, min: 1, max: LINE_MAX });
  const lineEnd = a.requiredNumber('lineEnd', { integer: true, min: lineStart, max: LINE_MAX });
  const text = a.optionalString('text');
  const suggestedCode = a.optionalString('suggestedCode');
  return {
    id: a.requiredString('id'),
    type: a.requiredEnum('type', ANNOTATION_TYPES),
    filePath: a.requiredString('filePath'),
    lineStart,
    lineEnd,
    side: a.requiredEnum('side', LINE_SIDES),
    ...(text !== undefined && { text }),
    ...(suggestedCode !== undefined && { suggestedCode }),
  };
}

function readFeedback(body: FieldReader): FeedbackRequest {
  return {
    feedback: body.optionalString('feedback'),
    annotations: body.optionalObjectArray('annotations')?.map(readAnnotation),
    agentSwitch: body.optionalString('agentSwitch'),
  };
}

/** The decision a reviewer's feedback makes. */
function feedbackDecision({ feedback, annotations, agentSwitch }: FeedbackRequest): CodeDecision {
  return { feedback: feedback ?? null, annotations: annotations ?? [], agentSwitch: agentSwitch ?? null };
}

/** A code decision read back from JSON (a hub's answer), each field checked. */
export function readCodeDecision(body: FieldReader): CodeDecision {
  const timeout = body.optionalEnum('decision', ['timeout'] as const);
  return { ...(timeout && { decision: timeout }), ...feedbackDecision(readFeedback(body)) };
}

export interface CodeReviewOptions {
  /** Where the diffs come from: the work tree, or (on the hub) the diffs a submitter computed. */
  repo: DiffEngine;
  /** The diff shown first; a switch changes it for later `GET /api/diff`. */
  diffType: DiffType;
  /** The diffs offered to switch to: those its submitter sent for a review on the hub; by default, ours. */
  offered?: DiffOption[];
  config: ReviewConfig;
  log: Logger;
}

/** The code review server's routes. */
export function codeReviewRoutes({ repo, diffType: initial, offered, config, log }: CodeReviewOptions) {
  return (gate: DecisionGate<CodeDecision>): Router => {
    const router = new Router();
    let diffType = initial;
    const answers = new DiffAnswers(async (type) => {
      const [diff, branches]: [DiffResult, Branches] = await fromGit(() =>
        Promise.all([repo.diff(type), repo.context()]),
      );
      const gitContext = gitContextOf(branches, offered);
      return {
        state: [JSON.stringify(gitContext), diff.gitRef, diff.latin1Patch],
        answer: {
          rawPatch: diff.rawPatch,
          gitRef: diff.gitRef,
          origin: config.origin,
          diffType: type,
          gitContext,
          sharingEnabled: config.sharingEnabled,
        } satisfies DiffResponse,
      };
    });

    router.get('/api/diff', async (ctx: Context) => sendJson(ctx, await answers.get(diffType)));

    router.post('/api/diff/switch', async (ctx: Context) => {
      const type = canonicalDiffType(readDiffSwitch(readBody(ctx.request.body)).diffType);
      const diff = await fromGit(() => repo.diff(type));
      diffType = type;
      log.info({ diffType: type }, 'diff type switched');
      ctx.body = { rawPatch: diff.rawPatch, gitRef: diff.gitRef, diffType: type } satisfies DiffSwitchResponse;
    });

    router.get(
      '/api/diff/lines',
      diffLines(repo, () => diffType),
    );

    router.post('/api/feedback', async (ctx: Context) => {
      const decision = feedbackDecision(readFeedback(readBody(ctx.request.body)));
      await gate.decide(ctx, () => {
        log.info({ annotations: decision.annotations.length }, 'code review feedback received');
        return Promise.resolve({ body: { ok: true } satisfies FeedbackResponse, decision });
      });
    });

    return router;
  };
}
