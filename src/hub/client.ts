import { randomUUID } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { SIGNAL_EXIT_CODES } from '../command.ts';
import type { ReviewConfig } from '../config/review.ts';
import { isObject } from '../json.ts';
import type { DecisionCodec } from '../review/decision.ts';
import { deliverDecision } from '../review/instance.ts';
import type { DecisionSink, ReviewIo } from '../review/sink.ts';
import { readBody, type FieldReader } from '../review/validate.ts';
import type { ReviewKind, SubmissionResponse } from './contract.ts';

/** How long one decision request waits on the hub before asking again. */
const POLL_WAIT_SECONDS = 30;
/** Reconnect delays: doubling from the first to the last, with jitter. */
const BACKOFF_FIRST_MS = 250;
const BACKOFF_MAX_MS = 5_000;
/**
 * With --timeout, the hub decides `timeout` itself at the deadline; a client
 * that cannot reach the hub for this long past it gives up with an error
 * (never a decision of its own, which could contradict the hub's).
 */
export const GIVE_UP_AFTER_DEADLINE_MS = 60_000;

/** The hub refused a request: a 4xx, with its `{"error"}` message. Not retried. */
export class HubRefusal extends Error {
  override readonly name = 'HubRefusal';
}

export interface HubReviewOptions<D> {
  config: ReviewConfig & { hubUrl: URL };
  io: ReviewIo;
  log: Logger;
  /** Shown in the URL line, e.g. `Plan review`. */
  title: string;
  /** The body of `POST /api/reviews`, without `session` and `timeoutMs` (added here from the configuration). */
  submission: { kind: ReviewKind; [field: string]: unknown };
  codec: DecisionCodec<D>;
  /** The kind's decision as the hub answers it, checked (its record's `readDecision`). */
  readDecision: (body: FieldReader) => D;
}

/** `POST /api/reviews`' answer, checked. */
function readSubmissionResponse(body: FieldReader): SubmissionResponse {
  return {
    id: body.requiredString('id'),
    url: body.requiredString('url'),
    version: body.requiredNumber('version', { integer: true, min: 1 }),
  };
}

/** A hub's JSON answer read into the contract's type; one that does not fit is an error, never a guess. */
async function readAnswer<T>(response: Response, read: (body: FieldReader) => T): Promise<T> {
  try {
    return read(readBody(await response.json()));
  } catch (error) {
    const what = `${response.status} from ${new URL(response.url).pathname}`;
    throw new Error(`the hub's answer (${what}) is not what its API says: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

/**
 * A review decided on a hub: submit it (retried with one idempotency key,
 * so a retry never makes a second review), print its URL on stderr,
 * long-poll its decision through network drops and hub restarts, then end
 * like a local review (stdout line, --decision-file, exit code). The hub is
 * the only one to decide, timeouts included, so a waiter can never print an
 * answer other than the hub's.
 */
export async function runHubReview<D>(options: HubReviewOptions<D>): Promise<number> {
  const { config, io, log, title, submission, codec, readDecision } = options;
  const early = signalExitCode(io.shutdown);
  if (early !== undefined) return early;
  if (config.decisionFile) await mkdir(path.dirname(config.decisionFile), { recursive: true });
  const base = config.hubUrl.href.endsWith('/') ? config.hubUrl.href : `${config.hubUrl.href}/`;
  const giveUpAt = config.timeoutMs === null ? null : Date.now() + config.timeoutMs + GIVE_UP_AFTER_DEADLINE_MS;
  const headers: Record<string, string> = {
    accept: 'application/json',
    ...(config.hubToken && { authorization: `Bearer ${config.hubToken}` }),
  };
  const connectTimeoutMs = config.hubConnectTimeoutMs;
  const hub = new HubConnection({ base, connectTimeoutMs, headers, log, shutdown: io.shutdown, giveUpAt });
  // Until the hub acknowledges the review, a wrong or unreachable URL must not hold the agent for the review's length.
  const connectBy = Date.now() + connectTimeoutMs;
  let acknowledged = false;

  try {
    const body = {
      ...submission,
      ...(config.session && { session: config.session }),
      ...(config.timeoutMs !== null && { timeoutMs: config.timeoutMs }),
    };
    const created = await hub.request(
      'api/reviews',
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
        body: JSON.stringify(body),
      },
      { connectBy },
    );
    const { id, url } = await readAnswer(created, readSubmissionResponse);
    acknowledged = true;
    io.stderr.write(`${title}: ${url}\n`);
    log.info({ review: id, url }, 'review submitted to the hub');
    for (;;) {
      const poll = `api/reviews/${encodeURIComponent(id)}/decision?wait=${POLL_WAIT_SECONDS}`;
      const answer = await hub.request(poll, { method: 'GET' }, { timeoutMs: (POLL_WAIT_SECONDS + 15) * 1000 });
      if (answer.status === 200) {
        const decision = await readAnswer(answer, readDecision);
        return await deliverDecision(decision, { config, io, log, codec });
      }
      await answer.body?.cancel();
    }
  } catch (error) {
    // Read again: the signal may have come while this waited.
    const code = signalExitCode(io.shutdown);
    if (code !== undefined) {
      const signal = String(io.shutdown.reason);
      if (acknowledged) log.info({ signal }, 'stopped waiting by a signal; the review stays on the hub');
      else log.info({ signal }, 'stopped by a signal before the hub acknowledged the review: none was submitted');
      return code;
    }
    throw error;
  }
}

/** Reviews submitted to the hub at `config.hubUrl` and decided there. */
export function hubSink(config: ReviewConfig & { hubUrl: URL }, io: ReviewIo, log: Logger): DecisionSink {
  return {
    async decide({ kind, payload, about, codec }) {
      const submission = { kind: kind.name, ...(await about()), ...(await payload()), origin: config.origin };
      const readDecision = (body: FieldReader) => kind.readDecision(body);
      return runHubReview({ config, io, log, title: kind.title, submission, codec, readDecision });
    },
  };
}

/** The exit code for a shutdown signal that has arrived, or undefined while none has. */
function signalExitCode(shutdown: AbortSignal): number | undefined {
  return shutdown.aborted ? (SIGNAL_EXIT_CODES[String(shutdown.reason)] ?? 1) : undefined;
}

interface ConnectionOptions {
  base: string;
  /** For the message when the submission is not acknowledged in time. */
  connectTimeoutMs: number;
  headers: Record<string, string>;
  log: Logger;
  shutdown: AbortSignal;
  giveUpAt: number | null;
}

/** Requests to the hub, retried with backoff while it is unreachable, restarting or overloaded (5xx, 429). */
class HubConnection {
  readonly #options: ConnectionOptions;
  #failures = 0;

  constructor(options: ConnectionOptions) {
    this.#options = options;
  }

  /**
   * `connectBy`: the time by which the hub must have answered (the
   * submission's bound); past it, the error names the URL and its variable.
   */
  async request(
    relative: string,
    init: { method: 'GET' | 'POST'; headers?: Record<string, string>; body?: string },
    { timeoutMs = 30_000, connectBy }: { timeoutMs?: number; connectBy?: number } = {},
  ): Promise<Response> {
    const { base, headers, log, shutdown, giveUpAt } = this.#options;
    const url = new URL(relative, base);
    for (;;) {
      shutdown.throwIfAborted();
      let problem: string;
      const attemptMs = connectBy === undefined ? timeoutMs : Math.max(1, Math.min(timeoutMs, connectBy - Date.now()));
      try {
        const response = await fetch(url, {
          ...init,
          headers: { ...headers, ...init.headers },
          signal: AbortSignal.any([shutdown, AbortSignal.timeout(attemptMs)]),
        });
        if (response.status < 500 && response.status !== 429) {
          if (this.#failures > 0) log.info({ hub: url.origin, attempts: this.#failures }, 'hub reachable again');
          this.#failures = 0;
          if (response.status >= 400) {
            const why = `${response.status} ${await errorMessage(response)}${tokenHint(response.status, headers)}`;
            throw new HubRefusal(`the hub refused ${init.method} ${url.pathname}: ${why}`);
          }
          return response;
        }
        problem = `HTTP ${response.status}`;
        await response.body?.cancel();
      } catch (error) {
        if (error instanceof HubRefusal || shutdown.aborted) throw error;
        const cause = (error as Error).cause;
        problem = cause instanceof Error ? cause.message : (error as Error).message;
      }
      if (connectBy !== undefined && Date.now() >= connectBy) {
        throw new Error(
          `the hub at ${base} (GATEHOUSE_HUB_URL) did not acknowledge the review within ` +
            `${this.#options.connectTimeoutMs / 1000} s (GATEHOUSE_HUB_CONNECT_TIMEOUT); ` +
            `last problem: ${problem}`,
        );
      }
      if (giveUpAt !== null && Date.now() > giveUpAt) {
        throw new Error(`the hub at ${url.origin} did not answer by the review's timeout (last problem: ${problem})`);
      }
      if (this.#failures === 0) log.warn({ hub: url.origin, problem }, 'hub unreachable; retrying with backoff');
      let delay = Math.min(BACKOFF_MAX_MS, BACKOFF_FIRST_MS * 2 ** this.#failures) * (0.5 + Math.random() / 2);
      if (connectBy !== undefined) delay = Math.max(0, Math.min(delay, connectBy - Date.now()));
      this.#failures++;
      await sleep(delay, undefined, { signal: shutdown });
    }
  }
}

/** What to change when the hub refused the token: the variable it comes from. */
function tokenHint(status: number, headers: Record<string, string>): string {
  if (status === 401 && headers['authorization'] === undefined) {
    return ' (set GATEHOUSE_HUB_TOKEN to a submitter token of this hub)';
  }
  if (status === 401) return ' (GATEHOUSE_HUB_TOKEN is not a token this hub knows)';
  if (status === 403) return ' (GATEHOUSE_HUB_TOKEN must be a submitter token)';
  return '';
}

async function errorMessage(response: Response): Promise<string> {
  try {
    const body: unknown = await response.json();
    return isObject(body) && typeof body['error'] === 'string' ? body['error'] : '';
  } catch {
    return '';
  }
}
