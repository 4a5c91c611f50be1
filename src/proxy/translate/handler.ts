import type { Dispatcher } from 'undici';
import type { Logger } from '../../log.ts';
import type { ProxyContext, TokenUsage } from '../context.ts';
import { proxyErrors } from '../errors.ts';
import type { Route } from '../routing.ts';
import { sendUpstream, upstreamFailure } from '../upstreams.ts';
import { rememberReasoning, restoreReasoning } from './carry.ts';
import { Collector } from './collect.ts';
import { jsonBody } from './json-body.ts';
import {
  TranslateError,
  type ClientAdapter,
  type Conversation,
  type JsonObject,
  type ModelResponse,
  type StopReason,
  type StreamEvent,
  type UpstreamAdapter,
  type Usage,
} from './model.ts';
import type { Spending } from '../spending.ts';
import { ownedBy, type TranslationStores } from './stores.ts';
import { upstreamError } from './upstream-error.ts';
import { errorEvent, EventStream } from '../event-stream.ts';
import { parseJsonData } from './wire.ts';

/** The upstream's token counts; a token per 4 bytes of request and answer when it reported none. */
function tokenUsage(usage: Usage, requestBytes: number, answerChars: number): TokenUsage {
  if (usage.input > 0 || usage.output > 0) {
    const { input, output, cacheRead = 0, cacheWrite = 0 } = usage;
    return { input, output, cached: cacheRead, cacheWrite, estimated: false };
  }
  const estimate = { input: Math.ceil(requestBytes / 4), output: Math.ceil(answerChars / 4) };
  return { ...estimate, cached: 0, cacheWrite: 0, estimated: true };
}

/** A translated answer's stop reason in each side's words, for its spans. */
function finishReasons(client: ClientAdapter, upstream: UpstreamAdapter, reason: StopReason) {
  return { answer: [client.finishReason(reason)], upstream: [upstream.finishReason(reason)] };
}

function decode(client: ClientAdapter, ctx: ProxyContext, route: Route): Conversation {
  try {
    const context = { model: route.clientModel, stream: route.stream, ...route.operation.context?.(ctx.query) };
    return client.decodeRequest(route.body, context);
  } catch (error) {
    if (error instanceof TranslateError) throw proxyErrors.invalidRequest(error.message);
    throw error;
  }
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

async function readAll(route: Route, response: Dispatcher.ResponseData): Promise<string> {
  try {
    return await response.body.text();
  } catch (error) {
    throw upstreamFailure(route.upstream, error, true);
  }
}

function parseUpstreamJson(text: string): JsonObject {
  const value = parseJsonData(text);
  if (!value) throw new TranslateError('the body is not a JSON object');
  return value;
}

/**
 * Answers model requests whose upstream speaks another protocol than the
 * client: decode the client's request into the internal form, encode it for
 * the upstream, then decode the answer and encode it for the client (event
 * by event when streaming). What it remembers between requests lives in its
 * stores.
 */
export class Translator {
  readonly #stores: TranslationStores;
  readonly #spending: Spending;
  readonly #log: Logger;

  constructor(stores: TranslationStores, spending: Spending, log: Logger) {
    this.#stores = stores;
    this.#spending = spending;
    this.#log = log;
  }

  async handle(ctx: ProxyContext, route: Route): Promise<void> {
    const client = route.operation.client;
    if (!client)
      throw proxyErrors.noTranslation(route.clientProtocolName, route.upstream.config.protocol, route.operation.name);
    const target = route.upstream.protocol;
    const upstream = target.adapter;
    const conv = decode(client, ctx, route);
    const owner = ctx.state.key?.name ?? '';
    await this.#continueConversation(owner, conv);
    await restoreReasoning(this.#stores.reasoning, owner, conv);
    const payload = translating(400, () => upstream.encodeRequest({ ...conv, model: route.upstreamModel }));
    const { body, length } = jsonBody(payload, route.rawBytes);
    const { path, query } = target.upstream.generate(route.upstreamModel, conv.stream);
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
      const retry = typeof retryAfter === 'string' ? retryAfter : undefined;
      throw upstreamError(response.statusCode, text, retry, route.clientProtocol);
    }
    if (!conv.stream) {
      const text = await readAll(route, response);
      const decoded = translating(502, () => upstream.decodeResponse(parseUpstreamJson(text)));
      const continuable = route.operation.continuable;
      const res = continuable ? { ...decoded, id: continuable.newId() } : decoded;
      const counted = this.#spending.answered(ctx.state, tokenUsage(res.usage, route.rawBytes, text.length));
      if (ctx.state.trace) ctx.state.finishReasons = finishReasons(client, upstream, res.stopReason);
      await this.#keep(owner, route, conv, res, true);
      if (counted) await counted;
      ctx.status = 200;
      ctx.body = client.encodeResponse(res, conv);
      return;
    }
    this.#stream(ctx, owner, route, conv, client, upstream, response);
  }

  /** Responses API: a previous response's conversation (the same key's) goes in front of this request's input. */
  async #continueConversation(owner: string, conv: Conversation): Promise<void> {
    if (conv.previousResponseId === undefined) return;
    const previous = await this.#stores.responses.get(ownedBy(owner, conv.previousResponseId));
    if (!previous) throw proxyErrors.previousResponseNotFound(conv.previousResponseId);
    conv.messages = [...previous.messages, ...conv.messages];
    conv.system ??= previous.system;
  }

  /** What a finished answer leaves behind: its carried reasoning, and (when the client may continue it) itself. */
  #keep(owner: string, route: Route, conv: Conversation, res: ModelResponse, withText: boolean): Promise<unknown> {
    const writes = [rememberReasoning(this.#stores.reasoning, owner, res)];
    const continuable = route.operation.continuable;
    if (continuable && withText && conv.store !== false) {
      const messages = [...conv.messages, { role: 'assistant' as const, parts: [...res.parts] }];
      const outputBytes = res.parts.reduce(
        (n, p) => n + (p.type === 'tool_call' ? p.arguments.length : p.text.length),
        0,
      );
      writes.push(
        this.#stores.responses.set(
          ownedBy(owner, res.id),
          { system: conv.system, messages },
          route.rawBytes + outputBytes,
        ),
      );
    }
    return Promise.all(writes);
  }

  /**
   * Writes the translated stream to the client, one write per upstream chunk as it arrives; the client's
   * backpressure pauses the upstream body.
   */
  #stream(
    ctx: ProxyContext,
    owner: string,
    route: Route,
    conv: Conversation,
    client: ClientAdapter,
    upstream: UpstreamAdapter,
    response: Dispatcher.ResponseData,
  ): void {
    const decoder = upstream.streamDecoder();
    const encoder = client.streamEncoder(conv);
    // The answer as a whole, for previous_response_id and for reasoning a client cannot carry; text only when stored.
    const collector = new Collector();
    const keepText = route.operation.continuable !== undefined && conv.store !== false;
    const answerId = route.operation.continuable?.newId();
    const body = response.body;
    let streamed = 0;

    const encode = (events: StreamEvent[]): string => {
      let out = '';
      for (const event of events) {
        const e = answerId !== undefined && event.type === 'start' ? { ...event, id: answerId } : event;
        if (keepText || e.type !== 'text') collector.add(e);
        out += encoder.encode(e);
      }
      streamed += out.length;
      return out;
    };
    const stream = new EventStream(ctx, route.signal, route.streams, {
      errorEvent: (error) => encode([errorEvent(error)]),
      failure: (error) => upstreamFailure(route.upstream, error, true),
      stop: () => body.destroy(),
      closing: () => {
        const counted = this.#spending.answered(ctx.state, tokenUsage(collector.usage, route.rawBytes, streamed));
        if (ctx.state.trace && collector.stop !== undefined) {
          ctx.state.finishReasons = finishReasons(client, upstream, collector.stop);
        }
        if (!collector.error && collector.stop !== undefined) {
          // Issued before the stream ends; a failing store costs the memory, not the answer.
          this.#keep(owner, route, conv, { ...collector.response(), id: collector.id }, keepText).catch(
            (error: unknown) => this.#log.warn({ err: (error as Error).message }, 'translation store write failed'),
          );
        }
        return { bytes: encoder.end(), counted };
      },
    });

    stream.open(200, {
      'content-type': client.streamContentType?.(conv) ?? 'text/event-stream; charset=utf-8',
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
          if (stream.ended) ctx.res.end();
          else stream.end(encode([{ type: 'error', status: 502, message: 'Upstream stream could not be translated' }]));
        } catch {
          ctx.res.destroy();
        }
      }
    };
    body.on('data', (chunk: string) =>
      guarded(() => {
        if (stream.ended) return;
        stream.writeFrom(body, encode(decoder.push(chunk)));
        // An upstream error event ends the answer; the rest of its body is not read.
        if (collector.error) {
          stream.end();
          body.destroy();
        }
      }),
    );
    body.once('end', () => guarded(() => stream.end(encode(decoder.end()))));
    body.once('error', (error: Error) => stream.destroy(error));
  }
}
