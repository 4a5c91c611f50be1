import path from 'node:path';
import type { Readable } from 'node:stream';
import type { CommandContext } from '../../command.ts';
import type { ReviewConfig } from '../../config/review.ts';
import { createLogger } from '../../log.ts';
import { runReview, type DecisionCodec, type ReviewAbout } from '../instance.ts';
import { planTitle } from './files.ts';
import { planRoutes, type PlanDecision } from './routes.ts';

/** The largest plan (or hook event) read from stdin. */
export const MAX_STDIN_BYTES = 16 * 1024 * 1024;

/** All of `stream` as UTF-8 text, refusing more than `limit` bytes. */
export async function readAll(stream: Readable, limit = MAX_STDIN_BYTES): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    size += buffer.length;
    if (size > limit) throw new Error(`stdin is larger than ${limit} bytes`);
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The decision with nothing chosen: what a timeout records. */
export const TIMEOUT_DECISION: PlanDecision = {
  decision: 'timeout',
  feedback: null,
  savedPath: null,
  permissionMode: null,
  agentSwitch: null,
};

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
 * Serves one plan review until its decision (shared by `plan` and `hook
 * claude-code`), or submits it to the hub in `config.hubUrl` and waits there.
 */
export async function servePlan({ ctx, config, plan, permissionMode, codec }: ServePlanOptions): Promise<number> {
  const log = createLogger(config.logLevel);
  const title = 'Plan review';
  // The plan as the hub's inbox and notifications name it.
  const about = async (): Promise<ReviewAbout> => {
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
  return runReview({ config, io: ctx, log, title, routes, codec, about });
}
