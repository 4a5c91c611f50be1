import type { Logger } from 'pino';
import type { ReviewConfig } from '../config/review.ts';
import type { Router } from '../http/router.ts';
import type { DecisionCodec, DecisionGate } from './decision.ts';
import type { FieldReader } from './validate.ts';

/** What every kind's decision carries: the reviewer's words, if any (a later version shows them). */
export interface Decision {
  feedback: string | null;
}

export interface KindRouteOptions {
  config: ReviewConfig;
  log: Logger;
}

/**
 * One kind of review, as typed data: what the core (the review server, the
 * hub, notifications) needs to know of it. A new kind is a folder with its
 * record and a line in kinds.ts; nothing else names a kind.
 *
 * `P` is what the review shows (a hub stores it as submitted), `D` its decision.
 */
export interface ReviewKind<K extends string, P, D extends Decision> {
  readonly name: K;
  /** Shown in the URL line, e.g. `Plan review`. */
  readonly title: string;
  /** What the inbox and notifications call one (`Plan`); a submission's title when it names none. */
  readonly label: string;
  /** The kind's fields of a hub submission, each error naming its field. */
  readPayload(body: FieldReader): P;
  /** The branch the inbox shows when a submission names none. */
  branch(payload: P): string;
  /** The kind's own routes over a payload; handlers end the review through `gate.decide(...)`. */
  routes(payload: P, options: KindRouteOptions): (gate: DecisionGate<D>) => Router;
  /** Its decision as a hub answers it, checked field by field. */
  readDecision(body: FieldReader): D;
  /** Its decision as the command prints it, and the decision a timeout records. */
  readonly codec: DecisionCodec<D>;
  /** The inbox's word for a decision (see ReviewSummary.outcome). */
  outcome(decision: D): string;
  /** The text a later version of the review is compared with (a plan's), or null. */
  text(payload: P): string | null;
}
