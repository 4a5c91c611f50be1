/**
 * `npm run bench:hook`: how long a hook takes to answer an event that is not
 * for it, the way an agent runs it: Copilot CLI's preToolUse runs the hook
 * for every tool, so `gatehouse hook copilot-cli` on a `bash` call is paid on
 * each one. Times the built command (dist/src/cli.js, what the package
 * installs; built first), from spawn to exit, the event piped to its stdin;
 * side by side, round by round, the baseline `node -e 0` (Node's own start).
 * Aim: under 150 ms. BENCH_ROUNDS changes the rounds (50).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { copilotEvent } from '../tests/support/agent-events.ts';
import { median } from './stats.ts';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 50);
const AIM_MS = 150;
const ROOT = path.resolve(import.meta.dirname, '..');
const CLI = path.join(ROOT, 'dist', 'src', 'cli.js');

execFileSync('npm', ['run', '--silent', 'build:server'], { cwd: ROOT, stdio: 'inherit' });
const event = JSON.stringify(copilotEvent(ROOT, 'bash'));

function timed(args: string[], input: string): number {
  const start = process.hrtime.bigint();
  const result = spawnSync(process.execPath, args, { input, encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (result.status !== 0 || result.stdout !== '' || result.stderr !== '')
    throw new Error(`${args.join(' ')} exited ${result.status}: ${result.stdout}${result.stderr}`);
  return ms;
}

const loadBefore = os.loadavg()[0] ?? NaN;
const hook: number[] = [];
const baseline: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  // Alternate which runs first, so neither always gets the warmer cache.
  const order = round % 2 === 0 ? (['hook', 'node'] as const) : (['node', 'hook'] as const);
  for (const which of order) {
    if (which === 'hook') hook.push(timed([CLI, 'hook', 'copilot-cli'], event));
    else baseline.push(timed(['-e', '0'], ''));
  }
}

const ratios = hook.map((h, i) => h / (baseline[i] ?? NaN));
const f = (ms: number) => `${ms.toFixed(1)} ms`;
console.log(
  `bench:hook: ${ROUNDS} rounds, Copilot preToolUse on "bash" (not for the gate), node ${process.version}, ` +
    `${os.availableParallelism()} cores, load average ${loadBefore.toFixed(1)} -> ${(os.loadavg()[0] ?? NaN).toFixed(1)}`,
);
console.log(
  `  gatehouse hook copilot-cli   median ${f(median(hook))}  max ${f(Math.max(...hook))}  min ${f(Math.min(...hook))}`,
);
console.log(
  `  node -e 0 (baseline)         median ${f(median(baseline))}  max ${f(Math.max(...baseline))}  min ${f(Math.min(...baseline))}`,
);
console.log(
  `  paired: hook / baseline median ${median(ratios).toFixed(2)}x (range ${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}x); ` +
    `hook - baseline median ${f(median(hook.map((h, i) => h - (baseline[i] ?? NaN))))}`,
);
console.log(
  `  aim: under ${AIM_MS} ms: median ${median(hook) < AIM_MS ? 'met' : 'NOT met'}, max ${Math.max(...hook) < AIM_MS ? 'met' : 'NOT met'}`,
);
