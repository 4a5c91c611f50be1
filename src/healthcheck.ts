import type { CommandContext } from './command.ts';
import { loadHealthTargets, type HealthTarget } from './config/health.ts';

/** How long one probe may take: under the compose files' and the image's 4 s healthcheck timeout. */
const PROBE_MS = 3_000;
/** Between tries while nothing listens yet. */
const RETRY_MS = 100;

/** Whether `target` answers 2xx before `deadline` (ms since the epoch). */
async function answers(target: HealthTarget, deadline: number): Promise<boolean> {
  try {
    const signal = AbortSignal.timeout(Math.max(1, deadline - Date.now()));
    const response = await fetch(target.url, { headers: target.headers, signal });
    await response.body?.cancel();
    return response.ok;
  } catch {
    return false;
  }
}

/**
 * The image's HEALTHCHECK (the image has no curl): healthy when the service
 * this container runs answers. `review` probes the review server's page,
 * `proxy` the proxy's /healthz (with the key, for strict mode); with no
 * argument either one answering is enough. A service that is not listening
 * yet is tried again until the probe's time is up: the first probe of a
 * starting container passes the moment it serves, not a whole interval later.
 */
export async function runHealthcheck(ctx: CommandContext): Promise<number> {
  const which = ctx.argv[0];
  const targets = loadHealthTargets(ctx.env).filter((t) => which === undefined || t.service === which);
  if (targets.length === 0) {
    ctx.stderr.write(`healthcheck: unknown service ${JSON.stringify(which)} (review or proxy)\n`);
    return 1;
  }
  const deadline = Date.now() + PROBE_MS;
  for (;;) {
    for (const target of targets) if (await answers(target, deadline)) return 0;
    if (Date.now() + RETRY_MS >= deadline) return 1;
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
  }
}
