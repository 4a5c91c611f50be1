/**
 * One error vocabulary per protocol: for every status gatehouse can answer
 * with (its own errors, and upstream errors it relays) and every client
 * protocol, the error type of a whole answer and of an error event inside a
 * translated stream agree, and both are the vendor's documented type.
 */
import { describe, expect, it } from 'vitest';
import { HttpError } from '../../../../src/http/errors.ts';
import { PROTOCOLS } from '../../../../src/proxy/protocols/registry.ts';
import { anthropic } from '../../../../src/proxy/protocols/anthropic/messages.ts';
import { gemini } from '../../../../src/proxy/protocols/gemini/generate.ts';
import { openaiChat } from '../../../../src/proxy/protocols/openai/chat.ts';
import { openaiResponses } from '../../../../src/proxy/protocols/openai/responses.ts';
import type { ClientAdapter, Conversation } from '../../../../src/proxy/translate/model.ts';

/** The proxy's own statuses (400, 401, 404, 413, 501, 502, 504) and the upstream ones it relays. */
const STATUSES = [400, 401, 403, 404, 413, 429, 500, 501, 502, 503, 504, 529] as const;
type Status = (typeof STATUSES)[number];

/**
 * OpenAI: https://platform.openai.com/docs/guides/error-codes and the API's
 * error object. Every 4xx but 429 is `invalid_request_error` (a wrong key is
 * `invalid_request_error` with code `invalid_api_key`, as decisions.md fixes
 * it), 429 a rate-limit error, 5xx `server_error`.
 */
const OPENAI: Record<Status, string> = {
  400: 'invalid_request_error',
  401: 'invalid_request_error',
  403: 'invalid_request_error',
  404: 'invalid_request_error',
  413: 'invalid_request_error',
  429: 'rate_limit_error',
  500: 'server_error',
  501: 'server_error',
  502: 'server_error',
  503: 'server_error',
  504: 'server_error',
  529: 'server_error',
};

/**
 * Anthropic: https://docs.anthropic.com/en/api/errors ("HTTP errors": 400,
 * 401, 403, 404, 413, 429, 500, 529 by name; other 4XX invalid_request_error;
 * the other 5xx are the API's own errors, api_error).
 */
const ANTHROPIC: Record<Status, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  501: 'api_error',
  502: 'api_error',
  503: 'api_error',
  504: 'api_error',
  529: 'overloaded_error',
};

/**
 * Gemini: https://ai.google.dev/gemini-api/docs/troubleshooting#error-codes
 * (400 INVALID_ARGUMENT, 403 PERMISSION_DENIED, 404 NOT_FOUND, 429
 * RESOURCE_EXHAUSTED, 500 INTERNAL, 503 UNAVAILABLE, 504 DEADLINE_EXCEEDED)
 * and Google's HTTP mapping of google.rpc.Code
 * (https://cloud.google.com/apis/design/errors#handling_errors: 401
 * UNAUTHENTICATED, 501 UNIMPLEMENTED; a bad gateway is UNAVAILABLE).
 */
const GEMINI: Record<Status, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  413: 'INVALID_ARGUMENT',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  501: 'UNIMPLEMENTED',
  502: 'UNAVAILABLE',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
  529: 'INTERNAL',
};

const CONV: Conversation = { model: 'm', system: undefined, messages: [], stream: true, sse: true };

/** The data of the one SSE frame an error event encodes to. */
function frame(text: string): Record<string, unknown> {
  const data = /^data: (.*)$/m.exec(text)?.[1];
  expect(data).toBeDefined();
  return JSON.parse(data ?? '') as Record<string, unknown>;
}

interface Client {
  protocol: keyof typeof PROTOCOLS;
  adapter: ClientAdapter;
  documented: Record<Status, string>;
  /** The type a whole error answer carries. */
  answerType(body: unknown): unknown;
  /** The type the stream's error event carries. */
  eventType(data: Record<string, unknown>): unknown;
}

const error = (body: unknown) => (body as { error: Record<string, unknown> }).error;

const CLIENTS: [string, Client][] = [
  [
    'OpenAI chat completions',
    {
      protocol: 'openai',
      adapter: openaiChat,
      documented: OPENAI,
      answerType: (b) => error(b)['type'],
      eventType: (d) => error(d)['type'],
    },
  ],
  [
    'OpenAI Responses',
    {
      // The Responses stream's `error` event names the type in `code`.
      protocol: 'openai',
      adapter: openaiResponses,
      documented: OPENAI,
      answerType: (b) => error(b)['type'],
      eventType: (d) => d['code'],
    },
  ],
  [
    'Anthropic messages',
    {
      protocol: 'anthropic',
      adapter: anthropic,
      documented: ANTHROPIC,
      answerType: (b) => error(b)['type'],
      eventType: (d) => error(d)['type'],
    },
  ],
  [
    'Gemini generateContent',
    {
      protocol: 'gemini',
      adapter: gemini,
      documented: GEMINI,
      answerType: (b) => error(b)['status'],
      eventType: (d) => error(d)['status'],
    },
  ],
];

describe.each(CLIENTS)('%s', (_name, client) => {
  it.each(STATUSES)('%i: the same documented type before and inside a stream', (status) => {
    const before = client.answerType(PROTOCOLS[client.protocol].errors.body(new HttpError(status, 'went wrong')));
    const inside = client.eventType(
      frame(client.adapter.streamEncoder(CONV).encode({ type: 'error', status, message: 'went wrong' })),
    );
    expect(before).toBe(client.documented[status]);
    expect(inside).toBe(before);
    expect(PROTOCOLS[client.protocol].errors.type(status)).toBe(before);
  });
});
