/**
 * What a Codex session transcript (the rollout JSONL at the Stop event's
 * `transcript_path`) says about one turn: its collaboration mode and the plan
 * it proposed. Lines, as Codex 0.171.0 writes them:
 * - `{"type":"turn_context","payload":{"turn_id", "collaboration_mode":{"mode":"plan",…},…}}`
 * - `{"type":"event_msg","payload":{"type":"item_completed","turn_id",
 *   "item":{"type":"Plan","id","text"}}}`: the `<proposed_plan>` block's text
 *   (the Stop event's `last_assistant_message` has it removed).
 * A turn the Stop hook blocked goes on under the same turn id, the block's
 * reason recorded as a `HookPrompt` item: only a plan proposed after it counts.
 */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { isObject, type JsonObject } from '../../json.ts';

export interface TurnPlan {
  /** The turn's collaboration mode (`plan`, `default`, …), or null when the transcript does not say. */
  mode: string | null;
  /** The turn's last proposed plan, or null when it proposed none. */
  plan: string | null;
}

function parseLine(line: string): JsonObject | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const value: unknown = JSON.parse(line);
    return isObject(value) ? value : undefined;
  } catch {
    // Not JSON (a line still being written as the hook reads): nothing of ours.
    return undefined;
  }
}

/** The mode and last plan of turn `turnId` (without an id: of the transcript's last turn), line by line. */
export class TurnScanner {
  readonly #turnId: string;
  #inTurn = false;
  readonly result: TurnPlan = { mode: null, plan: null };

  constructor(turnId: string) {
    this.#turnId = turnId;
  }

  add(line: string): void {
    const entry = parseLine(line);
    const payload = entry?.['payload'];
    if (entry === undefined || !isObject(payload)) return;
    if (entry['type'] === 'turn_context') {
      const same = this.#turnId === '' || payload['turn_id'] === this.#turnId;
      // Codex writes a turn's context again after a compaction: the same turn goes on.
      if (same && !this.#inTurn) this.result.plan = null;
      this.#inTurn = same;
      const collaboration = payload['collaboration_mode'];
      if (same)
        this.result.mode =
          isObject(collaboration) && typeof collaboration['mode'] === 'string' ? collaboration['mode'] : null;
      return;
    }
    if (!this.#inTurn || entry['type'] !== 'event_msg' || payload['type'] !== 'item_completed') return;
    if (this.#turnId !== '' && payload['turn_id'] !== undefined && payload['turn_id'] !== this.#turnId) return;
    const item = payload['item'];
    if (!isObject(item)) return;
    if (item['type'] === 'HookPrompt') this.result.plan = null;
    else if (item['type'] === 'Plan' && typeof item['text'] === 'string') this.result.plan = item['text'];
  }
}

/** The turn's mode and plan, the transcript streamed: a long session's is never held whole. */
export async function readTurnPlan(file: string, turnId: string): Promise<TurnPlan> {
  const scanner = new TurnScanner(turnId);
  const lines = createInterface({ input: createReadStream(file, { encoding: 'utf8' }), crlfDelay: Infinity });
  for await (const line of lines) scanner.add(line);
  return scanner.result;
}
