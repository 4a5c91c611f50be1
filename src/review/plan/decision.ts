import type { PlanDecision } from './routes.ts';

/** The decision with nothing chosen: what a timeout records. (Its own module: hooks import it without a server.) */
export const TIMEOUT_DECISION: PlanDecision = {
  decision: 'timeout',
  feedback: null,
  savedPath: null,
  permissionMode: null,
  agentSwitch: null,
};
