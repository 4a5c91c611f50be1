import { describe, expect, it } from 'vitest';
import { HttpError } from '../../../src/http/errors.ts';
import { proxyErrors } from '../../../src/proxy/errors.ts';
import { Families } from '../../../src/proxy/families.ts';
import { PROTOCOLS } from '../../../src/proxy/protocols/registry.ts';

const families = new Families(PROTOCOLS);
const familyOf = (path: string) => families.of(path);
const errorBody = families.errorBody.bind(families);

describe('familyOf', () => {
  it.each([
    ['/v1/chat/completions', 'openai'],
    ['/v1/completions', 'openai'],
    ['/v1/responses', 'openai'],
    ['/v1/images/edits', 'openai'],
    ['/v1/audio/transcriptions', 'openai'],
    ['/v1/models', 'openai'],
    ['/v1/unknown', 'openai'],
    ['/v1/messages', 'anthropic'],
    ['/v1/messages/count_tokens', 'anthropic'],
    ['/v1/models/claude', 'anthropic'],
    ['/v1beta/models', 'gemini'],
    ['/v1beta/models/gemini-2.5-pro:streamGenerateContent', 'gemini'],
    ['/v1/models/gemini-2.5-pro:generateContent', 'gemini'],
    ['/v1/models/detect', 'other'],
    ['/v1/api/event_logging', 'other'],
    ['/v1/api/event_logging/batch', 'other'],
    ['/healthz', 'other'],
    ['/internal/warmup', 'other'],
    ['/mcp/web_reader/mcp', 'other'],
    ['/', 'other'],
  ])('%s → %s', (path, family) => {
    expect(familyOf(path)).toBe(family);
  });
});

describe("errorBody: each vendor's own error shape", () => {
  it('401: the shapes decisions.md fixes', () => {
    const error = proxyErrors.unauthorized();
    expect(errorBody('openai', error)).toEqual({
      error: { message: error.message, type: 'invalid_request_error', param: null, code: 'invalid_api_key' },
    });
    expect(errorBody('anthropic', error)).toEqual({
      type: 'error',
      error: { type: 'authentication_error', message: error.message },
    });
    expect(errorBody('gemini', error)).toEqual({
      error: { code: 401, message: error.message, status: 'UNAUTHENTICATED' },
    });
    expect(errorBody('other', error)).toEqual({ error: error.message });
  });

  it.each([
    [proxyErrors.invalidJson(), 'invalid_request_error', 'invalid_request_error', 'INVALID_ARGUMENT'],
    [proxyErrors.modelNotFound('x'), 'invalid_request_error', 'not_found_error', 'NOT_FOUND'],
    [proxyErrors.tooLarge(10), 'invalid_request_error', 'request_too_large', 'INVALID_ARGUMENT'],
    [proxyErrors.noTranslation('openai', 'gemini', 'responses'), 'server_error', 'api_error', 'UNIMPLEMENTED'],
    [proxyErrors.upstreamUnreachable('u'), 'server_error', 'api_error', 'UNAVAILABLE'],
    [proxyErrors.upstreamTimeout('u', 5), 'server_error', 'api_error', 'DEADLINE_EXCEEDED'],
    [new HttpError(429, 'slow down'), 'rate_limit_error', 'rate_limit_error', 'RESOURCE_EXHAUSTED'],
    [new HttpError(403, 'no'), 'invalid_request_error', 'permission_error', 'PERMISSION_DENIED'],
    [new HttpError(500, 'oops'), 'server_error', 'api_error', 'INTERNAL'],
  ])('%s', (error, openaiType, anthropicType, geminiStatus) => {
    expect(errorBody('openai', error)).toEqual({
      error: { message: error.message, type: openaiType, param: null, code: error.kind ?? null },
    });
    expect(errorBody('anthropic', error)).toEqual({
      type: 'error',
      error: { type: anthropicType, message: error.message },
    });
    expect(errorBody('gemini', error)).toEqual({
      error: { code: error.status, message: error.message, status: geminiStatus },
    });
    expect(errorBody('other', error)).toEqual({ error: error.message });
  });

  it("the catalogue's statuses", () => {
    expect(
      [
        proxyErrors.unauthorized(),
        proxyErrors.invalidJson(),
        proxyErrors.missingModel(),
        proxyErrors.tooLarge(1),
        proxyErrors.modelNotFound('m'),
        proxyErrors.routeNotFound('GET', '/x'),
        proxyErrors.noTranslation('a', 'b', 'c'),
        proxyErrors.upstreamUnreachable('u'),
        proxyErrors.upstreamTimeout('u', 1),
      ].map((e) => e.status),
    ).toEqual([401, 400, 400, 413, 404, 404, 501, 502, 504]);
  });
});
