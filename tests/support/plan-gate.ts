/**
 * What the real-agent plan-gate tests share: `gatehouse` on the agent's PATH as a user has
 * it installed (this tree's CLI), the plan review URL its hook printed, and the reviewer's
 * side of a local review through the review server's HTTP API.
 */
import { chmodSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { vi } from 'vitest';
import { ROOT } from './hub.ts';

/** This tree's CLI. */
export const CLI = path.join(ROOT, 'src', 'cli.ts');

export interface GatehouseLog {
  /** Where its stderr (the hook's "Plan review: URL" line and log) is appended; the shell expands it ($HOME/...). */
  file: string;
  /** Each run's arguments and exit code too ("run: gatehouse ARGS", "exit: N"). */
  runs?: boolean;
}

/** Writes `dir/gatehouse`, this tree's CLI as `gatehouse setup` expects on PATH, and returns its path. */
export function writeGatehouse(dir: string, log?: GatehouseLog): string {
  const gatehouse = path.join(dir, 'gatehouse');
  const cli = `'${process.execPath}' '${CLI}' "$@"`;
  const lines =
    log === undefined
      ? [`exec ${cli}`]
      : log.runs === true
        ? [
            `echo "run: gatehouse $*" >> "${log.file}"`,
            `${cli} 2>> "${log.file}"`,
            'code=$?',
            `echo "exit: $code" >> "${log.file}"`,
            'exit $code',
          ]
        : [`exec ${cli} 2>> "${log.file}"`];
  writeFileSync(gatehouse, ['#!/bin/sh', ...lines, ''].join('\n'));
  chmodSync(gatehouse, 0o755);
  return gatehouse;
}

/** The URL of the `n`th plan review the hook printed ("Plan review: URL") into `log()`, once there. */
export function servedReview(log: () => string, n: number, timeout: number): Promise<string> {
  return vi.waitFor(
    () => {
      const urls = [...log().matchAll(/Plan review: (\S+)/g)].map((m) => m[1] as string);
      if (urls.length < n) throw new Error(`plan review ${n} not served yet; hook log:\n${log()}`);
      return urls[n - 1] as string;
    },
    { timeout, interval: 250 },
  );
}

/** What the review at `url` shows the reviewer (GET api/plan). */
export async function shownPlan(url: string): Promise<Record<string, unknown>> {
  return (await (await fetch(new URL('api/plan', url))).json()) as Record<string, unknown>;
}

/** The reviewer approves or denies the review at `url` (`body`: feedback, a permission mode); the response's status. */
export async function decidePlan(url: string, action: 'approve' | 'deny', body: object = {}): Promise<number> {
  const response = await fetch(new URL(`api/${action}`, url), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ...body, planSave: { enabled: false } }),
  });
  return response.status;
}
