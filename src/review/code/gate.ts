/**
 * The code gate: `gatehouse hook <agent> --gate code` on an agent's end-of-turn
 * event. A turn that leaves uncommitted changes (`git diff HEAD`) is put before
 * the reviewer in the code review; an approval lets the agent stop, feedback
 * blocks the stop with the feedback (line comments included) as the reason, so
 * the agent goes on to address it. At most `max-rounds` blocks in a row: then
 * the agent may stop, and the user is told. Each agent's room says how its
 * event is read and answered (a CodeGateHook); everything else is here.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { CodeGateHook, GateOutcome, TurnEnd } from '../../agents/agent.ts';
import { loadReviewConfig, type Origin, type ReviewConfig } from '../../config/review.ts';
import { gitErrors } from '../../git/errors.ts';
import { openRepository } from '../../git/repo.ts';
import { parseReviewArgs } from '../args.ts';
import { CODE_APPROVAL, type Annotation } from '../contract.ts';
import type { DecisionCodec } from '../decision.ts';
import type { ReviewContext } from '../sink.ts';
import { readAll } from '../../stdio.ts';
import type { CodeDecision } from './routes.ts';

/** Whether a code review's answer lets the agent finish: the UI's approval word, or nothing to address at all. */
export function isApproval(decision: CodeDecision): boolean {
  const feedback = (decision.feedback ?? '').trim();
  return decision.annotations.length === 0 && (feedback === '' || feedback === CODE_APPROVAL);
}

function lineRef(a: Annotation): string {
  const lines = a.lineStart === a.lineEnd ? `${a.lineStart}` : `${a.lineStart}-${a.lineEnd}`;
  return `${a.filePath}:${lines}${a.side === 'old' ? ' (removed lines, as they were at HEAD)' : ''}`;
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => `    ${line}`)
    .join('\n');
}

/**
 * The instruction the agent reads when the reviewer sent feedback: the feedback
 * as sent (the UI's already quotes each line comment with its code), then every
 * line comment as an anchor, with its text and suggested code unless the
 * feedback already carries them.
 */
export function feedbackReason(decision: CodeDecision, round: number, maxRounds: number): string {
  const feedback = (decision.feedback ?? '').trim();
  const parts = [
    `A reviewer read your uncommitted changes (code review ${round} of at most ${maxRounds}) and asks for changes before you finish.`,
  ];
  if (feedback !== '') parts.push(feedback);
  if (decision.annotations.length > 0) {
    const untold = (text: string | undefined) =>
      text !== undefined && text.trim() !== '' && !feedback.includes(text.trim());
    const comments = decision.annotations.map((a) => {
      const text = untold(a.text) ? `\n${indent((a.text ?? '').trim())}` : '';
      const code = untold(a.suggestedCode) ? `\n  Suggested code:\n${indent(a.suggestedCode ?? '')}` : '';
      return `- ${lineRef(a)} [${a.type}]${text}${code}`;
    });
    parts.push(`Line comments:\n${comments.join('\n')}`);
  }
  parts.push('Address all of it, then finish your turn.');
  return parts.join('\n\n');
}

/**
 * The rounds of one agent session, kept in the work tree's git directory
 * (`<gitdir>/gatehouse/code-gate/`): it outlives the hook process wherever the
 * hook runs (on the host, in a container with the project mounted), is never
 * part of a diff, and goes with the repository.
 */
export class RoundStore {
  readonly file: string;

  constructor(gitdir: string, agent: string, session: string) {
    const key = createHash('sha256').update(`${agent}\0${session}`).digest('hex').slice(0, 32);
    this.file = path.join(gitdir, 'gatehouse', 'code-gate', `${key}.json`);
  }

  /** The blocks in a row so far (0 when none, or the file is unreadable). */
  async blocks(): Promise<number> {
    try {
      const value = (JSON.parse(await readFile(this.file, 'utf8')) as { blocks?: unknown }).blocks;
      return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : 0;
    } catch {
      return 0;
    }
  }

  async set(blocks: number): Promise<void> {
    if (blocks === 0) {
      await unlink(this.file).catch((error: unknown) => {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      });
      return;
    }
    await mkdir(path.dirname(this.file), { recursive: true });
    const { writeFileAtomic } = await import('../instance.ts');
    await writeFileAtomic(this.file, `${JSON.stringify({ blocks, updatedAt: new Date().toISOString() })}\n`);
  }
}

export const TIMEOUT_MESSAGE =
  'gatehouse: the code review timed out without a decision; the agent stopped with its changes unreviewed.';

export function releaseMessage(maxRounds: number): string {
  return (
    `gatehouse: the code review blocked this turn ${maxRounds} times in a row (--max-rounds ${maxRounds}); ` +
    'the agent stops now, with its last changes unreviewed.'
  );
}

/**
 * The codec of one review of round `round`: the decision becomes the agent's
 * answer, and the blocks in a row it leaves are kept (`keep`) before the answer is written.
 */
export function gateCodec(
  hook: CodeGateHook,
  keep: (blocks: number) => Promise<void>,
  round: number,
  maxRounds: number,
): DecisionCodec<CodeDecision> {
  const outcome = (decision: CodeDecision): GateOutcome => {
    if (decision.decision === 'timeout') return { kind: 'release', message: TIMEOUT_MESSAGE };
    if (isApproval(decision)) return { kind: 'pass' };
    return { kind: 'block', reason: feedbackReason(decision, round, maxRounds) };
  };
  return {
    timeout: () => ({ decision: 'timeout', feedback: null, annotations: [], agentSwitch: null }),
    encode: (decision) => hook.answer(outcome(decision)),
    exitCode: () => 0,
    record: (decision) => keep(outcome(decision).kind === 'block' ? round : 0),
  };
}

const FLAGS = ['port', 'timeout', 'decision-file', 'hub', 'max-rounds'] as const;

export interface CodeGateOptions {
  /** The process and where the review's decision goes (its DecisionSink). */
  ctx: ReviewContext;
  /** The agent, as `gatehouse hook` names it: the review's origin. */
  agent: Origin;
  hook: CodeGateHook;
  /** The command's flags (after `--gate code`). */
  argv: string[];
  onListening?: (url: string) => void;
}

/** Answers the agent at once, as a review's decision is delivered (stdout line, --decision-file). */
async function answerNow(
  ctx: ReviewContext,
  config: ReviewConfig,
  hook: CodeGateHook,
  outcome: GateOutcome,
): Promise<number> {
  if (outcome.kind === 'release') ctx.stderr.write(`${outcome.message}\n`);
  const [{ deliverDecision }, { createLogger }] = await Promise.all([import('../instance.ts'), import('../../log.ts')]);
  const codec: DecisionCodec<GateOutcome> = {
    timeout: () => outcome,
    encode: (o) => hook.answer(o),
    exitCode: () => 0,
  };
  return deliverDecision(outcome, { config, io: ctx, log: createLogger(config.logLevel), codec });
}

/**
 * `gatehouse hook <agent> --gate code`. A malformed event is exit 1 with the
 * reason on stderr (every agent takes it as a non-blocking hook error and stops).
 */
export async function runCodeGate({ ctx, agent, hook, argv, onListening }: CodeGateOptions): Promise<number> {
  const args = parseReviewArgs(argv, FLAGS, 0);
  let turn: TurnEnd;
  try {
    turn = hook.read({ text: await readAll(ctx.stdin), env: ctx.env, cwd: ctx.cwd });
  } catch (error) {
    ctx.stderr.write(`gatehouse hook ${agent} --gate code: ${(error as Error).message}\n`);
    return 1;
  }
  const dir = turn.cwd ?? ctx.cwd;
  const loaded = loadReviewConfig({ args: args.configArgs, env: ctx.env, projectDir: dir });
  const config: ReviewConfig = {
    ...loaded,
    origin: agent,
    diffType: 'uncommitted',
    repo: dir,
    session: turn.session || loaded.session,
  };
  let gitdir: string;
  try {
    gitdir = openRepository(dir, { home: config.home }).gitdir;
  } catch (error) {
    if ((error as Error).message !== gitErrors.notARepository(path.resolve(dir)).message) throw error;
    ctx.stderr.write(`gatehouse: ${dir} is not in a git repository; the code gate has nothing to review\n`);
    return answerNow(ctx, config, hook, { kind: 'pass' });
  }
  const store = new RoundStore(gitdir, agent, turn.session);
  // Rounds that cannot be kept (a read-only .git) are said, not fatal: the reviewer's
  // feedback still reaches the agent; only the bound may count from 1 again.
  const keep = (blocks: number) =>
    store.set(blocks).catch((error: unknown) => {
      ctx.stderr.write(
        `gatehouse: could not keep the code gate's rounds in ${store.file}: ${(error as Error).message}\n`,
      );
    });
  const { ThreadedRepository } = await import('../../git/thread.ts');
  const repo = await ThreadedRepository.open(dir, { home: config.home });
  try {
    if ((await repo.diff('uncommitted')).rawPatch === '') {
      await keep(0);
      return await answerNow(ctx, config, hook, { kind: 'pass' });
    }
    const blocks = turn.continued === false ? 0 : await store.blocks();
    const max = config.codeGateMaxRounds;
    if (blocks >= max) {
      await keep(0);
      return await answerNow(ctx, config, hook, { kind: 'release', message: releaseMessage(max) });
    }
    const { reviewCode } = await import('./command.ts');
    const codec = gateCodec(hook, keep, blocks + 1, max);
    return await reviewCode({ ctx, config, repo, codec, onListening });
  } finally {
    await repo.close();
  }
}
