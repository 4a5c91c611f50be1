/**
 * OpenCode: its plugin runs `gatehouse plan --origin opencode`; the reviewer
 * may approve and hand the session to another of its agents.
 */
import type { Agent } from '../../review/contract.ts';
import type { AgentSpec } from '../agent.ts';

/** OpenCode's `GET /agent` entries: only primary, visible agents can be switched to. */
export function switchableAgents(list: unknown): Agent[] {
  if (!Array.isArray(list)) throw new Error('the agent list is not an array');
  return list
    .filter((a): a is Record<string, unknown> => typeof a === 'object' && a !== null)
    .filter((a) => a['mode'] === 'primary' && a['hidden'] !== true && typeof a['name'] === 'string')
    .map((a) => ({
      id: a['name'] as string,
      name: a['name'] as string,
      description: typeof a['description'] === 'string' ? a['description'] : '',
    }));
}

export const opencode: AgentSpec = {
  noSetup: 'OpenCode has no command hook: its plugin runs gatehouse plan --origin opencode (docs/review-server.md)',
  async switchTargets({ opencodeServerUrl, timeoutMs }) {
    const url = `${opencodeServerUrl}/agent`;
    try {
      const response = await fetch(url, {
        headers: { accept: 'application/json' },
        signal: AbortSignal.timeout(timeoutMs),
      });
      if (!response.ok) {
        await response.body?.cancel();
        throw new Error(`OpenCode answered ${response.status}`);
      }
      return switchableAgents(await response.json());
    } catch (error) {
      throw new Error(`could not list the OpenCode agents at ${url}`, { cause: error });
    }
  },
};
