// OpenCode's agent switch: the primary agents from /api/agents, and a plain
// note when that list could not be fetched (the decision still works without it).
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, type Agent } from '../api.ts';
import { errorText } from './common.tsx';

export interface AgentsState {
  agents: Agent[];
  error: string;
  loading: boolean;
  selected: string;
  select: (id: string) => void;
}

export function useAgents(enabled: boolean): AgentsState {
  const [agents, setAgents] = useState<Agent[]>([]);
  const [error, setError] = useState('');
  const [loading, setLoading] = useState(enabled);
  const [selected, select] = useState('');
  useEffect(() => {
    if (!enabled) return;
    api
      .agents()
      .then((r) => {
        setAgents(r.agents);
        if (r.error !== undefined) setError(r.error);
      })
      .catch((e: unknown) => setError(errorText(e)))
      .finally(() => setLoading(false));
  }, [enabled]);
  return { agents, error, loading, selected, select };
}

export function AgentPicker({ state }: { state: AgentsState }): JSX.Element {
  if (state.error !== '') {
    return (
      <span class="note warn" role="status" title={state.error} data-testid="agents-error">
        Agent list unavailable ({state.error}): the agent stays as it is.
      </span>
    );
  }
  return (
    <label class="field-inline">
      <span>Switch agent</span>
      <select
        value={state.selected}
        disabled={state.loading}
        onChange={(e) => state.select(e.currentTarget.value)}
        aria-label="Agent to switch to"
      >
        <option value="">{state.loading ? 'Loading…' : 'Keep current agent'}</option>
        {state.agents.map((a) => (
          <option value={a.id} key={a.id} title={a.description}>
            {a.name}
          </option>
        ))}
      </select>
    </label>
  );
}
