import { once } from 'node:events';
import type { CommandContext } from '../command.ts';
import { loadHubConfig } from '../config/hub.ts';
import { openUrl } from '../config/review.ts';
import { close, createServer, listen } from '../http/server.ts';
import { createLogger } from '../log.ts';
import { parseReviewArgs } from '../review/args.ts';
import { ReviewSpans } from '../review/spans.ts';
import { Access, TokenSet } from './access.ts';
import { createHubApp } from './app.ts';
import { Hub } from './hub.ts';
import { Notifier } from './notify.ts';
import { HubStore } from './store.ts';

const USAGE = `Usage: gatehouse hub [--port N]
The review hub: one long-running server where reviewers decide the plans and code reviews
that \`gatehouse plan|code-review|hook claude-code --hub URL\` submit. See docs/hub.md.
`;

/** Headers that carry credentials never reach a log line. */
const REDACTED = ['req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]'];

/** `gatehouse hub [--port N]`: serves until SIGINT/SIGTERM, then closes its listener and its database and exits 0. */
export async function runHub(ctx: CommandContext): Promise<number> {
  const args = parseReviewArgs(ctx.argv, ['port'], 0);
  if (args.help) {
    ctx.stderr.write(USAGE);
    return 0;
  }
  const config = loadHubConfig({ args: args.configArgs, env: ctx.env, cwd: ctx.cwd });
  const log = createLogger(config.review.logLevel, { redact: REDACTED });
  const store = new HubStore(config.dbPath, (review, problem) =>
    log.error({ review, problem }, 'review set aside: its stored row cannot be read'),
  );
  const notifier = new Notifier({ ...config.review.notify, log });
  const spans = ReviewSpans.start(config.review.telemetry, log);
  const hub = new Hub({ config, store, log, notify: (event) => notifier.notify(event), spans });
  const access = new Access({
    submitters: new TokenSet(config.submitters),
    reviewers: new TokenSet(config.reviewerTokens),
    store,
    sessionTtlMs: config.sessionTtlMs,
    secureCookies: config.publicUrl?.protocol === 'https:',
  });
  const app = createHubApp({ config, hub, store, access, log, notifyCounts: notifier.counts });
  const handle = app.callback();
  const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => void handle(req, res));
  try {
    hub.start();
    const address = await listen(server, { port: config.port, host: config.host });
    const url = openUrl(config.review, address.port);
    ctx.stderr.write(`Review hub: ${url}\n`);
    const state = {
      db: config.dbPath,
      pending: store.pending().length,
      notifyTargets: config.review.notify.targets.length,
    };
    log.info({ url, host: config.host, port: address.port, ...state }, 'hub listening');
    if (!ctx.shutdown.aborted) await once(ctx.shutdown, 'abort');
    log.info({ signal: String(ctx.shutdown.reason) }, 'hub shutting down');
    return 0;
  } finally {
    hub.close();
    await close(server);
    await notifier.close();
    await spans.shutdown();
    store.close();
  }
}
