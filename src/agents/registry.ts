/**
 * Every coding agent gatehouse gates, one line each: the record the `hook`
 * and `setup` commands and the review server read. A new agent is a folder
 * beside these, a line here and its label in ORIGIN_LABELS (src/review/contract.ts).
 */
import type { Origin } from '../review/contract.ts';
import type { AgentSpec } from './agent.ts';
import { claudeCode } from './claude-code/index.ts';
import { codex } from './codex/index.ts';
import { copilotCli } from './copilot-cli/index.ts';
import { geminiCli } from './gemini-cli/index.ts';
import { opencode } from './opencode/index.ts';

export const AGENTS = {
  'claude-code': claudeCode,
  'gemini-cli': geminiCli,
  codex,
  'copilot-cli': copilotCli,
  opencode,
} as const satisfies Readonly<Record<Origin, AgentSpec>>;

/** Whether `name` names an agent of the registry. */
export function isAgentName(name: string): name is Origin {
  return Object.hasOwn(AGENTS, name);
}
