import type { Context, Middleware } from 'koa';
import type { Logger } from 'pino';
import type { Agent, AgentsResponse, Origin } from './contract.ts';
import { AGENTS_FETCH_FAILED } from './errors.ts';

export interface AgentsOptions {
  origin: Origin;
  /** The OpenCode server (config `opencodeServerUrl`, env OPENCODE_SERVER_URL), without a trailing slash. */
  opencodeServerUrl: string;
  log: Logger;
  /** How long the OpenCode server may take to answer. */
  timeoutMs?: number;
}

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

/**
 * `GET /api/agents`: Claude Code has no agents to switch to (`{"agents": []}`);
 * OpenCode's come from its server. A failure is still a 200, with
 * `{"agents": [], "error": "Failed to fetch agents"}`, so the UI just hides the switch.
 */
export function listAgents({ origin, opencodeServerUrl, log, timeoutMs = 5_000 }: AgentsOptions): Middleware {
  return async (ctx: Context) => {
    if (origin !== 'opencode') {
      ctx.body = { agents: [] } satisfies AgentsResponse;
      return;
    }
    try {
      const response = await fetch(`${opencodeServerUrl}/agent`, {
        headers: { accept: 'application/json' },
        signal: AbortSignal.timeout(timeoutMs),
      });
      if (!response.ok) {
        await response.body?.cancel();
        throw new Error(`OpenCode answered ${response.status}`);
      }
      ctx.body = { agents: switchableAgents(await response.json()) } satisfies AgentsResponse;
    } catch (error) {
      log.warn({ err: error, url: `${opencodeServerUrl}/agent` }, 'could not fetch the OpenCode agents');
      ctx.body = { agents: [], error: AGENTS_FETCH_FAILED } satisfies AgentsResponse;
    }
  };
}
