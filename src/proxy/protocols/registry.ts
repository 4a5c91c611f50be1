/**
 * Every protocol gatehouse speaks, one line each: the record the core reads.
 * A new protocol is a folder beside these and a line here.
 */
import { anthropic } from './anthropic/index.ts';
import { gemini } from './gemini/index.ts';
import { openai } from './openai/index.ts';
import type { ProtocolSpec } from './protocol.ts';

export const PROTOCOLS = {
  openai,
  anthropic,
  gemini,
} as const satisfies Readonly<Record<string, ProtocolSpec>>;

/** A wire protocol an upstream speaks (and a client family uses). */
export type Protocol = keyof typeof PROTOCOLS;

export type ProtocolRecord = Readonly<Record<Protocol, ProtocolSpec>>;

export const PROTOCOL_NAMES = Object.keys(PROTOCOLS) as readonly Protocol[];
