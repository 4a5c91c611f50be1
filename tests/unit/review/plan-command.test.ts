import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommandContext } from '../../../src/command.ts';
import { runPlan } from '../../../src/review/plan/command.ts';
import { runHook } from '../../../src/agents/hook.ts';
import { capture } from '../../support/review.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'gatehouse-cmd-'));
  await writeFile(path.join(dir, 'empty.md'), ' \n\n');
});
afterAll(() => rm(dir, { recursive: true, force: true }));

function context(argv: string[], stdin = '') {
  const stderr = capture();
  const stdout = capture();
  const ctx: CommandContext = {
    argv,
    env: { HOME: dir },
    cwd: dir,
    stdin: Readable.from([Buffer.from(stdin)]),
    stdout,
    stderr,
    shutdown: new AbortController().signal,
  };
  return { ctx, stdout, stderr };
}

describe('gatehouse plan: errors before serving', () => {
  it.each([
    [['missing.md'], 'cannot read the plan DIR/missing.md: no such file'],
    [['empty.md'], 'the plan is empty (empty.md)'],
    [['-'], 'the plan is empty (stdin)'],
    [[], 'the plan is empty (stdin)'],
    [['.'], 'it is a directory'],
    [['x.md', '--repo', '.'], 'unknown option --repo'],
    [['x.md', '--origin=aider'], 'review.origin'],
    [['a.md', 'b.md'], 'unexpected argument "b.md"'],
  ])('%j fails clearly', async (argv, message) => {
    const { ctx, stdout } = context(argv);
    await expect(runPlan(ctx)).rejects.toThrow(message.replace('DIR', dir));
    expect(stdout.text()).toBe('');
  });

  it('--help prints the usage and succeeds', async () => {
    const { ctx, stderr } = context(['--help']);
    expect(await runPlan(ctx)).toBe(0);
    expect(stderr.text()).toMatch(/^Usage: gatehouse plan \[FILE\|-\]/);
  });
});

describe('gatehouse hook claude-code: errors before serving', () => {
  it('exits 1 with the reason on stderr for a malformed event, writing nothing on stdout', async () => {
    const { ctx, stdout, stderr } = context(['claude-code'], '{"tool_name":"ExitPlanMode","tool_input":{}}');
    expect(await runHook(ctx)).toBe(1);
    expect(stderr.text()).toBe(
      'gatehouse hook claude-code: the hook event has no plan (tool_input.plan must be a non-empty string)\n',
    );
    expect(stdout.text()).toBe('');
  });

  it('exits 1 for an unknown agent', async () => {
    const { ctx, stderr } = context(['aider']);
    expect(await runHook(ctx)).toBe(1);
    expect(stderr.text()).toContain('unknown agent "aider"; the agents with a hook: "claude-code"');
  });
});
