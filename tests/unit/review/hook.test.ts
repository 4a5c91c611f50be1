import { describe, expect, it } from 'vitest';
import { HOOK_TIMEOUT_MESSAGE } from '../../../src/agents/agent.ts';
import { hookAnswer, hookCodec, parseHookEvent } from '../../../src/agents/claude-code/index.ts';
import { TIMEOUT_DECISION } from '../../../src/review/plan/decision.ts';

/** The PermissionRequest event Claude Code sends for ExitPlanMode. */
const EVENT = {
  session_id: 'abc123',
  transcript_path: '/home/u/.claude/projects/p/abc123.jsonl',
  cwd: '/home/u/project',
  permission_mode: 'plan',
  hook_event_name: 'PermissionRequest',
  tool_name: 'ExitPlanMode',
  tool_input: { plan: '# Plan\n\n1. Do it', planFilePath: '/home/u/.claude/plans/plan.md' },
  permission_suggestions: [],
};
const INPUT = EVENT.tool_input;

describe('parseHookEvent', () => {
  it('reads the plan, permission mode and cwd, and keeps the tool input as it came', () => {
    expect(parseHookEvent(JSON.stringify(EVENT))).toEqual({
      plan: '# Plan\n\n1. Do it',
      permissionMode: 'plan',
      cwd: '/home/u/project',
      toolInput: INPUT,
    });
    expect(parseHookEvent(JSON.stringify({ tool_input: { plan: 'p' } }))).toEqual({
      plan: 'p',
      permissionMode: 'default',
      cwd: undefined,
      toolInput: { plan: 'p' },
    });
    // Fields this hook does not know (a later Claude Code's) are kept too, nested values included.
    const future = { plan: 'p', planFilePath: '/p.md', allowedPrompts: [{ tool: 'Bash', prompt: 'run tests' }], n: 0 };
    expect(parseHookEvent(JSON.stringify({ tool_input: future })).toolInput).toEqual(future);
  });

  it.each([
    ['', 'no hook event on stdin'],
    ['{"tool_input":', 'not valid JSON'],
    ['[1]', 'must be a JSON object'],
    [JSON.stringify({ ...EVENT, hook_event_name: 'PreToolUse' }), 'expected a PermissionRequest event'],
    [JSON.stringify({ ...EVENT, tool_name: 'Bash' }), 'ExitPlanMode plans only'],
    [JSON.stringify({ ...EVENT, tool_input: {} }), 'tool_input.plan must be a non-empty string'],
    [JSON.stringify({ ...EVENT, tool_input: ['# Plan'] }), 'tool_input.plan must be a non-empty string'],
    [JSON.stringify({ ...EVENT, tool_input: { plan: '  ' } }), 'tool_input.plan must be a non-empty string'],
    [JSON.stringify({ ...EVENT, permission_mode: 3 }), 'permission_mode must be a string'],
    [JSON.stringify({ ...EVENT, cwd: 'relative' }), 'cwd must be an absolute path'],
  ])('refuses %j', (text, message) => {
    expect(() => parseHookEvent(text)).toThrow(message);
  });
});

describe('hookAnswer', () => {
  const base = { feedback: null, savedPath: null, permissionMode: null, agentSwitch: null };

  it("allows echoing the event's tool input as updatedInput, switching the mode only when one was chosen", () => {
    expect(hookAnswer({ ...base, decision: 'approved' }, INPUT)).toEqual({
      hookSpecificOutput: { hookEventName: 'PermissionRequest', decision: { behavior: 'allow', updatedInput: INPUT } },
    });
    expect(hookAnswer({ ...base, decision: 'approved', permissionMode: 'acceptEdits' }, INPUT)).toEqual({
      hookSpecificOutput: {
        hookEventName: 'PermissionRequest',
        decision: {
          behavior: 'allow',
          updatedInput: INPUT,
          updatedPermissions: [{ type: 'setMode', mode: 'acceptEdits', destination: 'session' }],
        },
      },
    });
  });

  it('denies with the feedback as the message, and denies on timeout', () => {
    expect(hookAnswer({ ...base, decision: 'denied', feedback: 'Split step 2' }, INPUT)).toEqual({
      hookSpecificOutput: {
        hookEventName: 'PermissionRequest',
        decision: { behavior: 'deny', message: 'Split step 2' },
      },
    });
    expect(hookAnswer(TIMEOUT_DECISION, INPUT)).toEqual({
      hookSpecificOutput: {
        hookEventName: 'PermissionRequest',
        decision: { behavior: 'deny', message: HOOK_TIMEOUT_MESSAGE },
      },
    });
  });
});

describe('hookCodec', () => {
  it("encodes each decision against its own event's tool input, always exit 0", () => {
    const approved = { ...TIMEOUT_DECISION, decision: 'approved' as const };
    const a = hookCodec({ plan: 'a', planFilePath: '/a.md' });
    const b = hookCodec({ plan: 'b' });
    expect(a.encode(approved)).toEqual(hookAnswer(approved, { plan: 'a', planFilePath: '/a.md' }));
    expect(b.encode(approved)).toEqual(hookAnswer(approved, { plan: 'b' }));
    expect(a.timeout()).toEqual(TIMEOUT_DECISION);
    expect([a.exitCode(approved), a.exitCode(TIMEOUT_DECISION)]).toEqual([0, 0]);
  });
});
