import type { CommandContext } from '../../command.ts';
import { loadReviewConfig } from '../../config/review.ts';
import { createLogger } from '../../log.ts';
import { parseReviewArgs } from '../args.ts';
import { runReview, type DecisionCodec } from '../instance.ts';
import { GitRepository } from '../../git/repository.ts';
import { codeReviewRoutes, type CodeDecision } from './routes.ts';

const USAGE = `Usage: gatehouse code-review [--repo DIR] [--diff-type uncommitted|staged|last-commit|branch]
                            [--origin claude-code|opencode] [--timeout 30m] [--decision-file PATH] [--port N]
Serves a review of the git diff of DIR (default: the current directory).
Prints {"feedback","annotations","agentSwitch"} as one JSON line on stdout and exits 0;
on --timeout it prints {"decision":"timeout",...} and exits 3; 1 on error.
`;

/** `gatehouse code-review`'s output: the feedback as sent; exit 0, or 3 on timeout. */
export const codeDecisionCodec: DecisionCodec<CodeDecision> = {
  timeout: () => ({ decision: 'timeout', feedback: null, annotations: [], agentSwitch: null }),
  encode: (decision) => decision,
  exitCode: (decision) => (decision.decision === 'timeout' ? 3 : 0),
};

/** `gatehouse code-review`: one code review of a git work tree, answered with feedback in the browser. */
export async function runCodeReview(ctx: CommandContext, onListening?: (url: string) => void): Promise<number> {
  const args = parseReviewArgs(ctx.argv, ['port', 'origin', 'timeout', 'decision-file', 'repo', 'diff-type'], 0);
  if (args.help) {
    ctx.stderr.write(USAGE);
    return 0;
  }
  const loaded = loadReviewConfig({ args: args.configArgs, env: ctx.env, projectDir: ctx.cwd });
  // A missing or broken repository stops here, before anything listens.
  const repo = GitRepository.open(loaded.repo, { home: loaded.home });
  await repo.context();
  // Images may be served from the reviewed work tree.
  const config = { ...loaded, projectDir: repo.layout.workdir };
  const log = createLogger(config.logLevel);
  log.info({ repo: repo.layout.workdir, diffType: config.diffType }, 'code review of a git work tree');
  return runReview({
    config,
    io: ctx,
    log,
    title: 'Code review',
    routes: codeReviewRoutes({ repo, diffType: config.diffType, config, log }),
    codec: codeDecisionCodec,
    onListening,
  });
}
