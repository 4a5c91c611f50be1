/**
 * Gemini generateContent / streamGenerateContent / countTokens, where the
 * path carries model and method (`models/gemini-2.5-flash:generateContent`).
 */
import { isObject } from '../../../json.ts';
import type { JsonObject } from '../../translate/model.ts';
import { estimateConversation } from '../../translate/tokens.ts';
import type { CatalogEntry, Operation, ProtocolSpec } from '../protocol.ts';
import { listedModels, lastNumber, stringValues } from '../shared.ts';
import { errors } from './errors.ts';
import { gemini as adapter } from './generate.ts';

const modelPath = (model: string, method: string): string => `/v1beta/models/${encodeURIComponent(model)}:${method}`;
const sse = (query: { alt?: unknown }) => ({ sse: query.alt === 'sse' });
const outputCap = (body: JsonObject): unknown => {
  const config = body['generationConfig'];
  return isObject(config) ? config['maxOutputTokens'] : undefined;
};

export const operations = {
  generateContent: {
    name: 'generateContent',
    genAiOperation: 'generate_content',
    upstreamPath: (model) => modelPath(model, 'generateContent'),
    client: adapter,
    stream: false,
    context: sse,
    outputCap,
  },
  streamGenerateContent: {
    name: 'streamGenerateContent',
    genAiOperation: 'generate_content',
    upstreamPath: (model) => modelPath(model, 'streamGenerateContent'),
    client: adapter,
    stream: true,
    context: sse,
    outputCap,
  },
  countTokens: {
    name: 'countTokens',
    upstreamPath: (model) => modelPath(model, 'countTokens'),
    stream: false,
    count: {
      // `contents`, or a whole generateContentRequest.
      estimate: (body, model) =>
        estimateConversation(
          adapter.decodeRequest(isObject(body['generateContentRequest']) ? body['generateContentRequest'] : body, {
            model,
          }),
        ),
      answer: (tokens) => ({ totalTokens: tokens }),
    },
  },
} as const satisfies Record<string, Operation>;

const METHODS: Readonly<Record<string, Operation>> = operations;

/** `gemini-2.5-flash:streamGenerateContent` (or `models/…`): the method and the model. */
function fromPath(param: string): { operation: Operation; model: string } | undefined {
  const match = /^(.+):([A-Za-z]+)$/.exec(param);
  const operation = match?.[2] === undefined ? undefined : METHODS[match[2]];
  if (!match?.[1] || !operation || !Object.hasOwn(METHODS, match[2] as string)) return undefined;
  return { operation, model: match[1].replace(/^models\//, '') };
}

function entry(e: CatalogEntry): unknown {
  return {
    name: `models/${e.id}`,
    baseModelId: e.id,
    version: '001',
    displayName: e.displayName,
    supportedGenerationMethods: Object.keys(METHODS),
  };
}

export const gemini: ProtocolSpec = {
  genAiProvider: 'gcp.gemini',
  sdkHeaders: ['x-goog-api-client'],
  routes: [
    { path: '/v1beta/models/:model', fromPath },
    {
      path: '/v1beta/models/:model/countTokens',
      fromPath: (param) => ({ operation: operations.countTokens, model: param.replace(/^models\//, '') }),
    },
    // @google/genai's default `v1` API version: the same paths below /v1.
    { path: '/v1/models/:model', fromPath },
  ],
  family: {
    // @google/genai 3 defaults to the `v1` API version: generation paths below /v1 too.
    paths: /^\/v1beta\/|^\/v1\/models\/[^/]+:[A-Za-z]+$/,
    sniff: (get, query) => get('x-goog-api-key') !== '' || /(?:^|&)key=/.test(query),
  },
  credentials: {
    header: 'x-goog-api-key',
    query: 'key',
    authorize(headers, apiKey) {
      if (apiKey !== undefined) headers['x-goog-api-key'] = apiKey;
    },
  },
  upstream: {
    generate: (model, stream) =>
      stream
        ? { path: modelPath(model, 'streamGenerateContent'), query: 'alt=sse' }
        : { path: modelPath(model, 'generateContent') },
    models: { path: '/v1beta/models', query: 'pageSize=1000' },
    warmup: (model) => ({
      path: modelPath(model, 'generateContent'),
      body: { contents: [{ role: 'user', parts: [{ text: 'ping' }] }], generationConfig: { maxOutputTokens: 1 } },
    }),
  },
  adapter,
  errors,
  // Every streamed chunk carries usageMetadata; the last one counts. Thinking tokens are output too.
  usage(text) {
    const input = lastNumber(text, 'promptTokenCount');
    const output = lastNumber(text, 'candidatesTokenCount');
    if (input === undefined && output === undefined) return undefined;
    const thoughts = lastNumber(text, 'thoughtsTokenCount') ?? 0;
    return {
      input: input ?? 0,
      output: (output ?? 0) + thoughts,
      cached: lastNumber(text, 'cachedContentTokenCount') ?? 0,
    };
  },
  // A stream's last chunk names each candidate's.
  finishReasons: (text) => stringValues(text, 'finishReason'),
  models: {
    listPaths: ['/v1beta/models'],
    infoPaths: ['/v1beta/models/:model'],
    parse: (json) => listedModels((json as { models?: unknown } | null)?.models, 'name', 'displayName'),
    entry,
    list: (entries) => ({ models: entries.map(entry) }),
  },
};
