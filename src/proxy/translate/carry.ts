/**
 * Carries signed reasoning across turns for clients whose wire has no place
 * for it (an OpenAI chat client drops Anthropic thinking; no client but
 * Gemini's keeps a thought signature on a function call). Providers refuse a
 * tool-use turn whose reasoning went missing, so the proxy remembers it by
 * tool call id and puts it back when the client echoes the call.
 */
import type { Conversation, ModelResponse, ReasoningPart } from './model.ts';
import type { CarriedReasoning, TtlStore } from './responses-store.ts';

/** Remembers a response's signed reasoning under each of its tool calls. */
export function rememberReasoning(store: TtlStore<CarriedReasoning>, res: ModelResponse): void {
  const reasoning = res.parts.filter((p): p is ReasoningPart => p.type === 'reasoning' && (p.signature !== undefined || p.encrypted !== undefined));
  for (const p of res.parts) {
    if (p.type !== 'tool_call' || (reasoning.length === 0 && p.signature === undefined)) continue;
    const size = reasoning.reduce((n, r) => n + r.text.length + (r.signature?.length ?? 0) + (r.encrypted?.length ?? 0), p.signature?.length ?? 0);
    const value: CarriedReasoning = { reasoning };
    if (p.signature !== undefined) value.signature = p.signature;
    store.set(p.id, value, size + 64);
  }
}

/** Puts remembered reasoning back into assistant turns that lost it. */
export function restoreReasoning(store: TtlStore<CarriedReasoning>, conv: Conversation): void {
  if (store.size === 0) return;
  for (const m of conv.messages) {
    if (m.role !== 'assistant') continue;
    const signed = m.parts.some((p) => p.type === 'reasoning' && (p.signature !== undefined || p.encrypted !== undefined));
    let restored = signed;
    for (const p of m.parts) {
      if (p.type !== 'tool_call') continue;
      const carried = store.get(p.id);
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
