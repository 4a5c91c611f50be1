/**
 * OpenTelemetry traces from the image to an OTLP/HTTP receiver on the host:
 * a span per model request (GenAI semantic conventions) and one per upstream
 * attempt, checked attribute by attribute, plain and streamed, passed through
 * and translated, with a fallback; W3C trace context in and out; the key's
 * name and never the key. Then collectors that refuse or hang: every request
 * still answers, and the lost spans are counted in /metrics.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.ts';
import {
  closedPort,
  HOST_FROM_CONTAINER,
  startProxyContainer,
  type ProxyContainer,
} from '../support/proxy-container.ts';
import { MODELS } from '../support/sdk-matrix.ts';
import { startScriptedUpstream, type ScriptedUpstream } from '../support/scripted-upstream.ts';
import { API_KEY, translationConfig } from '../support/translating-proxy.ts';
import type { ModelResponse } from '../../src/proxy/translate/model.ts';

const SERVER = 2;
const CLIENT = 3;
const ERROR = 2;
const AUTH = { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' };
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_ID = '00f067aa0ba902b7';

let upstream: ScriptedUpstream;
let receiver: OtlpReceiver;
let proxy: ProxyContainer;

/** The proxy's config with tracing to `receiver`, and `gpt-fallback` served by a down upstream, then the real one. */
async function tracedConfig(port: number, extra: Record<string, unknown> = {}): Promise<unknown> {
  const origin = `http://${HOST_FROM_CONTAINER}:${upstream.port}`;
  const base = translationConfig(origin, true) as { proxy: { upstreams: unknown[] } & Record<string, unknown> };
  const down = await closedPort();
  return {
    proxy: {
      ...base.proxy,
      upstreams: [
        {
          name: 'down',
          protocol: 'openai',
          base_url: `http://${HOST_FROM_CONTAINER}:${down}/v1`,
          api_key: 'up-down',
          models: ['gpt-fallback'],
        },
        ...base.proxy.upstreams,
      ],
      telemetry: { endpoint: `http://${HOST_FROM_CONTAINER}:${port}`, schedule_delay: 100, ...extra },
    },
  };
}

/** A request asking for this is answered as cut at its output limit, in the protocol of the path it came on. */
const LIMIT = 'STOP AT THE LIMIT';
const limited = (body: Record<string, unknown>): ModelResponse | undefined =>
  JSON.stringify(body).includes(LIMIT)
    ? {
        id: 'limited',
        model: 'scripted',
        parts: [{ type: 'text', text: 'It is sun' }],
        stopReason: 'max_tokens',
        usage: { input: 9, output: 3 },
      }
    : undefined;

beforeAll(async () => {
  upstream = await startScriptedUpstream('0.0.0.0', limited);
  receiver = await startOtlpReceiver();
  proxy = await startProxyContainer(await tracedConfig(receiver.port), { OTEL_SERVICE_NAME: 'gatehouse-test' });
});
afterAll(async () => {
  await (proxy as ProxyContainer | undefined)?.stop();
  await (upstream as ScriptedUpstream | undefined)?.close();
  await (receiver as OtlpReceiver | undefined)?.close();
});

/** Sends a request and waits for its spans: the server span (by its trace id) and its children. */
async function traced(
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; server: ReceivedSpan; attempts: ReceivedSpan[]; upstreamTraceparent: unknown }> {
  const before = upstream.requests.length;
  const response = await fetch(`${proxy.base}${path}`, {
    method: 'POST',
    headers: { ...AUTH, ...headers },
    body: JSON.stringify(body),
  });
  await response.text();
  let server: ReceivedSpan | undefined;
  await expect
    .poll(() => {
      server = receiver.spans.find(
        (s) => s.kind === SERVER && s.attributes['url.path'] === path.split('?')[0] && !seen.has(s.spanId),
      );
      return server !== undefined;
    })
    .toBe(true);
  const found = server as ReceivedSpan;
  seen.add(found.spanId);
  const attempts = receiver.spans.filter((s) => s.parentSpanId === found.spanId);
  return {
    status: response.status,
    server: found,
    attempts,
    upstreamTraceparent: upstream.requests.slice(before).at(-1)?.headers.traceparent,
  };
}
const seen = new Set<string>();

const chat = (model: string, stream = false) => ({
  model,
  stream,
  messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
});

describe('gatehouse proxy (container): OpenTelemetry traces', () => {
  it("a passed-through chat request continues the caller's trace; its attempt's span is what the upstream gets", async () => {
    const { status, server, attempts, upstreamTraceparent } = await traced(
      '/v1/chat/completions',
      chat(MODELS.openai),
      {
        traceparent: `00-${TRACE_ID}-${PARENT_ID}-01`,
      },
    );
    expect(status).toBe(200);
    expect(server).toMatchObject({
      service: 'gatehouse-test',
      name: `chat ${MODELS.openai}`,
      traceId: TRACE_ID,
      parentSpanId: PARENT_ID,
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.request.model': MODELS.openai,
        'gen_ai.response.model': MODELS.openai,
        'gen_ai.provider.name': 'openai',
        'http.response.status_code': 200,
        'gatehouse.key.name': 'default',
        'gatehouse.stream': false,
      },
    });
    expect(server.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
    expect(server.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
    expect(server.attributes).not.toHaveProperty('error.type');
    expect(attempts).toHaveLength(1);
    const [attempt] = attempts as [ReceivedSpan];
    expect(attempt).toMatchObject({
      kind: CLIENT,
      name: `chat ${MODELS.openai}`,
      traceId: TRACE_ID,
      attributes: {
        'gen_ai.provider.name': 'openai',
        'server.address': HOST_FROM_CONTAINER,
        'server.port': upstream.port,
        'gatehouse.upstream': 'openai-up',
        'http.response.status_code': 200,
      },
    });
    expect(upstreamTraceparent).toBe(`00-${TRACE_ID}-${attempt.spanId}-01`);
  });

  it.each([
    [
      'a streamed chat request translated to Anthropic',
      '/v1/chat/completions',
      chat(MODELS.anthropic, true),
      'anthropic',
      MODELS.anthropic,
      'chat',
      true,
    ],
    [
      'a Messages request translated to Gemini',
      '/v1/messages',
      { ...chat(MODELS.gemini), max_tokens: 100 },
      'gcp.gemini',
      MODELS.gemini,
      'chat',
      false,
    ],
    [
      'a streamed Gemini request translated to OpenAI',
      `/v1beta/models/${MODELS.openai}:streamGenerateContent`,
      { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] },
      'openai',
      MODELS.openai,
      'generate_content',
      true,
    ],
  ] as const)('%s', async (_name, path, body, provider, model, operation, stream) => {
    const { status, server, attempts } = await traced(path, body);
    expect(status).toBe(200);
    expect(server).toMatchObject({
      name: `${operation} ${model}`,
      parentSpanId: '',
      attributes: {
        'gen_ai.operation.name': operation,
        'gen_ai.provider.name': provider,
        'gen_ai.request.model': model,
        'gatehouse.stream': stream,
      },
    });
    expect(server.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
    expect(attempts.map((a) => a.attributes['gen_ai.provider.name'])).toEqual([provider]);
  });

  /** Each family's request for `model`, plain or streamed, asking `text`. */
  const request = {
    chat: (model: string, stream: boolean, text: string) => ({
      path: '/v1/chat/completions',
      body: { model, stream, messages: [{ role: 'user', content: text }] },
    }),
    messages: (model: string, stream: boolean, text: string) => ({
      path: '/v1/messages',
      body: { model, stream, max_tokens: 100, messages: [{ role: 'user', content: text }] },
    }),
    responses: (model: string, stream: boolean, text: string) => ({
      path: '/v1/responses',
      body: { model, stream, input: text },
    }),
    gemini: (model: string, stream: boolean, text: string) => ({
      path: `/v1beta/models/${model}:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`,
      body: { contents: [{ role: 'user', parts: [{ text }] }] },
    }),
  };
  const ASK = 'What is the weather in Paris?';

  it.each([
    // Passed through: the upstream's words on both spans.
    ['chat', MODELS.openai, ASK, ['stop'], ['stop']],
    ['messages', MODELS.anthropic, ASK, ['end_turn'], ['end_turn']],
    ['gemini', MODELS.gemini, ASK, ['STOP'], ['STOP']],
    ['responses', MODELS.openai, LIMIT, ['max_output_tokens'], ['max_output_tokens']],
    ['chat', MODELS.openai, LIMIT, ['length'], ['length']],
    // Translated: the client's words on the request's span, the upstream's on its attempt's.
    ['chat', MODELS.anthropic, ASK, ['stop'], ['end_turn']],
    ['messages', MODELS.gemini, ASK, ['end_turn'], ['STOP']],
    ['gemini', MODELS.openai, ASK, ['STOP'], ['stop']],
    ['responses', MODELS.anthropic, ASK, ['completed'], ['end_turn']],
    ['responses', MODELS.gemini, LIMIT, ['max_output_tokens'], ['MAX_TOKENS']],
    ['messages', MODELS.openai, LIMIT, ['max_tokens'], ['length']],
  ] as const)(
    'gen_ai.response.finish_reasons: %s to %s (%s), plain and streamed',
    async (family, model, text, answer, attempt) => {
      for (const stream of [false, true]) {
        const { path, body } = request[family](model, stream, text);
        const traces = await traced(path, body);
        expect(traces.status).toBe(200);
        expect(traces.server.attributes['gatehouse.stream']).toBe(stream);
        expect(traces.server.attributes['gen_ai.response.finish_reasons']).toEqual(answer);
        expect(traces.attempts.map((a) => a.attributes['gen_ai.response.finish_reasons'])).toEqual([attempt]);
      }
    },
  );

  it('a fallback shows both attempts: the upstream that is down, then the one that answered', async () => {
    const { status, server, attempts } = await traced('/v1/chat/completions', chat('gpt-fallback'));
    expect(status).toBe(200);
    expect(server.attributes['http.response.status_code']).toBe(200);
    expect(attempts.map((a) => a.attributes['gatehouse.upstream']).sort()).toEqual(['down', 'openai-up']);
    const down = attempts.find((a) => a.attributes['gatehouse.upstream'] === 'down') as ReceivedSpan;
    expect(down).toMatchObject({ status: ERROR, attributes: { 'error.type': '502' } });
  });

  it("an error is the span's error.type; no span carries the key", async () => {
    const { status, server } = await traced('/v1/chat/completions', chat('nobody-serves-this'));
    expect(status).toBe(404);
    expect(server).toMatchObject({ status: ERROR, attributes: { 'error.type': '404' } });
    expect(JSON.stringify(receiver.spans)).not.toContain(API_KEY);
  });
});

describe('gatehouse proxy (container): a collector that refuses or hangs', () => {
  it.each(['refuse', 'hang'] as const)(
    'one that %ss slows and fails no request; the lost spans are counted',
    async (mode) => {
      const collector = await startOtlpReceiver();
      collector.mode = mode;
      const limited = await startProxyContainer(
        await tracedConfig(collector.port, { max_queue_size: 4, export_timeout: 60_000 }),
      );
      try {
        const statuses: number[] = [];
        for (let i = 0; i < 20; i++) {
          const response = await fetch(`${limited.base}/v1/chat/completions`, {
            method: 'POST',
            headers: AUTH,
            body: JSON.stringify(chat(MODELS.openai)),
            signal: AbortSignal.timeout(5_000),
          });
          await response.text();
          statuses.push(response.status);
        }
        expect(statuses).toEqual(statuses.map(() => 200));
        await expect
          .poll(
            async () => {
              const metrics = await (await fetch(`${limited.base}/metrics`, { headers: AUTH })).text();
              return Number(/^gatehouse_trace_spans_dropped_total\{reason="[^"]+"\} (\d+)/m.exec(metrics)?.[1] ?? 0);
            },
            { timeout: 10_000 },
          )
          .toBeGreaterThan(0);
        expect(collector.exports).toBeGreaterThan(0);
      } finally {
        await limited.stop();
        await collector.close();
      }
    },
    60_000,
  );
});
