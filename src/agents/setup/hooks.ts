/**
 * The hook entries `setup` writes, found again and replaced in place: one
 * per agent and gate, recognised by its command (`gatehouse … hook <agent>`
 * and its `--gate`, none being the plan gate), so running setup again changes
 * nothing, a changed `--hub` replaces the URL rather than adding a second
 * hook, and one gate's hook never touches the other's.
 */
import { isObject, type JsonObject } from '../../json.ts';
import type { Gate } from '../agent.ts';
import { listAt, readJsonConfig, sameJson, setJson } from './config-files.ts';

/** Whether `command` is `gate`'s hook for `agent` as setup writes it (any flags, any path to gatehouse). */
export function isGateHook(agent: string, gate: Gate, command: unknown): command is string {
  if (typeof command !== 'string') return false;
  const hook = new RegExp(`(^|[\\s/"'])gatehouse(\\.js)?["']?\\s(.*\\s)?hook\\s+${agent}(\\s|$)`);
  const named = /--gate[=\s]+["']?(\w*)/.exec(command)?.[1] ?? 'plan';
  return hook.test(command) && named === gate;
}

/** Where an agent takes one gate's hook: the event's list (`['hooks', 'Stop']`), and its matcher if it has one. */
export interface GateEvent {
  event: string[];
  matcher?: string;
}

/** How setup reports a hook it writes: `hooks.PermissionRequest (matcher ExitPlanMode): <command>`. */
export function hookSummary({ event, matcher }: GateEvent, command: string): string {
  return `${event.join('.')}${matcher === undefined ? '' : ` (matcher ${matcher})`}: ${command}`;
}

/** Where a handler is: `hooks.<Event>[group].hooks[index]` (grouped) or `hooks.<event>[index]` (flat). */
export interface HookPosition {
  group: number;
  index: number;
  handler: JsonObject;
}

/** `event`: the list of groups, e.g. `['hooks', 'PermissionRequest']`; `matcher`: the group's. */
export interface GroupedHook extends GateEvent {
  handler: JsonObject;
  ours: (command: unknown) => boolean;
}

/** Claude Code, Gemini CLI and Codex: `{"hooks": {"<Event>": [{"matcher", "hooks": [handler]}]}}`. */
export function findGroupedHook(file: string, root: JsonObject, spec: Omit<GroupedHook, 'handler'>) {
  const groups = listAt(file, root, spec.event);
  for (const [group, g] of groups.entries()) {
    const handlers = isObject(g) && Array.isArray(g['hooks']) ? g['hooks'] : [];
    const index = handlers.findIndex((h) => isObject(h) && spec.ours(h['command']));
    if (index !== -1)
      return { group, index, handler: handlers[index] as JsonObject, matcher: (g as JsonObject)['matcher'] };
  }
  return undefined;
}

/** `text` with the hook in place (replaced where found, else a new group), and where it is. */
export function upsertGroupedHook(
  file: string,
  text: string | null,
  spec: GroupedHook,
): { text: string; at: HookPosition } {
  const root = readJsonConfig(file, text);
  const found = findGroupedHook(file, root, spec);
  const group = { ...(spec.matcher !== undefined && { matcher: spec.matcher }), hooks: [spec.handler] };
  if (found === undefined) {
    const at = listAt(file, root, spec.event).length;
    return { text: setJson(text, [...spec.event, at], group), at: { group: at, index: 0, handler: spec.handler } };
  }
  let next = text ?? '';
  if (!sameJson(found.handler, spec.handler))
    next = setJson(next, [...spec.event, found.group, 'hooks', found.index], spec.handler);
  if (spec.matcher !== undefined && found.matcher !== spec.matcher)
    next = setJson(next, [...spec.event, found.group, 'matcher'], spec.matcher);
  return { text: next, at: { group: found.group, index: found.index, handler: spec.handler } };
}

export interface FlatHook {
  event: string[];
  handler: JsonObject;
  /** The handler's command field (`bash` for Copilot CLI). */
  commandKey: string;
  ours: (command: unknown) => boolean;
}

/** Copilot CLI: `{"version": 1, "hooks": {"preToolUse": [handler]}}`. */
export function findFlatHook(file: string, root: JsonObject, spec: Omit<FlatHook, 'handler'>) {
  const index = listAt(file, root, spec.event).findIndex((h) => isObject(h) && spec.ours(h[spec.commandKey]));
  return index === -1 ? undefined : { index, handler: listAt(file, root, spec.event)[index] as JsonObject };
}

export function upsertFlatHook(file: string, text: string | null, spec: FlatHook): string {
  const root = readJsonConfig(file, text);
  const found = findFlatHook(file, root, spec);
  if (found !== undefined && sameJson(found.handler, spec.handler)) return text ?? '';
  const at = found?.index ?? listAt(file, root, spec.event).length;
  return setJson(text, [...spec.event, at], spec.handler);
}
