/**
 * What translation remembers between requests: the Responses API's
 * `previous_response_id` conversations, and reasoning that a client family
 * cannot carry back itself (keyed by the tool call it preceded). Callers see
 * the asynchronous Store interface; the bounded in-memory TtlStore backs it
 * today, and a shared backend (Redis) can take its place without them noticing.
 */
import type { Message, ReasoningPart } from './model.ts';

interface Entry<V> {
  value: V;
  size: number;
  expires: number;
}

export interface StoreLimits {
  maxEntries: number;
  /** Approximate bytes over all entries. */
  maxBytes: number;
  ttlMs: number;
}

/** Insertion-ordered map: the oldest entry goes first when a limit is hit. */
export class TtlStore<V> {
  private readonly entries = new Map<string, Entry<V>>();
  private bytes = 0;
  private readonly limits: StoreLimits;
  private readonly now: () => number;

  constructor(limits: StoreLimits, now: () => number = Date.now) {
    this.limits = limits;
    this.now = now;
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expires <= this.now()) {
      this.delete(key);
      return undefined;
    }
    return entry.value;
  }

  set(key: string, value: V, size: number): void {
    this.delete(key);
    if (size > this.limits.maxBytes) return;
    this.entries.set(key, { value, size, expires: this.now() + this.limits.ttlMs });
    this.bytes += size;
    for (const [oldest, entry] of this.entries) {
      const full = this.entries.size > this.limits.maxEntries || this.bytes > this.limits.maxBytes;
      if (!full && entry.expires > this.now()) break;
      this.delete(oldest);
    }
  }

  private delete(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.bytes -= entry.size;
    this.entries.delete(key);
  }
}

/** What a stored response continues from: the whole conversation including its own output. */
export interface StoredConversation {
  system: string | undefined;
  messages: Message[];
}

/** Reasoning a tool call came after, and the call's own signature. */
export interface CarriedReasoning {
  reasoning: ReasoningPart[];
  signature?: string;
}

/** A keyed store with a time to live; `size` is what the entry counts against a byte limit. */
export interface Store<V> {
  get(key: string): Promise<V | undefined>;
  set(key: string, value: V, size: number): Promise<void>;
}

/** A Store over an in-memory TtlStore. */
export function memoryStore<V>(limits: StoreLimits, now?: () => number): Store<V> {
  const store = new TtlStore<V>(limits, now);
  return {
    get: (key) => Promise.resolve(store.get(key)),
    set: (key, value, size) => {
      store.set(key, value, size);
      return Promise.resolve();
    },
  };
}

/**
 * A stored item's key: its id within the calling key's own space (empty with auth off), so one person can
 * neither continue nor be fed another's conversation or reasoning, whatever ids the upstreams repeat.
 */
export const ownedBy = (owner: string, id: string): string => `${owner}/${id}`;

/** Every store translation uses, built per app (two apps in a process share none). */
export interface TranslationStores {
  responses: Store<StoredConversation>;
  reasoning: Store<CarriedReasoning>;
  /**
   * Passed-through answers a key may continue by id (response-owners.ts), under `ownedBy(key, id)`: kept with the
   * limits of `responses`, whose conversations they stand for.
   */
  owners: Store<true>;
}

export interface StoresConfig {
  responses: StoreLimits;
  reasoning: StoreLimits;
}

export function memoryStores(config: StoresConfig): TranslationStores {
  return {
    responses: memoryStore(config.responses),
    reasoning: memoryStore(config.reasoning),
    owners: memoryStore(config.responses),
  };
}
