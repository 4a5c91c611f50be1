import path from 'node:path';
import { loadReviewConfig } from '../../config/review.ts';
import { createLogger } from '../../log.ts';
import { parseReviewArgs } from '../args.ts';
import { branchOf } from '../branch.ts';
import { sinkFor, type ReviewContext } from '../sink.ts';
import { readTextFile } from '../text-file.ts';
import { annotate } from './kind.ts';
import { annotateRoutes } from './routes.ts';

const USAGE = `Usage: gatehouse annotate FILE [--gate] [--timeout 30m] [--decision-file PATH] [--port N]
                          [--hub URL] [--session KEY]
Serves FILE (any Markdown file: a spec, a README, a design note) in the plan review's
annotation UI; with --hub (or GATEHOUSE_HUB_URL) submits it to that review hub and waits there.
Without --gate the reviewer sends their annotations: {"decision":"feedback","feedback":…}, exit 0.
With --gate they approve or deny: exit 0 approved, 2 denied. 3 timeout, 1 error.
`;

/** The file's text; a missing, unreadable or empty file is an error that names it. */
async function readDocument(file: string): Promise<string> {
  const text = await readTextFile(file, file);
  if (text.trim() === '') throw new Error(`${file} is empty: there is nothing to annotate`);
  return text;
}

/** `gatehouse annotate FILE [--gate]`: one annotation review of a Markdown file. */
export async function runAnnotate(ctx: ReviewContext): Promise<number> {
  // --gate takes no value, unlike every flag parseReviewArgs reads.
  const gate = ctx.argv.includes('--gate');
  const argv = ctx.argv.filter((a) => a !== '--gate');
  const args = parseReviewArgs(argv, ['port', 'timeout', 'decision-file', 'hub', 'session'], 1);
  if (args.help) {
    ctx.stderr.write(USAGE);
    return 0;
  }
  const [name] = args.positionals;
  if (name === undefined) throw new Error('no file given: gatehouse annotate FILE [--gate]');
  const loaded = loadReviewConfig({ args: args.configArgs, env: ctx.env, projectDir: ctx.cwd });
  const file = path.resolve(ctx.cwd, name);
  // The document's relative image links are relative to its own folder.
  const config = { ...loaded, projectDir: path.dirname(file) };
  const payload = { document: await readDocument(file), file: name, gate };
  const log = createLogger(config.logLevel);
  const sink = await sinkFor(ctx, config, log);
  return sink.decide({
    kind: annotate,
    routes: annotateRoutes(payload, { config, log }),
    payload: () => Promise.resolve(payload),
    about: async () => ({
      title: path.basename(file),
      project: path.basename(loaded.projectDir),
      branch: await branchOf(path.dirname(file), config.home),
    }),
    codec: annotate.codec,
  });
}
