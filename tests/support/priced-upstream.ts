/**
 * An upstream of all three families whose every answer (JSON or stream) reports the same token counts, cache
 * reads and writes included: what a request costs is then known by hand (see COST). Paths: /openai/v1/…,
 * /anthropic/v1/messages, /gemini/v1beta/models/….
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/*
 * The token counts each family's answers report, and their cost worked out by hand (USD per million tokens):
 * - gpt-4o-mini ($0.15 in, $0.075 cached, $0.60 out): 1000 in of which 400 cached, 200 out:
 *   600 × 0.15 + 400 × 0.075 + 200 × 0.60 = 90 + 30 + 120 = 240 millionths;
 * - my-llama-8b (proxy.prices: $0.20 in, cache reads at the input price, $0.60 out), the same tokens:
 *   1000 × 0.20 + 200 × 0.60 = 320 millionths;
 * - claude-3-5-haiku-20241022 ($0.80 in, $1 cache write, $0.08 cache read, $4 out): input_tokens 100 (Anthropic's
 *   leave out the cache), 1000 written to the cache, 2000 read from it, 300 out:
 *   100 × 0.80 + 1000 × 1 + 2000 × 0.08 + 300 × 4 = 80 + 1000 + 160 + 1200 = 2440 millionths;
 * - gemini-2.5-flash ($0.30 in, $0.03 cached, $2.50 out): 1000 in of which 500 cached, 100 out and 50 thinking:
 *   500 × 0.30 + 500 × 0.03 + 150 × 2.50 = 150 + 15 + 375 = 540 millionths.
 */
export const COST = { openai: 0.00024, llama: 0.00032, anthropic: 0.00244, gemini: 0.00054 };

/** The proxy.prices entry the llama figure above assumes. */
export const LLAMA_PRICE = { model: 'my-llama-*', input_per_mtok: 0.2, output_per_mtok: 0.6 };

const OPENAI_USAGE = { prompt_tokens: 1000, completion_tokens: 200, prompt_tokens_details: { cached_tokens: 400 } };
const ANTHROPIC_USAGE = {
  input_tokens: 100,
  cache_creation_input_tokens: 1000,
  cache_read_input_tokens: 2000,
  output_tokens: 300,
};
const GEMINI_USAGE = {
  promptTokenCount: 1000,
  cachedContentTokenCount: 500,
  candidatesTokenCount: 100,
  thoughtsTokenCount: 50,
};

const sse = (events: unknown[], named = false): string =>
  events
    .map((e) => `${named ? `event: ${(e as { type: string }).type}\n` : ''}data: ${JSON.stringify(e)}\n\n`)
    .join('');

/** Each family's answer, whole or streamed, with the usage above. */
function answer(url: string, body: { model?: string; stream?: boolean }): { type: string; text: string } {
  if (url.startsWith('/openai/')) {
    const base = { id: 'c1', object: 'chat.completion', created: 1, model: body.model };
    if (!body.stream) {
      const choice = { index: 0, message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' };
      return { type: 'application/json', text: JSON.stringify({ ...base, choices: [choice], usage: OPENAI_USAGE }) };
    }
    const chunk = { ...base, object: 'chat.completion.chunk' };
    const events = [
      { ...chunk, choices: [{ index: 0, delta: { role: 'assistant', content: 'Hello' }, finish_reason: null }] },
      { ...chunk, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
      { ...chunk, choices: [], usage: OPENAI_USAGE },
    ];
    return { type: 'text/event-stream', text: `${sse(events)}data: [DONE]\n\n` };
  }
  if (url.startsWith('/anthropic/')) {
    const message = { id: 'm1', type: 'message', role: 'assistant', model: body.model, stop_sequence: null };
    if (!body.stream) {
      const whole = { ...message, content: [{ type: 'text', text: 'Hello' }], stop_reason: 'end_turn' };
      return { type: 'application/json', text: JSON.stringify({ ...whole, usage: ANTHROPIC_USAGE }) };
    }
    const start = { ...message, content: [], stop_reason: null, usage: { ...ANTHROPIC_USAGE, output_tokens: 1 } };
    const events = [
      { type: 'message_start', message: start },
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 300 } },
      { type: 'message_stop' },
    ];
    return { type: 'text/event-stream', text: sse(events, true) };
  }
  const candidate = (finishReason?: string) => ({
    content: { role: 'model', parts: [{ text: 'Hello' }] },
    ...(finishReason && { finishReason }),
  });
  if (!url.includes(':streamGenerateContent')) {
    return {
      type: 'application/json',
      text: JSON.stringify({ candidates: [candidate('STOP')], usageMetadata: GEMINI_USAGE }),
    };
  }
  const first = { candidates: [candidate()], usageMetadata: { promptTokenCount: 1000, candidatesTokenCount: 1 } };
  const last = { candidates: [candidate('STOP')], usageMetadata: GEMINI_USAGE };
  return {
    type: 'text/event-stream',
    text: `data: ${JSON.stringify(first)}\r\n\r\ndata: ${JSON.stringify(last)}\r\n\r\n`,
  };
}

export interface PricedUpstream {
  port: number;
  close(): Promise<void>;
}

/** Listens on `host` (0.0.0.0 for containers to reach it) at a free port. */
export async function startPricedUpstream(host: string): Promise<PricedUpstream> {
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    req.on('end', () => {
      const { type, text } = answer(req.url ?? '', JSON.parse(raw || '{}') as { model?: string; stream?: boolean });
      res.writeHead(200, { 'content-type': type }).end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
