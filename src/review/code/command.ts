import path from 'node:path';
import type { CommandContext } from '../../command.ts';
import { loadReviewConfig, type ReviewConfig } from '../../config/review.ts';
import { createLogger } from '../../log.ts';
import { parseReviewArgs } from '../args.ts';
import type { DecisionCodec, ReviewAbout } from '../instance.ts';
import { DIFF_TYPES, type DiffType } from '../../git/diff-type.ts';
import { ThreadedRepository } from '../../git/thread.ts';
import type { CodeSubmission, SubmittedDiff } from '../../hub/contract.ts';
import { gitContextOf } from '../contract.ts';
import type { CodeDecision } from './routes.ts';

const USAGE = `Usage: gatehouse code-review [--repo DIR] [--diff-type uncommitted|staged|last-commit|branch]
                            [--origin AGENT] [--timeout 30m] [--decision-file PATH] [--port N]
                            [--hub URL] [--session KEY]
Serves a review of the git diff of DIR (default: the current directory); with --hub
(or GATEHOUSE_HUB_URL) computes the diffs here and submits them to that review hub.
Prints {"feedback","annotations","agentSwitch"} as one JSON line on stdout and exits 0;
on --timeout it prints {"decision":"timeout",...} and exits 3; 1 on error.
`;

/** `gatehouse code-review`'s output: the feedback as sent; exit 0, or 3 on timeout. */
export const codeDecisionCodec: DecisionCodec<CodeDecision> = {
  timeout: () => ({ decision: 'timeout', feedback: null, annotations: [], agentSwitch: null }),
  encode: (decision) => decision,
  exitCode: (decision) => (decision.decision === 'timeout' ? 3 : 0),
};

/**
 * A hub submission of a work tree: every diff type, computed here by our
 * engine (the hub has no repository), so the reviewer can still switch.
 */
async function codeSubmission(repo: ThreadedRepository, diffType: DiffType): Promise<CodeSubmission> {
  const context = await repo.context();
  const diffs = Object.fromEntries(
    await Promise.all(
      DIFF_TYPES.map(async (type): Promise<[DiffType, SubmittedDiff]> => {
        try {
          const { rawPatch, gitRef } = await repo.diff(type);
          return [type, { rawPatch, gitRef }];
        } catch (error) {
          return [type, { error: (error as Error).message }];
        }
      }),
    ),
  );
  return { ...(await codeAbout(repo)), diffType, diffs, gitContext: gitContextOf(context) };
}

/** A code review as the inbox and notifications name it: `<project> (<branch>)`. */
async function codeAbout(repo: ThreadedRepository): Promise<ReviewAbout & { kind: 'code' }> {
  const project = path.basename(repo.workdir);
  const branch = (await repo.context()).currentBranch;
  return { kind: 'code', title: `${project} (${branch})`, project, branch };
}

export interface CodeReviewRun {
  ctx: Pick<CommandContext, 'stdout' | 'stderr' | 'shutdown'>;
  config: ReviewConfig;
  /** The open work tree (the caller closes it). */
  repo: ThreadedRepository;
  codec: DecisionCodec<CodeDecision>;
  onListening?: (url: string) => void;
}

/**
 * One code review of an open work tree until its decision: served here, or
 * submitted to the hub in `config.hubUrl` with every diff type computed here
 * (shared by `code-review` and the code gate of `hook <agent> --gate code`).
 */
export async function reviewCode({ ctx, config: loaded, repo, codec, onListening }: CodeReviewRun): Promise<number> {
  const [{ runReview }, { codeReviewRoutes }] = await Promise.all([import('../instance.ts'), import('./routes.ts')]);
  // Images may be served from the reviewed work tree.
  const config = { ...loaded, projectDir: repo.workdir };
  const log = createLogger(config.logLevel);
  log.info({ repo: repo.workdir, diffType: config.diffType }, 'code review of a git work tree');
  if (config.hubUrl !== null) {
    const { runHubReview } = await import('../../hub/client.ts');
    const submission = { ...(await codeSubmission(repo, config.diffType)), origin: config.origin };
    const hubConfig = { ...config, hubUrl: config.hubUrl };
    return await runHubReview({ config: hubConfig, io: ctx, log, title: 'Code review', submission, codec });
  }
  return await runReview({
    config,
    io: ctx,
    log,
    title: 'Code review',
    kind: 'code',
    routes: codeReviewRoutes({ repo, diffType: config.diffType, config, log }),
    codec,
    onListening,
    about: () => codeAbout(repo),
  });
}

/** `gatehouse code-review`: one code review of a git work tree, answered with feedback in the browser. */
export async function runCodeReview(ctx: CommandContext, onListening?: (url: string) => void): Promise<number> {
  const flags = ['port', 'origin', 'timeout', 'decision-file', 'repo', 'diff-type', 'hub', 'session'] as const;
  const args = parseReviewArgs(ctx.argv, flags, 0);
  if (args.help) {
    ctx.stderr.write(USAGE);
    return 0;
  }
  const loaded = loadReviewConfig({ args: args.configArgs, env: ctx.env, projectDir: ctx.cwd });
  // A missing or broken repository stops here, before anything listens. The engine runs on a thread of
  // its own, started first: it loads the engine while this thread loads the server.
  const [repo] = await Promise.all([
    ThreadedRepository.open(loaded.repo, { home: loaded.home }),
    import('../instance.ts'),
    import('./routes.ts'),
  ]);
  try {
    await repo.context();
    return await reviewCode({ ctx, config: loaded, repo, codec: codeDecisionCodec, onListening });
  } finally {
    await repo.close();
  }
}
