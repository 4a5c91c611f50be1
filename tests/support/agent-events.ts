/**
 * Hook events of Gemini CLI, Codex and Copilot CLI as each agent writes them
 * on its hook's stdin. Codex's are recorded (tests/fixtures/agents/codex: a
 * real 0.171.0 session against a scripted upstream, long instruction texts
 * trimmed); the others are built with the fields the installed agents send
 * (docs/agents.md).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

const CODEX = path.resolve(import.meta.dirname, '..', 'fixtures', 'agents', 'codex');

/** Gemini CLI 0.61.0's BeforeTool event for exit_plan_mode (GEMINI_PLANS_DIR holds the file). */
export function geminiEvent(
  cwd: string,
  toolInput: unknown = { plan_filename: 'add-tests.md' },
  tool = 'exit_plan_mode',
) {
  return {
    session_id: '6f1c2a4e-1b7d-4a55-9d0c-6c1e3f1b2a90',
    transcript_path: '/home/dev/.gemini/tmp/work/chats/session-2026-11-27T07-30-6f1c2a4e.json',
    cwd,
    hook_event_name: 'BeforeTool',
    timestamp: '2026-11-27T07:30:00.000Z',
    tool_name: tool,
    tool_input: toolInput,
  };
}

/** Copilot CLI 1.0.102's preToolUse event (it runs for every tool). */
export function copilotEvent(
  cwd: string,
  toolName = 'exit_plan_mode',
  sessionId = 'c0p1l07-5e55-4a1d-9f00-2b7c5d0e1a11',
) {
  return {
    sessionId,
    timestamp: 1795764589000,
    cwd,
    toolName,
    toolArgs:
      toolName === 'exit_plan_mode'
        ? JSON.stringify({ summary: 'Add tests', recommendedAction: 'autopilot' })
        : JSON.stringify({ command: 'ls' }),
  };
}

/** A recorded Codex transcript (`plan-turn`: plan mode, blocked once; `default-turn`: default mode). */
export function codexTranscript(name: 'plan-turn' | 'default-turn'): string[] {
  return readFileSync(path.join(CODEX, `${name}.jsonl`), 'utf8')
    .trimEnd()
    .split('\n');
}

/** The plan-mode transcript as it was at its first Stop: up to the block's hook prompt. */
export function codexFirstStop(): string[] {
  const lines = codexTranscript('plan-turn');
  return lines.slice(
    0,
    lines.findIndex((l) => l.includes('<hook_prompt')),
  );
}

/** A recorded Codex Stop event, its transcript_path set to `transcript`. */
export function codexStop(name: 'plan-turn-stop-1' | 'plan-turn-stop-2' | 'default-turn-stop', transcript: string) {
  const event = JSON.parse(readFileSync(path.join(CODEX, `${name}.json`), 'utf8')) as Record<string, unknown>;
  return { ...event, transcript_path: transcript };
}
