import { mkdtempSync } from 'node:fs';
import { mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOOK_TIMEOUT_MESSAGE, type PlanHook } from '../../../src/agents/agent.ts';
import { copilotAnswer, copilotCli, copilotPlanFile } from '../../../src/agents/copilot-cli/index.ts';
import { geminiAnswer, geminiCli, planFile } from '../../../src/agents/gemini-cli/index.ts';
import { TIMEOUT_DECISION } from '../../../src/review/plan/decision.ts';
import { copilotEvent, geminiEvent } from '../../support/agent-events.ts';

const PLAN = '# Add tests\n\n1. Cover the parser\n';
const BASE = { feedback: null, savedPath: null, permissionMode: null, agentSwitch: null };

const dir = mkdtempSync(path.join(os.tmpdir(), 'gatehouse-agents-'));
const plans = path.join(dir, 'gemini', 'plans');
const project = path.join(dir, 'project');
beforeAll(async () => {
  await mkdir(plans, { recursive: true });
  await mkdir(project);
  await writeFile(path.join(plans, 'add-tests.md'), PLAN);
  await writeFile(path.join(plans, 'empty.md'), '\n');
  await writeFile(path.join(dir, 'secret.md'), 'not a plan');
  await symlink(path.join(dir, 'secret.md'), path.join(plans, 'link.md'));
  await mkdir(path.join(dir, 'copilot', 'session-state', 's-1'), { recursive: true });
  await writeFile(path.join(dir, 'copilot', 'session-state', 's-1', 'plan.md'), PLAN);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('gemini-cli BeforeTool hook', () => {
  const read = (event: unknown, env: NodeJS.ProcessEnv = { GEMINI_PLANS_DIR: plans }) =>
    (geminiCli.planHook as PlanHook).read({ text: JSON.stringify(event), env, cwd: project });

  it('reviews the plan file exit_plan_mode names, in the plans folder, as a version of its session', async () => {
    const result = await read(geminiEvent(project));
    expect('review' in result && result.review).toMatchObject({
      plan: PLAN,
      permissionMode: 'plan',
      cwd: project,
      session: '6f1c2a4e-1b7d-4a55-9d0c-6c1e3f1b2a90',
    });
    const absolute = await read(geminiEvent(project, { plan_filename: path.join(plans, 'add-tests.md') }));
    expect('review' in absolute && absolute.review.plan).toBe(PLAN);
  });

  it('resolves plan_filename as Gemini does, never outside the plans folder (.., absolute, symlink)', async () => {
    expect(await planFile('add-tests.md', plans, project)).toBe(path.join(plans, 'add-tests.md'));
    expect(await planFile(path.join(plans, 'x.md'), plans, project)).toBe(path.join(plans, 'x.md'));
    for (const name of ['../../secret.md', path.join(dir, 'secret.md'), 'link.md'])
      await expect(planFile(name, plans, project)).rejects.toThrow('is outside the plans folder');
  });

  it('passes any other tool at once with no answer (a hook installed without its matcher)', async () => {
    expect(await read(geminiEvent(project, { file_path: 'a.ts' }, 'write_file'))).toEqual({ pass: undefined });
  });

  it.each([
    [geminiEvent(project, {}), {}, 'tool_input.plan_filename must be a non-empty string'],
    [geminiEvent(project), { GEMINI_PLANS_DIR: '' }, 'GEMINI_PLANS_DIR is not set'],
    [geminiEvent(project, { plan_filename: 'missing.md' }), undefined, 'missing.md: ENOENT'],
    [geminiEvent(project, { plan_filename: 'empty.md' }), undefined, 'is empty'],
    [{ ...geminiEvent(project), hook_event_name: 'AfterTool' }, undefined, 'expected a BeforeTool event'],
  ])('refuses %j', async (event, env, message) => {
    await expect(read(event, env ?? { GEMINI_PLANS_DIR: plans })).rejects.toThrow(message);
  });

  it('answers allow, deny with the feedback as the reason, and deny on timeout; a failure blocks (exit 2)', () => {
    expect(geminiAnswer({ ...BASE, decision: 'approved' })).toEqual({ decision: 'allow' });
    expect(geminiAnswer({ ...BASE, decision: 'denied', feedback: 'Split step 1' })).toEqual({
      decision: 'deny',
      reason: 'Split step 1',
    });
    expect(geminiAnswer(TIMEOUT_DECISION)).toEqual({ decision: 'deny', reason: HOOK_TIMEOUT_MESSAGE });
    expect((geminiCli.planHook as PlanHook).failureExit).toBe(2);
  });
});

describe('copilot-cli preToolUse hook', () => {
  const env = { COPILOT_HOME: path.join(dir, 'copilot') };
  const read = (event: unknown, e: NodeJS.ProcessEnv = env) =>
    (copilotCli.planHook as PlanHook).read({ text: JSON.stringify(event), env: e, cwd: project });

  it("passes every other tool at once with no answer, so Copilot's own rules decide it", async () => {
    for (const tool of ['bash', 'edit', 'view', 'report_intent'])
      expect(await read(copilotEvent(project, tool))).toEqual({ pass: undefined });
  });

  it("reviews the session's plan.md for exit_plan_mode, under COPILOT_HOME or ~/.copilot", async () => {
    const result = await read(copilotEvent(project, 'exit_plan_mode', 's-1'));
    expect('review' in result && result.review).toMatchObject({ plan: PLAN, cwd: project, session: 's-1' });
    expect(copilotPlanFile('s-1', { HOME: '/home/dev' })).toBe('/home/dev/.copilot/session-state/s-1/plan.md');
    expect(copilotPlanFile('s-1', { HOME: '/home/dev', COPILOT_HOME: '/c' })).toBe('/c/session-state/s-1/plan.md');
  });

  it.each([
    [copilotEvent(project, 'exit_plan_mode', '../s-1'), 'sessionId must be a session id'],
    [copilotEvent(project, 'exit_plan_mode', 'no-such'), 'no-such/plan.md: ENOENT'],
    [{ ...copilotEvent(project, 'exit_plan_mode', 's-1'), cwd: 'rel' }, 'cwd must be an absolute path'],
  ])('refuses %j', async (event, message) => {
    await expect(read(event)).rejects.toThrow(message);
  });

  it('answers allow, deny with the feedback as the reason, and deny on timeout', () => {
    expect(copilotAnswer({ ...BASE, decision: 'approved' })).toEqual({ permissionDecision: 'allow' });
    expect(copilotAnswer({ ...BASE, decision: 'denied', feedback: 'No' })).toEqual({
      permissionDecision: 'deny',
      permissionDecisionReason: 'No',
    });
    expect(copilotAnswer(TIMEOUT_DECISION)).toEqual({
      permissionDecision: 'deny',
      permissionDecisionReason: HOOK_TIMEOUT_MESSAGE,
    });
  });
});
