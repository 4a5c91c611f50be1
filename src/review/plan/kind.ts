import { printedAsIs } from '../decision.ts';
import type { ReviewKind } from '../kind.ts';
import { shortText } from '../validate.ts';
import { TIMEOUT_DECISION } from './decision.ts';
import { planRoutes, readPlanDecision, type PlanDecision } from './routes.ts';

/** A plan review's content. */
export interface PlanPayload {
  plan: string;
  /** The host agent's permission mode, as it reported it. */
  permissionMode: string;
}

/** `gatehouse plan`'s output: the decision itself; exit 0 approved, 2 denied, 3 timeout. */
export const planDecisionCodec = printedAsIs<PlanDecision>(TIMEOUT_DECISION, { approved: 0, denied: 2, timeout: 3 });

/** A Markdown plan, approved or denied with feedback. */
export const plan: ReviewKind<'plan', PlanPayload, PlanDecision> = {
  name: 'plan',
  title: 'Plan review',
  label: 'Plan',
  readPayload(body) {
    return { plan: body.requiredText('plan'), permissionMode: shortText(body, 'permissionMode', 'default') };
  },
  branch: () => '',
  routes: ({ plan, permissionMode }, { config, log }) => planRoutes({ plan, permissionMode, config, log }),
  readDecision: readPlanDecision,
  codec: planDecisionCodec,
  outcome: (decision) => decision.decision,
  text: (payload) => payload.plan,
};
