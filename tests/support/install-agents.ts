/**
 * `npm run agents:install`: the pinned agents (tests/agents), installed once per lock. `npm test` runs it beside
 * typecheck and lint, which keep both cores busy while the install mostly waits on the disk and the registry.
 */
import { installAgents } from './agents.ts';

await installAgents();
