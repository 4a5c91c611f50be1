import path from 'node:path';
import { loadReviewConfig, type ReviewConfig } from '../../config/review.ts';
import { createLogger } from '../../log.ts';
import { parseReviewArgs } from '../args.ts';
import type { DecisionCodec } from '../decision.ts';
import type { ReviewAbout } from '../instance.ts';
import type { ReviewContext } from '../sink.ts';
import { DIFF_TYPES, type DiffType } from '../../git/diff-type.ts';
import { ThreadedRepository } from '../../git/thread.ts';
import type { SubmittedDiff } from '../../hub/contract.ts';
import { gitContextOf } from '../contract.ts';
import type { CodePayload } from './kind.ts';
import type { CodeDecision } from './routes.ts';

const USAGE = `Usage: gatehouse code-review [--repo DIR] [--diff-type uncommitted|staged|last-commit|branch]
                            [--origin AGENT] [--timeout 30m] [--decision-file PATH] [--port N]
                            [--hub URL] [--session KEY]
Serves a review of the git diff of DIR (default: the current directory); with --hub
(or GATEHOUSE_HUB_URL) computes the diffs here and submits them to that review hub.
Prints {"feedback","annotations","agentSwitch"} as one JSON line on stdout and exits 0;
on --timeout it prints {"decision":"timeout",...} and exits 3; 1 on error.
`;

/**
 * What a hub is sent of a work tree: every diff type, computed here by our
 * engine (the hub has no repository), so the reviewer can still switch.
 */
async function codePayload(repo: ThreadedRepository, diffType: DiffType): Promise<CodePayload> {
  const gitContext = await repo.context();
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
  return { diffType, diffs, gitContext: gitContextOf(gitContext) };
}

/** A code review as the inbox and notifications name it: `<project> (<branch>)`. */
async function codeAbout(repo: ThreadedRepository): Promise<Omit<ReviewAbout, 'kind'>> {
  const project = path.basename(repo.workdir);
  const branch = (await repo.context()).currentBranch;
  return { title: `${project} (${branch})`, project, branch };
}

export interface CodeReviewRun {
  /** The process and where the decision goes (its DecisionSink). */
  ctx: ReviewContext;
  config: ReviewConfig;
  /** The open work tree (the caller closes it). */
  repo: ThreadedRepository;
  codec: DecisionCodec<CodeDecision>;
  onListening?: (url: string) => void;
}

/**
 * One code review of an open work tree until its decision, through the
 * context's DecisionSink: served here, or submitted to a hub with every diff
 * type computed here (shared by `code-review` and the code gate of
 * `hook <agent> --gate code`).
 */
export async function reviewCode({ ctx, config: loaded, repo, codec, onListening }: CodeReviewRun): Promise<number> {
  const [{ sinkFor }, { codeReviewRoutes }, { code }] = await Promise.all([
    import('../sink.ts'),
    import('./routes.ts'),
    import('./kind.ts'),
  ]);
  // Images may be served from the reviewed work tree.
  const config = { ...loaded, projectDir: repo.workdir };
  const log = createLogger(config.logLevel);
  log.info({ repo: repo.workdir, diffType: config.diffType }, 'code review of a git work tree');
  const sink = await sinkFor(ctx, config, log);
  return await sink.decide({
    kind: code,
    routes: codeReviewRoutes({ repo, diffType: config.diffType, config, log }),
    payload: () => codePayload(repo, config.diffType),
    about: () => codeAbout(repo),
    codec,
    onListening,
  });
}

/** `gatehouse code-review`: one code review of a git work tree, answered with feedback in the browser. */
export async function runCodeReview(ctx: ReviewContext, onListening?: (url: string) => void): Promise<number> {
  const flags = ['port', 'origin', 'timeout', 'decision-file', 'repo', 'diff-type', 'hub', 'session'] as const;
  const args = parseReviewArgs(ctx.argv, flags, 0);
  if (args.help) {
    ctx.stderr.write(USAGE);
    return 0;
  }
  const loaded = loadReviewConfig({ args: args.configArgs, env: ctx.env, projectDir: ctx.cwd });
  // A missing or broken repository stops here, before anything listens. The engine runs on a thread of
  // its own, started first: it loads the engine while this thread loads the server.
  const [repo, { code }] = await Promise.all([
    ThreadedRepository.open(loaded.repo, { home: loaded.home }),
    import('./kind.ts'),
    import('../sink.ts'),
    import('./routes.ts'),
  ]);
  try {
    await repo.context();
    return await reviewCode({ ctx, config: loaded, repo, codec: code.codec, onListening });
  } finally {
    await repo.close();
  }
}
