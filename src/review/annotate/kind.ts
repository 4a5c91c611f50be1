import { printedAsIs } from '../decision.ts';
import type { ReviewKind } from '../kind.ts';
import { shortText } from '../validate.ts';
import type { AnnotateDecision } from '../contract.ts';
import { annotateRoutes, readAnnotateDecision, type AnnotatePayload } from './routes.ts';

/** `gatehouse annotate`'s output: the decision itself; exit 0 approved or feedback sent, 2 denied, 3 timeout. */
export const annotateDecisionCodec = printedAsIs<AnnotateDecision>(
  { decision: 'timeout', feedback: null },
  { approved: 0, feedback: 0, denied: 2, timeout: 3 },
);

/** Any Markdown file, annotated in the plan review's UI; with a gate, approved or denied too. */
export const annotate: ReviewKind<'annotate', AnnotatePayload, AnnotateDecision> = {
  name: 'annotate',
  title: 'Annotation review',
  label: 'Document',
  readPayload(body) {
    return {
      document: body.requiredText('document'),
      file: shortText(body, 'file', 'document'),
      gate: body.optionalBoolean('gate') ?? false,
    };
  },
  branch: () => '',
  routes: annotateRoutes,
  readDecision: readAnnotateDecision,
  codec: annotateDecisionCodec,
  outcome: (decision) => decision.decision,
  text: (payload) => payload.document,
};
