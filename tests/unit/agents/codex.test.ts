import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HookEventError, type PlanHook } from '../../../src/agents/agent.ts';
import { codex, codexAnswer, CODEX_TIMEOUT_MESSAGE } from '../../../src/agents/codex/index.ts';
import { TurnScanner } from '../../../src/agents/codex/transcript.ts';
import { TIMEOUT_DECISION } from '../../../src/review/plan/decision.ts';
import { codexFirstStop, codexStop, codexTranscript } from '../../support/agent-events.ts';

const TURN = '01a21be9-c604-76c1-9c87-82dc03758533';

function scan(lines: string[], turnId = TURN) {
  const scanner = new TurnScanner(turnId);
  for (const line of lines) scanner.add(line);
  return scanner.result;
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'gatehouse-codex-'));
  await writeFile(path.join(dir, 'first.jsonl'), `${codexFirstStop().join('\n')}\n`);
  await writeFile(path.join(dir, 'second.jsonl'), `${codexTranscript('plan-turn').join('\n')}\n`);
  await writeFile(path.join(dir, 'default.jsonl'), `${codexTranscript('default-turn').join('\n')}\n`);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const read = (event: unknown) => (codex.planHook as PlanHook).read({ text: JSON.stringify(event), env: {}, cwd: '/' });

describe('the transcript of a Codex turn', () => {
  it("reads the plan-mode turn's proposed plan; after a block only a plan proposed since counts", () => {
    expect(scan(codexFirstStop())).toEqual({ mode: 'plan', plan: '# Add tests v1\n\n1. Cover the parser\n' });
    expect(scan(codexTranscript('plan-turn'))).toEqual({
      mode: 'plan',
      plan: '# Add tests v2\n\n1. Cover the parser\n',
    });
    const lines = codexTranscript('plan-turn');
    const upToPrompt = lines.slice(0, lines.findIndex((l) => l.includes('"HookPrompt"')) + 1);
    expect(scan(upToPrompt)).toEqual({ mode: 'plan', plan: null });
  });

  it('says default for a default-mode turn, nothing for another turn, and skips lines that are not JSON', () => {
    expect(scan(codexTranscript('default-turn'), '01a21bf9-b881-7fb2-abcb-0358343ee24e')).toEqual({
      mode: 'default',
      plan: null,
    });
    expect(scan(codexTranscript('plan-turn'), 'another-turn')).toEqual({ mode: null, plan: null });
    expect(
      scan(['', 'not json', '{"type":"turn_context","payload":3}', '[1]', ...codexFirstStop(), '{"type":']),
    ).toEqual({ mode: 'plan', plan: '# Add tests v1\n\n1. Cover the parser\n' });
  });
});

describe('codex Stop hook', () => {
  it('reviews the plan of a plan-mode turn, as a version of its session', async () => {
    const first = await read(codexStop('plan-turn-stop-1', path.join(dir, 'first.jsonl')));
    expect('review' in first && first.review).toMatchObject({
      plan: '# Add tests v1\n\n1. Cover the parser\n',
      permissionMode: 'plan',
      cwd: '/home/dev/work',
      session: '01a21be9-c5f2-7520-a5fa-202de13fe7fc',
    });
    const second = await read(codexStop('plan-turn-stop-2', path.join(dir, 'second.jsonl')));
    expect('review' in second && second.review.plan).toBe('# Add tests v2\n\n1. Cover the parser\n');
  });

  it('passes at once, with no answer, a turn that was not a plan or keeps no transcript', async () => {
    expect(await read(codexStop('default-turn-stop', path.join(dir, 'default.jsonl')))).toEqual({ pass: undefined });
    expect(await read({ ...codexStop('plan-turn-stop-1', ''), transcript_path: null })).toEqual({ pass: undefined });
  });

  it.each([
    [{ hook_event_name: 'PreToolUse' }, 'expected a Stop event'],
    [{ transcript_path: 'relative.jsonl' }, 'transcript_path must be an absolute path'],
    [{ transcript_path: '/nowhere/rollout.jsonl' }, 'cannot read the transcript /nowhere/rollout.jsonl: ENOENT'],
    [{ cwd: 'work' }, 'cwd must be an absolute path'],
  ])('refuses %j', async (change, message) => {
    const event = { ...codexStop('plan-turn-stop-1', path.join(dir, 'first.jsonl')), ...change };
    await expect(read(event)).rejects.toThrow(HookEventError);
    await expect(read(event)).rejects.toThrow(message);
  });

  it('answers approve with {} (the turn ends), deny with a block carrying the feedback, a timeout with a message', () => {
    const base = { feedback: null, savedPath: null, permissionMode: null, agentSwitch: null };
    expect(codexAnswer({ ...base, decision: 'approved' })).toEqual({});
    expect(codexAnswer({ ...base, decision: 'denied', feedback: 'Split step 1' })).toEqual({
      decision: 'block',
      reason: 'Split step 1',
    });
    expect(codexAnswer(TIMEOUT_DECISION)).toEqual({ systemMessage: CODEX_TIMEOUT_MESSAGE });
  });
});
