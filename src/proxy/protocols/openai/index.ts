/**
 * OpenAI: chat completions, Responses, legacy completions, images and audio.
 * Translated calls go to an OpenAI upstream as chat completions.
 */
import type { CatalogEntry, Operation, ProtocolSpec } from '../protocol.ts';
import { CREATED, listedModels, STAINLESS_HEADERS, lastNumber, stringValues } from '../shared.ts';
import { openaiChat } from './chat.ts';
import { errors } from './errors.ts';
import { openaiResponses } from './responses.ts';
import { newId } from '../../translate/wire.ts';

/** An operation passed through to the same path below base_url (which already ends in /v1). */
function plain(name: string, path: string, extra: Partial<Operation> = {}): Operation {
  return { name, upstreamPath: () => path, ...extra };
}

export const operations = {
  chat: plain('chat.completions', '/chat/completions', {
    client: openaiChat,
    outputCap: (body) => body['max_completion_tokens'] ?? body['max_tokens'],
  }),
  completions: plain('completions', '/completions', {
    outputCap: (body) => body['max_tokens'],
    genAiOperation: 'text_completion',
  }),
  // An upstream with `responses_api: false` gets Responses requests translated to chat completions.
  responses: plain('responses', '/responses', {
    client: openaiResponses,
    outputCap: (body) => body['max_output_tokens'],
    continuable: {
      newId: () => newId('resp_'),
      continues: (body) => body['previous_response_id'],
      kept: (body) => body['store'] !== false,
    },
    servedBy: (upstream) => upstream.responsesApi,
  }),
  imageGenerations: plain('images.generations', '/images/generations'),
  imageEdits: plain('images.edits', '/images/edits'),
  transcriptions: plain('audio.transcriptions', '/audio/transcriptions'),
} as const satisfies Record<string, Operation>;

function entry(e: CatalogEntry): unknown {
  return { id: e.id, object: 'model', created: CREATED, owned_by: e.upstream };
}

export const openai: ProtocolSpec = {
  upstreamSettings: ['responses_api'],
  sdkHeaders: ['openai-organization', 'openai-project', 'openai-beta', ...STAINLESS_HEADERS],
  routes: [
    { path: '/v1/chat/completions', operation: operations.chat },
    { path: '/v1/completions', operation: operations.completions },
    { path: '/v1/responses', operation: operations.responses, websocket: true },
    { path: '/v1/images/generations', operation: operations.imageGenerations },
    // Multipart bodies stream through (a JSON body takes the JSON path).
    { path: '/v1/images/edits', operation: operations.imageEdits, multipart: true },
    { path: '/v1/audio/transcriptions', operation: operations.transcriptions, multipart: true },
  ],
  family: { fallback: /^\/v1\//, shared: /^\/v1\/models(?:\/[^/]+)?$/ },
  credentials: {
    header: 'authorization',
    scheme: 'Bearer',
    authorize(headers, apiKey) {
      if (apiKey !== undefined) headers['authorization'] = `Bearer ${apiKey}`;
    },
  },
  upstream: {
    generate: () => ({ path: '/chat/completions' }),
    models: { path: '/models' },
    warmup: (model) => ({
      path: '/chat/completions',
      body: { model, max_tokens: 1, messages: [{ role: 'user', content: 'ping' }] },
    }),
  },
  adapter: openaiChat,
  errors,
  // Chat names prompt/completion tokens, Responses input/output tokens; both name cached_tokens.
  usage(text) {
    const input = lastNumber(text, 'prompt_tokens') ?? lastNumber(text, 'input_tokens');
    const output = lastNumber(text, 'completion_tokens') ?? lastNumber(text, 'output_tokens');
    if (input === undefined && output === undefined) return undefined;
    return { input: input ?? 0, output: output ?? 0, cached: lastNumber(text, 'cached_tokens') ?? 0 };
  },
  // Chat and completions name a finish_reason per choice. A Responses answer has none: its status stands for it (an
  // incomplete one's reason), near the start of the response object, which its last stream event repeats whole.
  finishMark: '"response"',
  finishReasons(text) {
    const reasons = stringValues(text, 'finish_reason');
    if (reasons.length > 0) return reasons;
    const status = stringValues(text, 'status')[0];
    if (status === undefined) return [];
    const incomplete = /"incomplete_details"\s*:\s*\{\s*"reason"\s*:\s*"([^"\\]*)"/.exec(text)?.[1];
    return [status === 'incomplete' && incomplete !== undefined ? incomplete : status];
  },
  models: {
    listPaths: ['/v1/models'],
    infoPaths: ['/v1/models/:model'],
    parse: (json) => listedModels((json as { data?: unknown } | null)?.data, 'id', 'display_name'),
    entry,
    list: (entries) => ({ object: 'list', data: entries.map(entry) }),
  },
};
