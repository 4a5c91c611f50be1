/**
 * Every kind of review gatehouse serves, one line each: the record the review
 * server and the hub read. A new kind is a folder beside plan/ and code/ and a
 * line here.
 */
import type { ReviewKind as KindInContract } from '../hub/contract.ts';
import { annotate } from './annotate/kind.ts';
import { code } from './code/kind.ts';
import type { ReviewKind } from './kind.ts';
import { plan } from './plan/kind.ts';

// Exactly the kinds the hub's API names (src/hub/contract.ts): one missing or extra fails the typecheck.
const REGISTRY = {
  plan,
  code,
  annotate,
} satisfies Record<KindInContract, unknown>;

export type KindName = keyof typeof REGISTRY;
/** What a review of kind `K` shows (a hub stores it as submitted). */
export type PayloadOf<K extends KindName> = K extends KindName
  ? (typeof REGISTRY)[K] extends ReviewKind<K, infer P, infer _>
    ? P
    : never
  : never;
/** A review of kind `K`'s decision. */
export type DecisionOf<K extends KindName> = K extends KindName
  ? (typeof REGISTRY)[K] extends ReviewKind<K, infer _, infer D>
    ? D
    : never
  : never;

/**
 * The registry, typed so that indexing it with a review's own kind gives the
 * functions that take that review's payload and decision (no cast between them).
 */
export const REVIEW_KINDS: { readonly [K in KindName]: ReviewKind<K, PayloadOf<K>, DecisionOf<K>> } = REGISTRY;

export const KIND_NAMES = Object.keys(REVIEW_KINDS) as readonly KindName[];

/** Whether `name` is a kind of review gatehouse serves (a stored row's, a submission's). */
export function isKindName(name: string): name is KindName {
  return Object.hasOwn(REVIEW_KINDS, name);
}
