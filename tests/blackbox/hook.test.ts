import { afterEach, describe, expect, it } from 'vitest';
import { exitPlanModeEvent } from '../support/hook-event.ts';
import { envArgs, hookContainer, removeHookContainers } from '../support/hook-container.ts';

const PLAN = '# Refactor Auth\n\n1. Extract the session store\n2. Add tests\n';
const EVENT = exitPlanModeEvent(PLAN, '/work');

afterEach(removeHookContainers);

/** Runs the hook the way Claude Code does: a process with the event piped to its stdin. */
function hook(stdin: string, env: Record<string, string> = {}) {
  return hookContainer(['claude-code'], stdin, envArgs(env));
}

async function post(url: string, body: unknown) {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: r.status, body: await r.json() };
}

describe('gatehouse hook claude-code (PermissionRequest for ExitPlanMode)', () => {
  it('serves the event plan with its permission mode; approve answers allow + setMode on stdout, exit 0', async () => {
    const h = hook(JSON.stringify(EVENT));
    const url = await h.url();
    expect(await (await fetch(`${url}api/plan`)).json()).toEqual({
      plan: PLAN,
      origin: 'claude-code',
      permissionMode: 'plan',
      sharingEnabled: true,
    });
    expect((await post(`${url}api/approve`, { permissionMode: 'acceptEdits' })).status).toBe(200);
    const { code, stdout, stderr } = await h.exited;
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toEqual({
      hookSpecificOutput: {
        hookEventName: 'PermissionRequest',
        decision: {
          behavior: 'allow',
          updatedInput: EVENT.tool_input,
          updatedPermissions: [{ type: 'setMode', mode: 'acceptEdits', destination: 'session' }],
        },
      },
    });
    expect(stdout.trim().split('\n')).toHaveLength(1);
    expect(stderr).toContain('"msg":"plan approved"');
  });

  it('approve without a mode is an allow echoing the tool input; SERVICE_ORIGIN does not change the hook origin', async () => {
    const h = hook(JSON.stringify(EVENT), { SERVICE_ORIGIN: 'opencode' });
    const url = await h.url();
    expect(((await (await fetch(`${url}api/plan`)).json()) as { origin: string }).origin).toBe('claude-code');
    await post(`${url}api/approve`, { planSave: { enabled: false } });
    const { code, stdout } = await h.exited;
    expect(code).toBe(0);
    expect(stdout).toBe(
      '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow",' +
        `"updatedInput":${JSON.stringify(EVENT.tool_input)}}}}\n`,
    );
  });

  it('deny answers deny with the feedback as the message', async () => {
    const h = hook(JSON.stringify(EVENT));
    const url = await h.url();
    await post(`${url}api/deny`, { feedback: 'Keep the old session store for now' });
    const { code, stdout } = await h.exited;
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toEqual({
      hookSpecificOutput: {
        hookEventName: 'PermissionRequest',
        decision: { behavior: 'deny', message: 'Keep the old session store for now' },
      },
    });
  });

  it('a timeout denies with a message so no unreviewed plan runs', async () => {
    const h = hook(JSON.stringify(EVENT), { SERVICE_TIMEOUT: '2s' });
    await h.url();
    const { code, stdout } = await h.exited;
    expect(code).toBe(0);
    const answer = JSON.parse(stdout) as { hookSpecificOutput: { decision: { behavior: string; message: string } } };
    expect(answer.hookSpecificOutput.decision.behavior).toBe('deny');
    expect(answer.hookSpecificOutput.decision.message).toMatch(/timed out/);
  });

  it.each([
    ['empty stdin', '', 'no hook event on stdin'],
    ['not JSON', 'not json', 'not valid JSON'],
    [
      'another tool',
      JSON.stringify({ ...EVENT, tool_name: 'Bash', tool_input: { command: 'ls' } }),
      'ExitPlanMode plans only',
    ],
    ['no plan', JSON.stringify({ ...EVENT, tool_input: {} }), 'tool_input.plan must be a non-empty string'],
  ])(
    'a malformed event (%s) exits 1 with the reason on stderr and nothing on stdout',
    async (_label, stdin, message) => {
      const { code, stdout, stderr } = await hook(stdin).exited;
      expect(code).toBe(1);
      expect(stdout).toBe('');
      expect(stderr).toContain(`gatehouse hook claude-code: `);
      expect(stderr).toContain(message);
    },
  );
});
