import type { Context, Middleware } from 'koa';
import type { Logger } from 'pino';
import type { AgentSpec } from '../agents/agent.ts';
import { AGENTS } from '../agents/registry.ts';
import type { AgentsResponse, Origin } from './contract.ts';
import { AGENTS_FETCH_FAILED } from './errors.ts';

export interface AgentsOptions {
  origin: Origin;
  /** The OpenCode server (config `opencodeServerUrl`, env OPENCODE_SERVER_URL), without a trailing slash. */
  opencodeServerUrl: string;
  log: Logger;
  /** How long the agent's server may take to answer. */
  timeoutMs?: number;
}

/**
 * `GET /api/agents`: the agents the review's host agent can hand its session
 * to (OpenCode's, from its server; none for the others, `{"agents": []}`).
 * A failure is still a 200, with `{"agents": [], "error": "Failed to fetch
 * agents"}`, so the UI just hides the switch.
 */
export function listAgents({ origin, opencodeServerUrl, log, timeoutMs = 5_000 }: AgentsOptions): Middleware {
  const agent: AgentSpec = AGENTS[origin];
  return async (ctx: Context) => {
    if (agent.switchTargets === undefined) {
      ctx.body = { agents: [] } satisfies AgentsResponse;
      return;
    }
    try {
      ctx.body = { agents: await agent.switchTargets({ opencodeServerUrl, timeoutMs }) } satisfies AgentsResponse;
    } catch (error) {
      log.warn({ err: error, agent: origin }, 'could not fetch the agents to switch to');
      ctx.body = { agents: [], error: AGENTS_FETCH_FAILED } satisfies AgentsResponse;
    }
  };
}
