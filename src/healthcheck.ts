import type { CommandContext } from './command.ts';
import { loadHealthTargets } from './config/health.ts';

/**
 * The image's HEALTHCHECK (the image has no curl): healthy when the service
 * this container runs answers. `review` probes the review server's page,
 * `proxy` the proxy's /healthz (with the key, for strict mode); with no
 * argument either one answering is enough.
 */
export async function runHealthcheck(ctx: CommandContext): Promise<number> {
  const which = ctx.argv[0];
  const targets = loadHealthTargets(ctx.env).filter((t) => which === undefined || t.service === which);
  if (targets.length === 0) {
    ctx.stderr.write(`healthcheck: unknown service ${JSON.stringify(which)} (review or proxy)\n`);
    return 1;
  }
  for (const target of targets) {
    try {
      const response = await fetch(target.url, { headers: target.headers, signal: AbortSignal.timeout(3_000) });
      await response.body?.cancel();
      if (response.ok) return 0;
    } catch {
      // Not this one; try the next target.
    }
  }
  return 1;
}
