import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { NotifyTarget } from '../config/notify.ts';
import { REVIEW_KINDS } from '../review/kinds.ts';
import type { NotifyCounts, ReviewSummary } from './contract.ts';

export interface ReviewEvent {
  event: 'review.created' | 'review.decided';
  review: ReviewSummary;
}

const ATTEMPT_TIMEOUT_MS = 10_000;

/** Control and bidirectional-override characters: a title must not start a new line or turn text around. */
const LINE_BREAKERS = /[\p{Cc}\u2028\u2029\u202a-\u202e\u2066-\u2069]+/gu;

/** Plain text on one line (ntfy's body, which it shows as it is: no Markdown header is sent). */
const plain = (text: string) => text.replace(LINE_BREAKERS, ' ');

/**
 * Slack mrkdwn: `&`, `<` and `>` escaped (so no `<url|text>` link, no
 * `<!channel>`), and an `@` followed by a zero-width space (so Slack-compatible
 * servers that read `@channel` or `@name` in text mention nobody).
 */
const slackText = (text: string) =>
  plain(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/@/g, '@\u200b');

/** One line about the event; every text a submitter chose goes through `text`, the format's escaping. */
function sentence({ event, review }: ReviewEvent, text: (value: string) => string): string {
  const version = review.version > 1 ? ` (version ${review.version})` : '';
  const what = `${REVIEW_KINDS[review.kind].label} "${text(review.title)}"${version}`;
  const where = [review.project, review.branch].filter(Boolean).map(text).join(' @ ');
  const by = review.submitter ? ` from ${text(review.submitter)}` : '';
  const head = event === 'review.created' ? `${what}${by} is waiting for a review` : `${what}${by}: ${review.outcome}`;
  return `${head}${where ? ` [${where}]` : ''}: ${text(review.url)}`;
}

/** The request each kind of target gets, each escaped for its own format. */
function request(
  format: NotifyTarget['format'],
  event: ReviewEvent,
): { headers: Record<string, string>; body: string } {
  switch (format) {
    case 'json':
      return { headers: { 'content-type': 'application/json' }, body: JSON.stringify(event) };
    case 'slack':
      return {
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ text: sentence(event, slackText) }),
      };
    case 'ntfy':
      return {
        // Headers carry fixed text and the hub-built URL only (ASCII: URL.href is punycoded and percent-encoded).
        headers: {
          'content-type': 'text/plain; charset=utf-8',
          title: event.event === 'review.created' ? 'Review waiting' : 'Review decided',
          click: event.review.url,
        },
        body: sentence(event, plain),
      };
  }
}

/**
 * Posts review events to the configured webhooks and ntfy topics. Each
 * delivery runs on its own, after the review's answer: a slow or dead
 * receiver is retried with backoff and never holds a review up. Failures are
 * logged (by the target's origin only: webhook URLs carry secrets) and counted.
 */
export class Notifier {
  readonly counts: NotifyCounts = { sent: 0, retried: 0, failed: 0 };
  readonly #targets: readonly NotifyTarget[];
  readonly #attempts: number;
  readonly #retryBaseMs: number;
  readonly #log: Logger;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #stop = new AbortController();

  constructor(options: { targets: readonly NotifyTarget[]; attempts: number; retryBaseMs: number; log: Logger }) {
    this.#targets = options.targets;
    this.#attempts = options.attempts;
    this.#retryBaseMs = options.retryBaseMs;
    this.#log = options.log;
  }

  notify(event: ReviewEvent): void {
    for (const target of this.#targets) {
      const delivery = this.#deliver(target, event).finally(() => this.#inFlight.delete(delivery));
      this.#inFlight.add(delivery);
    }
  }

  async #deliver(target: NotifyTarget, event: ReviewEvent): Promise<void> {
    const { headers, body } = request(target.format, event);
    const where = { target: target.url.origin, format: target.format, event: event.event, review: event.review.id };
    let problem = '';
    for (let attempt = 1; attempt <= this.#attempts; attempt++) {
      if (attempt > 1) {
        this.counts.retried++;
        try {
          await sleep(this.#retryBaseMs * 2 ** (attempt - 2), undefined, { signal: this.#stop.signal });
        } catch {
          break; // the hub is shutting down
        }
      }
      try {
        const signal = AbortSignal.any([AbortSignal.timeout(ATTEMPT_TIMEOUT_MS), this.#stop.signal]);
        const response = await fetch(target.url, { method: 'POST', headers, body, signal });
        await response.body?.cancel();
        if (response.ok) {
          this.counts.sent++;
          return;
        }
        problem = `HTTP ${response.status}`;
      } catch (error) {
        const { cause, message } = error as Error;
        problem = cause instanceof Error ? cause.message : message;
      }
      this.#log.warn({ ...where, attempt, problem }, 'notification not delivered');
    }
    this.counts.failed++;
    this.#log.error({ ...where, problem }, 'notification given up');
  }

  /** Stops retrying; deliveries under way end as failures. */
  async close(): Promise<void> {
    this.#stop.abort();
    await Promise.allSettled([...this.#inFlight]);
  }
}
