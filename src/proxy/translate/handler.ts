import type { Context } from 'koa';
import type { Dispatcher } from 'undici';
import type { Protocol } from '../../config/proxy.ts';
import { proxyErrors } from '../errors.ts';
import type { HttpError } from '../../http/errors.ts';
import type { Endpoint, Route } from '../routing.ts';
import { sendUpstream, upstreamFailure } from '../upstreams.ts';
import { anthropic } from './anthropic.ts';
import { rememberReasoning, restoreReasoning } from './carry.ts';
import { Collector } from './collect.ts';
import { gemini } from './gemini.ts';
import { jsonBody } from './json-body.ts';
import { TranslateError, type ClientAdapter, type Conversation, type JsonObject, type ModelResponse, type StreamEvent, type UpstreamAdapter } from './model.ts';
import { openaiChat } from './openai-chat.ts';
import { openaiResponses, responseId } from './openai-responses.ts';
import { reasoningStore, responseStore } from './responses-store.ts';
import { upstreamError } from './upstream-error.ts';
import { parseJsonData } from './wire.ts';

const UPSTREAMS: Record<Protocol, UpstreamAdapter> = { openai: openaiChat, anthropic, gemini };

/** The client side of each endpoint that translation serves. */
const CLIENTS: Partial<Record<Endpoint, ClientAdapter>> = {
  'chat.completions': openaiChat,
  responses: openaiResponses,
  messages: anthropic,
  generateContent: gemini,
  streamGenerateContent: gemini,
};

function clientAdapter(route: Route): ClientAdapter {
  const client = CLIENTS[route.endpoint];
  if (!client) throw proxyErrors.noTranslation(route.family, route.upstream.config.protocol, route.endpoint);
  return client;
}

/** The error event with which an SSE stream of `endpoint` ends, in its client's wire; undefined if it has none. */
export function streamErrorEvent(endpoint: Endpoint, error: HttpError): string | undefined {
  const conv: Conversation = { model: '', system: undefined, messages: [], stream: true, sse: true };
  return CLIENTS[endpoint]?.streamEncoder(conv).encode(errorEvent(error));
}

function errorEvent(error: HttpError): StreamEvent {
  const { status, message, kind } = error;
  return { type: 'error', status, message, ...(kind !== undefined && { kind }) };
}

function upstreamPath(protocol: Protocol, model: string, stream: boolean): { path: string; query?: string } {
  if (protocol === 'openai') return { path: '/chat/completions' };
  if (protocol === 'anthropic') return { path: '/v1/messages' };
  const base = `/v1beta/models/${encodeURIComponent(model)}`;
  return stream ? { path: `${base}:streamGenerateContent`, query: 'alt=sse' } : { path: `${base}:generateContent` };
}

function decode(client: ClientAdapter, ctx: Context, route: Route): Conversation {
  try {
    return client.decodeRequest(route.body, { model: route.clientModel, stream: route.stream, sse: ctx.query.alt === 'sse' });
  } catch (error) {
    if (error instanceof TranslateError) throw proxyErrors.invalidRequest(error.message);
    throw error;
  }
}

/** Responses API: a previous response's conversation goes in front of this request's input. */
function continueConversation(conv: Conversation): void {
  if (conv.previousResponseId === undefined) return;
  const previous = responseStore.get(conv.previousResponseId);
  if (!previous) throw proxyErrors.previousResponseNotFound(conv.previousResponseId);
  conv.messages = [...previous.messages, ...conv.messages];
  conv.system ??= previous.system;
}

function storeResponse(conv: Conversation, res: ModelResponse, requestBytes: number): void {
  if (conv.store === false) return;
  const messages = [...conv.messages, { role: 'assistant' as const, parts: [...res.parts] }];
  const outputBytes = res.parts.reduce((n, p) => n + (p.type === 'tool_call' ? p.arguments.length : p.text.length), 0);
  responseStore.set(responseId(res), { system: conv.system, messages }, requestBytes + outputBytes);
}

/** Encoding an upstream request or decoding its answer can fail on a malformed payload: 400 or 502. */
function translating<T>(status: 400 | 502, fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (!(error instanceof TranslateError)) throw error;
    if (status === 400) throw proxyErrors.invalidRequest(error.message);
    throw proxyErrors.upstreamError(502, `Upstream answer could not be translated: ${error.message}`, {});
  }
}

/**
 * Answers a model request whose upstream speaks another protocol than the
 * client: decode the client's request into the internal form, encode it for
 * the upstream, then decode the answer and encode it for the client (event
 * by event when streaming).
 */
export async function handleTranslated(ctx: Context, route: Route): Promise<void> {
  const client = clientAdapter(route);
  const protocol = route.upstream.config.protocol;
  const upstream = UPSTREAMS[protocol];
  const conv = decode(client, ctx, route);
  continueConversation(conv);
  restoreReasoning(reasoningStore, conv);
  const payload = translating(400, () => upstream.encodeRequest({ ...conv, model: route.upstreamModel }));
  const { body, length } = jsonBody(payload, route.rawBytes);
  const { path, query } = upstreamPath(protocol, route.upstreamModel, conv.stream);
  const response = await sendUpstream(route.upstream, {
    method: 'POST',
    path,
    ...(query === undefined ? {} : { query }),
    headers: {
      'content-type': 'application/json',
      accept: conv.stream ? 'text/event-stream' : 'application/json',
      ...(length !== undefined && { 'content-length': String(length) }),
    },
    body,
    signal: route.signal,
  });
  if (response.statusCode >= 300) {
    const text = await response.body.text().catch(() => '');
    const retryAfter = response.headers['retry-after'];
    throw upstreamError(response.statusCode, text, typeof retryAfter === 'string' ? retryAfter : undefined, route.family);
  }
  if (!conv.stream) {
    const text = await readAll(route, response);
    const res = translating(502, () => upstream.decodeResponse(parseUpstreamJson(text)));
    rememberReasoning(reasoningStore, res);
    if (route.endpoint === 'responses') storeResponse(conv, res, route.rawBytes);
    ctx.status = 200;
    ctx.body = client.encodeResponse(res, conv);
    return;
  }
  streamTranslated(ctx, route, conv, client, upstream, response);
}

async function readAll(route: Route, response: Dispatcher.ResponseData): Promise<string> {
  try {
    return await response.body.text();
  } catch (error) {
    throw upstreamFailure(route.upstream, error);
  }
}

function parseUpstreamJson(text: string): JsonObject {
  const value = parseJsonData(text);
  if (!value) throw new TranslateError('the body is not a JSON object');
  return value;
}

/**
 * Writes the translated stream straight to the socket, one write per upstream
 * chunk as it arrives (Koa's respond() is bypassed, as for pass-through:
 * its stream pipeline costs a measurable share of the per-request budget).
 * The client's backpressure pauses the upstream body.
 */
function streamTranslated(
  ctx: Context, route: Route, conv: Conversation, client: ClientAdapter, upstream: UpstreamAdapter, response: Dispatcher.ResponseData,
): void {
  const decoder = upstream.streamDecoder();
  const encoder = client.streamEncoder(conv);
  // The answer as a whole, for previous_response_id and for reasoning a client cannot carry; text only when stored.
  const collector = new Collector();
  const keepText = route.endpoint === 'responses' && conv.store !== false;
  const { res } = ctx;
  const body = response.body;
  let finished = false;

  const encode = (events: StreamEvent[]): string => {
    let out = '';
    for (const e of events) {
      if (keepText || e.type !== 'text') collector.add(e);
      out += encoder.encode(e);
    }
    return out;
  };
  const write = (text: string): void => {
    if (text !== '' && !res.write(text)) {
      body.pause();
      res.once('drain', () => body.resume());
    }
  };
  const finish = (events: StreamEvent[]): void => {
    if (finished) return;
    finished = true;
    write(encode(events));
    if (!collector.error && collector.stop !== undefined) {
      const answer = { ...collector.response(), id: collector.id };
      rememberReasoning(reasoningStore, answer);
      if (keepText) storeResponse(conv, answer, route.rawBytes);
    }
    res.end(encoder.end());
  };

  ctx.respond = false;
  res.writeHead(200, {
    // Gemini streams a JSON array unless the client asked for SSE (`alt=sse`).
    'content-type': route.family === 'gemini' && conv.sse === false ? 'application/json' : 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
  });
  body.setEncoding('utf8');
  /** A fault in translation ends this stream with the client's error event; it must never reach the process. */
  const guarded = (step: () => void): void => {
    try {
      step();
    } catch {
      body.destroy();
      try {
        if (finished) res.end();
        else finish([{ type: 'error', status: 502, message: 'Upstream stream could not be translated' }]);
      } catch {
        res.destroy();
      }
    }
  };
  body.on('data', (chunk: string) => guarded(() => {
    if (finished) return;
    write(encode(decoder.push(chunk)));
    // An upstream error event ends the answer; the rest of its body is not read.
    if (collector.error) {
      finish([]);
      body.destroy();
    }
  }));
  body.once('end', () => guarded(() => finish(decoder.end())));
  body.once('error', (error: Error) => {
    if (route.signal.left) {
      res.destroy();
      return;
    }
    finish([errorEvent(upstreamFailure(route.upstream, error))]);
  });
  route.streams.add(res, (error) => {
    body.destroy();
    finish([errorEvent(error)]);
  });
}
