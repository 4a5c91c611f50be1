import path from 'node:path';
import { loadReviewConfig } from '../../config/review.ts';
import { parseReviewArgs } from '../args.ts';
import { readAll } from '../../stdio.ts';
import type { ReviewContext } from '../sink.ts';
import { readTextFile } from '../text-file.ts';
import { planDecisionCodec } from './kind.ts';
import { servePlan } from './serve.ts';

const USAGE = `Usage: gatehouse plan [FILE|-] [--origin AGENT] [--timeout 30m] [--decision-file PATH] [--port N]
                      [--hub URL] [--session KEY]
Serves a review of the Markdown plan in FILE (or on stdin with - or no FILE);
with --hub (or GATEHOUSE_HUB_URL) submits it to that review hub and waits there.
Prints the decision as one JSON line on stdout; exit 0 approved, 2 denied, 3 timeout, 1 error.
`;

/** The plan text from FILE, or stdin for `-`; an empty plan is an error. */
async function readPlan(source: string, ctx: ReviewContext): Promise<string> {
  let plan: string;
  if (source === '-') {
    if ((ctx.stdin as { isTTY?: boolean }).isTTY)
      throw new Error('no plan given: pass FILE, or pipe the plan on stdin');
    plan = await readAll(ctx.stdin);
  } else {
    const file = path.resolve(ctx.cwd, source);
    plan = await readTextFile(file, `the plan ${file}`);
  }
  if (plan.trim() === '') throw new Error(`the plan is empty (${source === '-' ? 'stdin' : source})`);
  return plan;
}

/** `gatehouse plan [FILE|-]`: one plan review, decided in the browser. */
export async function runPlan(ctx: ReviewContext): Promise<number> {
  const args = parseReviewArgs(ctx.argv, ['port', 'origin', 'timeout', 'decision-file', 'hub', 'session'], 1);
  if (args.help) {
    ctx.stderr.write(USAGE);
    return 0;
  }
  const config = loadReviewConfig({ args: args.configArgs, env: ctx.env, projectDir: ctx.cwd });
  const plan = await readPlan(args.positionals[0] ?? '-', ctx);
  return servePlan({ ctx, config, plan, permissionMode: 'default', codec: planDecisionCodec });
}
