/**
 * Carries signed reasoning across turns for clients whose wire has no place
 * for it (an OpenAI chat client drops Anthropic thinking; no client but
 * Gemini's keeps a thought signature on a function call). Providers refuse a
 * tool-use turn whose reasoning went missing, so the proxy remembers it by
 * tool call id and puts it back when the client echoes the call.
 */
import type { Conversation, ModelResponse, ReasoningPart } from './model.ts';
import { ownedBy, type CarriedReasoning, type Store } from './stores.ts';

const signed = (p: ReasoningPart): boolean => p.signature !== undefined || p.encrypted !== undefined;

/** Remembers a response's signed reasoning under each of its tool calls, for the key that asked. */
export async function rememberReasoning(
  store: Store<CarriedReasoning>,
  owner: string,
  res: ModelResponse,
): Promise<void> {
  const reasoning = res.parts.filter((p): p is ReasoningPart => p.type === 'reasoning' && signed(p));
  const writes: Promise<void>[] = [];
  for (const p of res.parts) {
    if (p.type !== 'tool_call' || (reasoning.length === 0 && p.signature === undefined)) continue;
    const size = reasoning.reduce(
      (n, r) => n + r.text.length + (r.signature?.length ?? 0) + (r.encrypted?.length ?? 0),
      p.signature?.length ?? 0,
    );
    const value: CarriedReasoning = { reasoning };
    if (p.signature !== undefined) value.signature = p.signature;
    writes.push(store.set(ownedBy(owner, p.id), value, size + 64));
  }
  await Promise.all(writes);
}

/** Puts the same key's remembered reasoning back into assistant turns that lost it. */
export async function restoreReasoning(
  store: Store<CarriedReasoning>,
  owner: string,
  conv: Conversation,
): Promise<void> {
  for (const m of conv.messages) {
    if (m.role !== 'assistant') continue;
    let restored = m.parts.some((p) => p.type === 'reasoning' && signed(p));
    for (const p of m.parts) {
      if (p.type !== 'tool_call') continue;
      const carried = await store.get(ownedBy(owner, p.id));
      if (!carried) continue;
      if (p.signature === undefined && carried.signature !== undefined) p.signature = carried.signature;
      if (!restored && carried.reasoning.length > 0) {
        // Unsigned copies the client echoed (text only) give way to the signed originals.
        m.parts = [...carried.reasoning, ...m.parts.filter((q) => q.type !== 'reasoning')];
        restored = true;
      }
    }
  }
}
