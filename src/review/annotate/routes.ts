import { Router } from '../../http/router.ts';
import type { Context } from 'koa';
import { JsonAnswer, sendJson } from '../../http/json-bytes.ts';
import type { AnnotateDecision, DocumentResponse, FeedbackResponse } from '../contract.ts';
import type { DecisionGate } from '../decision.ts';
import type { KindRouteOptions } from '../kind.ts';
import { readBody, type FieldReader } from '../validate.ts';

/** An annotation review's content: a Markdown file as read when the review began. */
export interface AnnotatePayload {
  document: string;
  /** The file as named on the command line (shown in the page and the inbox). */
  file: string;
  /** With a gate the reviewer approves or denies; without one they send their annotations. */
  gate: boolean;
}

/** The routes of an annotation review: the document, and the decisions its gate allows. */
export function annotateRoutes({ document, file, gate }: AnnotatePayload, { config, log }: KindRouteOptions) {
  return (decisions: DecisionGate<AnnotateDecision>): Router => {
    const router = new Router();
    const answer = new JsonAnswer({ document, file, gate, origin: config.origin } satisfies DocumentResponse);
    router.get('/api/document', (ctx: Context) => sendJson(ctx, answer));

    const decide = (decision: AnnotateDecision['decision']) => async (ctx: Context) => {
      const text = readBody(ctx.request.body).optionalString('feedback');
      const feedback = text?.trim() ? text : null;
      await decisions.decide(ctx, () => {
        log.info({ decision, feedback: feedback !== null }, 'annotation review decided');
        return Promise.resolve({ body: { ok: true } satisfies FeedbackResponse, decision: { decision, feedback } });
      });
    };
    if (gate) {
      router.post('/api/approve', decide('approved'));
      router.post('/api/deny', decide('denied'));
    } else {
      router.post('/api/feedback', decide('feedback'));
    }
    return router;
  };
}

/** An annotation review's decision as a hub answers it, checked. */
export function readAnnotateDecision(body: FieldReader): AnnotateDecision {
  return {
    decision: body.requiredEnum('decision', ['approved', 'denied', 'feedback', 'timeout'] as const),
    feedback: body.optionalString('feedback') ?? null,
  };
}
