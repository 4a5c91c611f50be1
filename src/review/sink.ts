import type { Logger } from 'pino';
import type { CommandContext } from '../command.ts';
import type { ReviewConfig } from '../config/review.ts';
import type { Router } from '../http/router.ts';
import type { DecisionCodec, DecisionGate } from './decision.ts';
import { runReview, type ReviewAbout } from './instance.ts';
import type { Decision, ReviewKind } from './kind.ts';
import type { KindName } from './kinds.ts';

/** A review a command wants decided: its kind, how it is served here, and what it submits elsewhere. */
export interface ReviewRequest<P extends object, D extends Decision> {
  kind: ReviewKind<KindName, P, D>;
  /** The routes of the review when it is served by this process (a code review reads the live work tree). */
  routes: (gate: DecisionGate<D>) => Router;
  /** What is submitted to a hub: computed only when it is. */
  payload: () => Promise<P>;
  /** How the inbox and notifications name it (besides its kind). */
  about: () => Promise<Omit<ReviewAbout, 'kind'>>;
  /** How the decision is written (a hook answers in its agent's format). */
  codec: DecisionCodec<D>;
  /** Called with the review URL once a local review listens (tests use it to find a random port). */
  onListening?: (url: string) => void;
}

/**
 * Where a review is decided and where its decision goes: served here with the
 * decision on stdout and in --decision-file, or submitted to a hub and waited
 * for. Resolves with the process exit code.
 */
export interface DecisionSink {
  decide<P extends object, D extends Decision>(request: ReviewRequest<P, D>): Promise<number>;
}

export type ReviewIo = Pick<CommandContext, 'stdout' | 'stderr' | 'shutdown'>;

/** Picks the sink for a review's configuration; the CLI injects one that knows the hub. */
export type SinkFactory = (config: ReviewConfig, io: ReviewIo, log: Logger) => Promise<DecisionSink>;

/** What a review command gets: the process, and where its decisions go. */
export interface ReviewContext extends CommandContext {
  /** Absent (tests, embedding): every review is served by this process. */
  decisionSink?: SinkFactory;
}

/** A review served by this process: the decision is one line on stdout and the --decision-file. */
export function localSink(config: ReviewConfig, io: ReviewIo, log: Logger): DecisionSink {
  return {
    decide: ({ kind, routes, codec, about, onListening }) =>
      runReview({
        config,
        io,
        log,
        title: kind.title,
        kind: kind.name,
        routes,
        codec,
        about: async () => ({ ...(await about()), kind: kind.name }),
        onListening,
      }),
  };
}

/** The sink the context names for `config`; without one, this process (a hub URL then is an error, never ignored). */
export function sinkFor(ctx: ReviewContext, config: ReviewConfig, log: Logger): Promise<DecisionSink> {
  if (ctx.decisionSink) return ctx.decisionSink(config, ctx, log);
  if (config.hubUrl !== null) throw new Error('this command was given no way to reach a hub (no decision sink)');
  return Promise.resolve(localSink(config, ctx, log));
}
