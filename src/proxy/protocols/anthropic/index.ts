/** Anthropic messages (and their count_tokens). */
import { estimateConversation } from '../../translate/tokens.ts';
import type { CatalogEntry, Operation, ProtocolSpec } from '../protocol.ts';
import { CREATED, listedModels, STAINLESS_HEADERS, lastNumber, stringValues } from '../shared.ts';
import { errors } from './errors.ts';
import { anthropic as adapter } from './messages.ts';

/** Anthropic requires a version header; clients that send their own keep it. */
const DEFAULT_ANTHROPIC_VERSION = '2023-06-01';

const CREATED_AT = new Date(CREATED * 1000).toISOString();

export const operations = {
  messages: {
    name: 'messages',
    upstreamPath: () => '/v1/messages',
    client: adapter,
    outputCap: (body) => body['max_tokens'],
  },
  countTokens: {
    name: 'messages.count_tokens',
    upstreamPath: () => '/v1/messages/count_tokens',
    count: {
      estimate: (body, model) => estimateConversation(adapter.decodeRequest({ ...body, model }, {})),
      answer: (tokens) => ({ input_tokens: tokens }),
    },
  },
} as const satisfies Record<string, Operation>;

function entry(e: CatalogEntry): unknown {
  return { type: 'model', id: e.id, display_name: e.displayName, created_at: CREATED_AT };
}

export const anthropic: ProtocolSpec = {
  sdkHeaders: [
    'anthropic-version',
    'anthropic-beta',
    'anthropic-dangerous-direct-browser-access',
    ...STAINLESS_HEADERS,
  ],
  routes: [
    { path: '/v1/messages', operation: operations.messages },
    { path: '/v1/messages/count_tokens', operation: operations.countTokens },
  ],
  family: {
    paths: /^\/v1\/messages|^\/v1\/models\/claude$/,
    sniff: (get) => get('anthropic-version') !== '',
  },
  credentials: {
    header: 'x-api-key',
    authorize(headers, apiKey) {
      headers['anthropic-version'] ??= DEFAULT_ANTHROPIC_VERSION;
      if (apiKey !== undefined) headers['x-api-key'] = apiKey;
    },
  },
  upstream: {
    generate: () => ({ path: '/v1/messages' }),
    models: { path: '/v1/models', query: 'limit=1000' },
    warmup: (model) => ({
      path: '/v1/messages',
      body: { model, max_tokens: 1, messages: [{ role: 'user', content: 'ping' }] },
    }),
  },
  adapter,
  errors,
  // A stream's input tokens come in message_start (its first usage), its output tokens in the last message_delta.
  usageAtStart: true,
  // Its input_tokens leaves out the cached ones: input counts the whole prompt, as every other protocol's does.
  usage(text) {
    const input = lastNumber(text, 'input_tokens');
    const output = lastNumber(text, 'output_tokens');
    if (input === undefined && output === undefined) return undefined;
    const cached = lastNumber(text, 'cache_read_input_tokens') ?? 0;
    const cacheWrite = lastNumber(text, 'cache_creation_input_tokens') ?? 0;
    return { input: (input ?? 0) + cached + cacheWrite, output: output ?? 0, cached, cacheWrite };
  },
  // message_start's is null; the answer's (or message_delta's) is the one.
  finishReasons: (text) => stringValues(text, 'stop_reason'),
  models: {
    listPaths: ['/v1/models/claude'],
    infoPaths: [],
    parse: (json) => listedModels((json as { data?: unknown } | null)?.data, 'id', 'display_name'),
    entry,
    list: (entries) => ({
      data: entries.map(entry),
      has_more: false,
      first_id: entries[0]?.id ?? null,
      last_id: entries.at(-1)?.id ?? null,
    }),
  },
};
