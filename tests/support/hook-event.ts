/** The PermissionRequest event Claude Code writes to a hook's stdin when the agent calls ExitPlanMode. */
export function exitPlanModeEvent(plan: string, cwd: string) {
  return {
    session_id: '8f1d2c3b-aaaa-bbbb-cccc-1234567890ab',
    transcript_path: '/home/node/.claude/projects/-work/8f1d2c3b.jsonl',
    cwd,
    permission_mode: 'plan',
    hook_event_name: 'PermissionRequest',
    tool_name: 'ExitPlanMode',
    tool_input: { plan, planFilePath: '/home/node/.claude/plans/refactor-auth.md' },
    permission_suggestions: [{ type: 'setMode', mode: 'acceptEdits', destination: 'session' }],
  };
}
