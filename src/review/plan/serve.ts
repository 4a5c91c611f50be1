import path from 'node:path';
import type { ReviewConfig } from '../../config/review.ts';
import { createLogger } from '../../log.ts';
import { branchOf } from '../branch.ts';
import type { DecisionCodec } from '../decision.ts';
import { sinkFor, type ReviewContext } from '../sink.ts';
import { planTitle } from './files.ts';
import { plan as planKind } from './kind.ts';
import { planRoutes, type PlanDecision } from './routes.ts';

export interface ServePlanOptions {
  ctx: ReviewContext;
  config: ReviewConfig;
  plan: string;
  permissionMode: string;
  codec: DecisionCodec<PlanDecision>;
}

/**
 * One plan review (shared by `plan` and the agents' hooks), decided where
 * the context's sink says: here, or on the hub in `config.hubUrl`.
 */
export async function servePlan({ ctx, config, plan, permissionMode, codec }: ServePlanOptions): Promise<number> {
  const log = createLogger(config.logLevel);
  const sink = await sinkFor(ctx, config, log);
  return sink.decide({
    kind: planKind,
    routes: planRoutes({ plan, permissionMode, config, log }),
    payload: () => Promise.resolve({ plan, permissionMode }),
    // The plan as the hub's inbox and notifications name it.
    about: async () => ({
      title: planTitle(plan) ?? 'Plan',
      project: path.basename(config.projectDir),
      branch: await branchOf(config.projectDir, config.home),
    }),
    codec,
  });
}
