import path from 'node:path';
import type { CommandContext } from '../../command.ts';
import type { ReviewConfig } from '../../config/review.ts';
import { createLogger } from '../../log.ts';
import { runReview, type DecisionCodec, type ReviewAbout } from '../instance.ts';
import { TIMEOUT_DECISION } from './decision.ts';
import { planTitle } from './files.ts';
import { planRoutes, type PlanDecision } from './routes.ts';

/** `gatehouse plan`'s output: the decision itself; exit 0 approved, 2 denied, 3 timeout. */
export const planDecisionCodec: DecisionCodec<PlanDecision> = {
  timeout: () => TIMEOUT_DECISION,
  encode: (decision) => decision,
  exitCode: (decision) => ({ approved: 0, denied: 2, timeout: 3 })[decision.decision],
};

export interface ServePlanOptions {
  ctx: CommandContext;
  config: ReviewConfig;
  plan: string;
  permissionMode: string;
  codec: DecisionCodec<PlanDecision>;
}

/**
 * Serves one plan review until its decision (shared by `plan` and the
 * agents' hooks), or submits it to the hub in `config.hubUrl` and waits there.
 */
export async function servePlan({ ctx, config, plan, permissionMode, codec }: ServePlanOptions): Promise<number> {
  const log = createLogger(config.logLevel);
  const title = 'Plan review';
  // The plan as the hub's inbox and notifications name it.
  const about = async (): Promise<ReviewAbout & { kind: 'plan' }> => {
    const { branchOf } = await import('../../hub/client.ts');
    const branch = await branchOf(config.projectDir, config.home);
    return { kind: 'plan', title: planTitle(plan) ?? 'Plan', project: path.basename(config.projectDir), branch };
  };
  if (config.hubUrl !== null) {
    const { runHubReview } = await import('../../hub/client.ts');
    const submission = { ...(await about()), plan, permissionMode, origin: config.origin };
    return runHubReview({ config: { ...config, hubUrl: config.hubUrl }, io: ctx, log, title, submission, codec });
  }
  const routes = planRoutes({ plan, permissionMode, config, log });
  return runReview({ config, io: ctx, log, title, kind: 'plan', routes, codec, about });
}
