import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, rename, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Router } from '../http/router.ts';
import type { Logger } from 'pino';
import { SIGNAL_EXIT_CODES, type CommandContext } from '../command.ts';
import { openUrl, servedHosts, type ReviewConfig } from '../config/review.ts';
import { close, createServer, listen } from '../http/server.ts';
import type { ReviewSummary } from '../hub/contract.ts';
import { Notifier } from '../hub/notify.ts';
import { createReviewApp } from './app.ts';
import { DecisionGate, type DecisionCodec } from './decision.ts';
import { createUploadDir } from './images.ts';
import { decisionOutcome, ReviewSpans, type ReviewRef } from './spans.ts';
import { writeLine } from '../stdio.ts';

/** How long a review's last spans may take to be exported before its process exits. */
const REVIEW_FLUSH_MS = 1_000;

/** The longest delay setTimeout honours; longer ones fire at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

export interface ReviewOptions<D> {
  config: ReviewConfig;
  /** stdout (the decision line), stderr (the URL line) and shutdown (SIGINT/SIGTERM). */
  io: Pick<CommandContext, 'stdout' | 'stderr' | 'shutdown'>;
  log: Logger;
  /** Shown in the URL line, e.g. `Plan review`. */
  title: string;
  kind: ReviewSummary['kind'];
  /** The kind's routes; handlers end the review through `gate.decide(...)`. */
  routes: (gate: DecisionGate<D>) => Router;
  codec: DecisionCodec<D>;
  /** The single-page document; the built web UI by default. */
  document?: () => string;
  /** Called with the review URL once listening (tests use it to find a random port). */
  onListening?: (url: string) => void;
  /** What a notification says of the review; asked only when notify targets are configured. */
  about: () => Promise<ReviewAbout>;
}

export type ReviewAbout = Pick<ReviewSummary, 'kind' | 'title' | 'project' | 'branch'>;

/**
 * Tells the notify targets (the hub's, see src/config/notify.ts) that a
 * review waits at `url`, as the hub does for its reviews; null without targets.
 * The caller closes the notifier when the review ends: a reviewer who already
 * decided needs no more retries.
 */
function announce(
  { config, log, about }: Pick<ReviewOptions<unknown>, 'config' | 'log' | 'about'>,
  url: string,
  review: ReviewRef,
) {
  if (config.notify.targets.length === 0) return null;
  const notifier = new Notifier({ ...config.notify, log });
  const fixed = {
    id: review.id,
    url,
    origin: config.origin,
    session: config.session,
    // A local review has no submitter token: nobody to name.
    submitter: '',
    version: 1,
    createdAt: new Date(review.createdAt).toISOString(),
    decidedAt: null,
    outcome: null,
  };
  void about().then(
    (what) => notifier.notify({ event: 'review.created', review: { ...fixed, ...what } }),
    (error: unknown) => log.warn({ err: error }, 'no notification: the review could not be described'),
  );
  return notifier;
}

/** Writes `content` to `file` through a temporary sibling and a rename, so readers never see half a file. */
export async function writeFileAtomic(file: string, content: string): Promise<void> {
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    await writeFile(temp, content, { flag: 'wx' });
    await rename(temp, file);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
}

/**
 * Local mode opens the review in the reviewer's browser: `BROWSER` (a
 * command; `%s` stands for the URL, else it is appended), else xdg-open/open.
 * A browser that fails to start is only a log line: the URL is on stderr.
 */
export function openBrowser(url: string, browser: string, log: Logger): void {
  const words = browser.trim() ? browser.trim().split(/\s+/) : [process.platform === 'darwin' ? 'open' : 'xdg-open'];
  const args = words.slice(1).some((w) => w.includes('%s'))
    ? words.slice(1).map((w) => w.replaceAll('%s', url))
    : [...words.slice(1), url];
  const command = words[0] as string;
  try {
    const child = spawn(command, args, { stdio: 'ignore', detached: true });
    child.on('error', (error) =>
      log.warn({ err: error, command }, 'could not open the browser; open the review URL yourself'),
    );
    child.unref();
  } catch (error) {
    log.warn({ err: error, command }, 'could not open the browser; open the review URL yourself');
  }
}

interface DeliveryOptions<D> {
  config: ReviewConfig;
  io: Pick<CommandContext, 'stdout'>;
  log: Logger;
  codec: DecisionCodec<D>;
}

/**
 * The end of every review, served here or on a hub: the decision as one JSON
 * line on stdout and, atomically, in the --decision-file; resolves with the exit code.
 */
export async function deliverDecision<D>(decision: D, { config, io, log, codec }: DeliveryOptions<D>): Promise<number> {
  const line = JSON.stringify(codec.encode(decision));
  await codec.record?.(decision);
  await writeLine(io.stdout, line);
  if (config.decisionFile) await writeFileAtomic(config.decisionFile, `${line}\n`);
  log.info({ exitCode: codec.exitCode(decision) }, 'review decided');
  return codec.exitCode(decision);
}

/**
 * The lifecycle both review kinds share: bind (5 retries 500 ms apart, then
 * `Port <PORT> in use after 5 retries`), print the URL on stderr, open the
 * browser in local mode, then wait for the decision, the timeout or a signal.
 * The decision becomes one JSON line on stdout and, atomically, the
 * --decision-file; then the listener closes and the exit code is resolved.
 * A signal ends with 130/143 and nothing written.
 */
export async function runReview<D>(options: ReviewOptions<D>): Promise<number> {
  const { config, io, log, codec } = options;
  if (io.shutdown.aborted) return SIGNAL_EXIT_CODES[String(io.shutdown.reason)] ?? 1;
  // Fail before serving if the decision file can never be written.
  if (config.decisionFile) await mkdir(path.dirname(config.decisionFile), { recursive: true });

  const uploadDir = await createUploadDir(config.uploadDir);
  const gate = new DecisionGate<D>();
  const server = createServer();
  const address = await listen(server, { port: config.port, host: config.host });
  // Only now is the port known, which a Codespace's forwarded host names. Attached
  // before any I/O callback can run, so no request arrives without a handler.
  const app = createReviewApp({
    config: { ...config, uploadDir },
    log,
    routes: options.routes(gate),
    document: options.document,
    allowedHosts: servedHosts(config, address.port),
  });
  const handle = app.callback();
  // A local review has no id of its own: a fresh one lets spans and notifications tell reviews apart.
  const review = {
    id: randomBytes(9).toString('base64url'),
    kind: options.kind,
    origin: config.origin,
    createdAt: Date.now(),
  };
  const spans = ReviewSpans.start(config.telemetry, log);
  server.on('request', (req, res) => {
    // Its page: the document at the root (the UI's own requests are below /api and /assets).
    if (req.method === 'GET' && /^\/(?:\?|$)/.test(req.url ?? '')) spans.served(review);
    void handle(req, res);
  });
  const url = openUrl(config, address.port);
  io.stderr.write(`${options.title}: ${url}\n`);
  log.info({ url, host: config.host, port: address.port, remote: config.remote, uploadDir }, 'review server listening');
  spans.submitted(review);
  if (!config.remote) openBrowser(url, config.browser, log);
  options.onListening?.(url);
  const notifier = announce(options, url, review);

  // setTimeout fires at once past 2^31-1 ms; ~24.8 days is "forever" for a review anyway.
  const timer =
    config.timeoutMs === null
      ? undefined
      : setTimeout(() => gate.close(codec.timeout()), Math.min(config.timeoutMs, MAX_TIMER_MS));
  const signalled = new Promise<null>((resolve) =>
    io.shutdown.addEventListener('abort', () => resolve(null), { once: true }),
  );
  try {
    const outcome = await Promise.race([gate.decided.then((decision) => ({ decision })), signalled]);
    if (outcome === null) {
      log.info({ signal: String(io.shutdown.reason) }, 'review ended by a signal; no decision written');
      return SIGNAL_EXIT_CODES[String(io.shutdown.reason)] ?? 1;
    }
    spans.decided(review, decisionOutcome(outcome.decision));
    return await deliverDecision(outcome.decision, { config, io, log, codec });
  } finally {
    clearTimeout(timer);
    // The agent waits for this process to exit: a collector that hangs holds it up for REVIEW_FLUSH_MS at most.
    await Promise.all([close(server), notifier?.close(), spans.shutdown(REVIEW_FLUSH_MS)]);
  }
}
