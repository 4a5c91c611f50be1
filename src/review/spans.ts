/**
 * A review's life as OpenTelemetry spans, for the review server and the hub
 * alike: `review submitted`, `review served` (its page first sent to a
 * reviewer by this process) and `review decided`, one trace per review (the
 * later ones are children of its submission while this process remembers
 * it). `review decided` starts when the review was submitted: its duration
 * is the wait. What they carry names the review (id, kind, agent, version,
 * submitter's name, outcome); never its content.
 */
import { context, SpanKind, trace, type Attributes, type Context } from '@opentelemetry/api';
import type { Logger } from '../log.ts';
import type { TelemetryConfig } from '../config/telemetry.ts';
import { startTracing, type Tracing } from '../telemetry/tracing.ts';

/** What the spans say of a review. */
export interface ReviewRef {
  id: string;
  kind: string;
  /** The agent that asked for it. */
  origin: string;
  /** When it was submitted (ms since the epoch). */
  createdAt: number;
  /** The hub's: its version within a session, and the submitter's name. */
  version?: number;
  submitter?: string;
}

/** The outcome word of a decision (as ReviewSummary.outcome): approved, denied, timeout, or feedback. */
export function decisionOutcome(decision: unknown): string {
  return (decision as { decision?: string } | null)?.decision ?? 'feedback';
}

function attributesOf(review: ReviewRef): Attributes {
  return {
    'gatehouse.review.id': review.id,
    'gatehouse.review.kind': review.kind,
    'gatehouse.review.origin': review.origin,
    ...(review.version !== undefined && { 'gatehouse.review.version': review.version }),
    ...(review.submitter && { 'gatehouse.review.submitter': review.submitter }),
  };
}

export class ReviewSpans {
  readonly #tracing: Tracing | undefined;
  /** The submission span's context of each review not decided yet, as their later spans' parent. */
  readonly #submitted = new Map<string, Context>();
  readonly #served = new Set<string>();

  constructor(tracing: Tracing | undefined) {
    this.#tracing = tracing;
  }

  /** Tracing as `config` says (none without an endpoint); lost spans are logged once per reason. */
  static start(config: TelemetryConfig, log: Logger): ReviewSpans {
    const warned = new Set<string>();
    const tracing = startTracing(config, (count, reason) => {
      if (warned.has(reason)) return;
      warned.add(reason);
      log.warn({ count, reason }, 'trace spans were dropped: the collector is unreachable or slow');
    });
    return new ReviewSpans(tracing);
  }

  submitted(review: ReviewRef): void {
    const tracer = this.#tracing?.tracer;
    if (!tracer) return;
    const span = tracer.startSpan(
      'review submitted',
      { kind: SpanKind.SERVER, attributes: attributesOf(review), startTime: review.createdAt },
      context.active(),
    );
    this.#submitted.set(review.id, trace.setSpan(context.active(), span));
    span.end();
  }

  /** The first time this process serves the review's page; later ones are not spans. */
  served(review: ReviewRef): void {
    if (!this.#tracing || this.#served.has(review.id)) return;
    this.#served.add(review.id);
    this.#span('review served', review, Date.now()).end();
  }

  decided(review: ReviewRef, outcome: string): void {
    if (!this.#tracing) return;
    const span = this.#span('review decided', review, review.createdAt);
    span.setAttribute('gatehouse.review.outcome', outcome);
    span.end();
    this.#submitted.delete(review.id);
    this.#served.delete(review.id);
  }

  /** Exports what is queued (for up to `waitMs`), then stops. */
  shutdown(waitMs?: number): Promise<void> {
    return this.#tracing?.shutdown(waitMs) ?? Promise.resolve();
  }

  #span(name: string, review: ReviewRef, startTime: number) {
    const tracer = (this.#tracing as Tracing).tracer;
    const parent = this.#submitted.get(review.id) ?? context.active();
    return tracer.startSpan(name, { kind: SpanKind.INTERNAL, attributes: attributesOf(review), startTime }, parent);
  }
}
