/**
 * A fake LLM provider speaking the OpenAI, Anthropic and Gemini wire formats,
 * for black-box tests of the proxy. One server, three base URLs:
 *   OpenAI    `${url}/openai/v1`  (as OpenAI's base_url, with /v1)
 *   Anthropic `${url}/anthropic`
 *   Gemini    `${url}/gemini`
 * It records every request (headers and body) and plays behaviours chosen by
 * a word in the model name, so tests need no reconfiguration:
 *   `…slow…`   waits `slowMs` before answering (upstream timeouts)
 *   `…gated…`  streams its first event, then waits for `release()` before the rest
 *   `…hang…`   streams its first event and never ends (client aborts)
 *   `…fail…`   answers 400 in the protocol's own error shape
 * A request with `tools` gets a tool call back (`get_weather`-style: the first tool's name).
 */
import { once } from 'node:events';
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  /** The path as received, without the query. */
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** The address the request came from (which container, when several proxies share this upstream). */
  remote: string;
  /** True once the client hung up before the response ended. */
  aborted: boolean;
}

export interface FakeUpstreamOptions {
  host?: string;
  port?: number;
  /** Delay between streamed events. */
  eventDelayMs?: number;
  /** How long `slow-…` models wait before answering. */
  slowMs?: number;
}

type Json = Record<string, unknown>;

const TOOL_ARGS = { city: 'Paris' };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'x-fake-upstream': '1',
  });
  res.end(text);
}

function firstToolName(body: Json): string | undefined {
  const tools = body['tools'];
  if (!Array.isArray(tools) || tools.length === 0) return undefined;
  const tool = tools[0] as Json;
  // OpenAI chat {type, function:{name}}, Responses/Anthropic {name}, Gemini {functionDeclarations:[{name}]}
  const fn = tool['function'] as Json | undefined;
  const declarations = tool['functionDeclarations'] as Json[] | undefined;
  return (fn?.['name'] ?? tool['name'] ?? declarations?.[0]?.['name']) as string | undefined;
}

export class FakeUpstream {
  readonly requests: RecordedRequest[] = [];
  readonly #server: Server;
  readonly #eventDelayMs: number;
  readonly #slowMs: number;
  #gate: { promise: Promise<void>; open: () => void } = FakeUpstream.#newGate();
  #url = '';
  /** Responses answered so far: each gets an id of its own, as a real upstream's. */
  #responses = 0;

  private constructor(options: FakeUpstreamOptions) {
    this.#eventDelayMs = options.eventDelayMs ?? 5;
    this.#slowMs = options.slowMs ?? 3_000;
    this.#server = createServer((req, res) => void this.#handle(req, res));
  }

  static async start(options: FakeUpstreamOptions = {}): Promise<FakeUpstream> {
    const upstream = new FakeUpstream(options);
    upstream.#server.listen(options.port ?? 0, options.host ?? '127.0.0.1');
    await once(upstream.#server, 'listening');
    const { port } = upstream.#server.address() as AddressInfo;
    upstream.#url = `http://127.0.0.1:${port}`;
    return upstream;
  }

  static #newGate() {
    let open!: () => void;
    const promise = new Promise<void>((resolve) => (open = resolve));
    return { promise, open };
  }

  get port(): number {
    return (this.#server.address() as AddressInfo).port;
  }

  /** The loopback URL; containers reach the same port via host.docker.internal. */
  get url(): string {
    return this.#url;
  }

  /** Lets every gated stream finish; later gated streams wait again. */
  release(): void {
    this.#gate.open();
    this.#gate = FakeUpstream.#newGate();
  }

  /** The most recent request whose path includes `fragment`. */
  last(fragment = ''): RecordedRequest {
    const found = this.requests.findLast((r) => r.path.includes(fragment));
    if (!found) throw new Error(`the fake upstream saw no request to ${fragment}`);
    return found;
  }

  /** Resolves when a request to `fragment` has been aborted by its client. */
  async waitForAbort(fragment: string, timeoutMs = 10_000): Promise<RecordedRequest> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.requests.find((r) => r.path.includes(fragment) && r.aborted);
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`no aborted request to ${fragment} within ${timeoutMs} ms`);
      await sleep(20);
    }
  }

  async close(): Promise<void> {
    this.release();
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const record: RecordedRequest = {
      method: req.method ?? '',
      path: url.pathname,
      query: url.searchParams,
      headers: req.headers,
      body: Buffer.concat(chunks),
      remote: req.socket.remoteAddress ?? '',
      aborted: false,
    };
    this.requests.push(record);
    res.once('close', () => {
      if (!res.writableFinished) record.aborted = true;
    });
    const [, vendor, ...rest] = url.pathname.split('/');
    const path = `/${rest.join('/')}`;
    let body: Json = {};
    if (record.body[0] === 0x7b) body = JSON.parse(record.body.toString('utf8')) as Json;
    const named = body['model'];
    const model =
      typeof named === 'string'
        ? named
        : (/\/models\/([^:/]+)/.exec(path)?.[1] ??
          /name="model"\r\n\r\n([^\r]*)/.exec(record.body.toString('latin1'))?.[1] ??
          '');
    if (model.includes('slow')) await sleep(this.#slowMs);
    if (res.destroyed) return;
    try {
      if (vendor === 'openai') await this.#openai(req, res, path, model, body, record);
      else if (vendor === 'anthropic') await this.#anthropic(res, path, model, body);
      else if (vendor === 'gemini') await this.#gemini(res, path, model, body, url.searchParams);
      else json(res, 404, { error: `fake upstream: unknown vendor ${vendor}` });
    } catch (error) {
      if (!res.headersSent) json(res, 500, { error: String(error) });
      else res.destroy();
    }
  }

  /** Streams SSE `events`, honouring the model's behaviour after the first one. */
  async #sse(res: ServerResponse, model: string, events: string[]): Promise<void> {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-fake-upstream': '1' });
    for (const [i, event] of events.entries()) {
      if (res.destroyed) return;
      res.write(event);
      if (i === 0 && model.includes('gated')) await this.#gate.promise;
      if (i === 0 && model.includes('hang')) {
        await once(res, 'close');
        return;
      }
      await sleep(this.#eventDelayMs);
    }
    res.end();
  }

  async #openai(
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
    model: string,
    body: Json,
    record: RecordedRequest,
  ): Promise<void> {
    if (model.includes('fail')) {
      json(res, 400, {
        error: {
          message: `fake: ${model} refused`,
          type: 'invalid_request_error',
          param: 'model',
          code: 'fake_refusal',
        },
      });
      return;
    }
    const tool = firstToolName(body);
    const created = 1_700_000_000;
    switch (`${req.method} ${path}`) {
      case 'GET /v1/models':
        json(res, 200, {
          object: 'list',
          data: [
            { id: 'gpt-fake-1', object: 'model', created, owned_by: 'fake' },
            { id: 'unrouted-model', object: 'model', created, owned_by: 'fake' },
          ],
        });
        return;
      case 'POST /v1/chat/completions': {
        const id = 'chatcmpl-fake';
        const base = { id, object: 'chat.completion.chunk', created, model };
        if (body['stream'] === true) {
          const deltas = tool
            ? [
                {
                  role: 'assistant',
                  tool_calls: [
                    { index: 0, id: 'call_fake', type: 'function', function: { name: tool, arguments: '' } },
                  ],
                },
                { tool_calls: [{ index: 0, function: { arguments: JSON.stringify(TOOL_ARGS) } }] },
              ]
            : [
                { role: 'assistant', content: '' },
                ...['Hello', ' from', ' the', ' fake', ' upstream'].map((content) => ({ content })),
              ];
          const events = deltas.map(
            (delta) => `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`,
          );
          events.push(
            `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: {}, finish_reason: tool ? 'tool_calls' : 'stop' }] })}\n\n`,
            'data: [DONE]\n\n',
          );
          return this.#sse(res, model, events);
        }
        const message = tool
          ? {
              role: 'assistant',
              content: null,
              tool_calls: [
                { id: 'call_fake', type: 'function', function: { name: tool, arguments: JSON.stringify(TOOL_ARGS) } },
              ],
            }
          : { role: 'assistant', content: 'Hello from the fake upstream' };
        json(res, 200, {
          id,
          object: 'chat.completion',
          created,
          model,
          choices: [{ index: 0, message, finish_reason: tool ? 'tool_calls' : 'stop', logprobs: null }],
          usage: { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 },
        });
        return;
      }
      case 'POST /v1/completions':
        json(res, 200, {
          id: 'cmpl-fake',
          object: 'text_completion',
          created,
          model,
          choices: [{ index: 0, text: 'Hello from the fake upstream', finish_reason: 'stop', logprobs: null }],
        });
        return;
      case 'POST /v1/responses': {
        const output = [
          {
            type: 'message',
            id: 'msg_fake',
            status: 'completed',
            role: 'assistant',
            content: [{ type: 'output_text', text: 'Hello from the fake upstream', annotations: [] }],
          },
        ];
        const response = {
          id: `resp_fake_${++this.#responses}`,
          object: 'response',
          created_at: created,
          status: 'completed',
          model,
          output,
          usage: { input_tokens: 5, output_tokens: 5, total_tokens: 10 },
        };
        if (body['stream'] === true) {
          const events = [
            {
              type: 'response.created',
              sequence_number: 0,
              response: { ...response, status: 'in_progress', output: [] },
            },
            {
              type: 'response.output_text.delta',
              sequence_number: 1,
              item_id: 'msg_fake',
              output_index: 0,
              content_index: 0,
              delta: 'Hello from the fake upstream',
            },
            { type: 'response.completed', sequence_number: 2, response },
          ].map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`);
          return this.#sse(res, model, events);
        }
        json(res, 200, response);
        return;
      }
      case 'POST /v1/images/generations':
      case 'POST /v1/images/edits':
        json(res, 200, {
          created,
          data: [{ b64_json: Buffer.from(`image for ${model}, ${record.body.length} bytes in`).toString('base64') }],
        });
        return;
      case 'POST /v1/audio/transcriptions':
        json(res, 200, { text: `transcribed by ${model}, ${record.body.length} bytes in` });
        return;
      default:
        json(res, 404, {
          error: { message: `fake: no ${req.method} ${path}`, type: 'invalid_request_error', param: null, code: null },
        });
        return;
    }
  }

  async #anthropic(res: ServerResponse, path: string, model: string, body: Json): Promise<void> {
    if (model.includes('fail')) {
      json(res, 400, { type: 'error', error: { type: 'invalid_request_error', message: `fake: ${model} refused` } });
      return;
    }
    if (path === '/v1/models') {
      json(res, 200, {
        data: [
          { type: 'model', id: 'claude-fake-1', display_name: 'Claude Fake 1', created_at: '2025-01-01T00:00:00Z' },
        ],
        has_more: false,
        first_id: 'claude-fake-1',
        last_id: 'claude-fake-1',
      });
      return;
    }
    if (path === '/v1/messages/count_tokens') {
      json(res, 200, { input_tokens: 42 });
      return;
    }
    if (path !== '/v1/messages') {
      json(res, 404, { type: 'error', error: { type: 'not_found_error', message: `fake: no ${path}` } });
      return;
    }
    const tool = firstToolName(body);
    const usage = { input_tokens: 5, output_tokens: 5 };
    const content = tool
      ? [{ type: 'tool_use', id: 'toolu_fake', name: tool, input: TOOL_ARGS }]
      : [{ type: 'text', text: 'Hello from the fake upstream' }];
    const message = {
      id: 'msg_fake',
      type: 'message',
      role: 'assistant',
      model,
      content,
      stop_reason: tool ? 'tool_use' : 'end_turn',
      stop_sequence: null,
      usage,
    };
    if (body['stream'] !== true) {
      json(res, 200, message);
      return;
    }
    const block = tool ? { type: 'tool_use', id: 'toolu_fake', name: tool, input: {} } : { type: 'text', text: '' };
    const deltas = tool
      ? [{ type: 'input_json_delta', partial_json: JSON.stringify(TOOL_ARGS) }]
      : ['Hello', ' from', ' the', ' fake', ' upstream'].map((text) => ({ type: 'text_delta', text }));
    const events: Json[] = [
      {
        type: 'message_start',
        message: { ...message, content: [], stop_reason: null, usage: { input_tokens: 5, output_tokens: 0 } },
      },
      { type: 'content_block_start', index: 0, content_block: block },
      ...deltas.map((delta) => ({ type: 'content_block_delta', index: 0, delta })),
      { type: 'content_block_stop', index: 0 },
      {
        type: 'message_delta',
        delta: { stop_reason: message.stop_reason, stop_sequence: null },
        usage: { output_tokens: 5 },
      },
      { type: 'message_stop' },
    ];
    return this.#sse(
      res,
      model,
      events.map((e) => `event: ${String(e['type'])}\ndata: ${JSON.stringify(e)}\n\n`),
    );
  }

  async #gemini(res: ServerResponse, path: string, model: string, body: Json, query: URLSearchParams): Promise<void> {
    if (model.includes('fail')) {
      json(res, 400, { error: { code: 400, message: `fake: ${model} refused`, status: 'INVALID_ARGUMENT' } });
      return;
    }
    if (path === '/v1beta/models') {
      json(res, 200, {
        models: [
          {
            name: 'models/gemini-fake-1',
            displayName: 'Gemini Fake 1',
            supportedGenerationMethods: ['generateContent', 'countTokens'],
          },
        ],
      });
      return;
    }
    const method = /:(\w+)$/.exec(path)?.[1];
    if (method === 'countTokens') {
      json(res, 200, { totalTokens: 42 });
      return;
    }
    const tool = firstToolName(body);
    const candidate = (parts: Json[], finish?: string) => ({
      candidates: [{ content: { role: 'model', parts }, index: 0, ...(finish ? { finishReason: finish } : {}) }],
      modelVersion: model,
    });
    const usageMetadata = { promptTokenCount: 5, candidatesTokenCount: 5, totalTokenCount: 10 };
    if (method === 'generateContent') {
      const parts = tool
        ? [{ functionCall: { name: tool, args: TOOL_ARGS } }]
        : [{ text: 'Hello from the fake upstream' }];
      json(res, 200, { ...candidate(parts, 'STOP'), usageMetadata });
      return;
    }
    if (method === 'streamGenerateContent') {
      if (query.get('alt') !== 'sse') {
        json(res, 400, { error: { code: 400, message: 'fake: only alt=sse streams', status: 'INVALID_ARGUMENT' } });
        return;
      }
      const chunks = tool
        ? [{ ...candidate([{ functionCall: { name: tool, args: TOOL_ARGS } }], 'STOP'), usageMetadata }]
        : ['Hello', ' from', ' the', ' fake', ' upstream'].map((text, i, all) => ({
            ...candidate([{ text }], i === all.length - 1 ? 'STOP' : undefined),
            ...(i === all.length - 1 ? { usageMetadata } : {}),
          }));
      return this.#sse(
        res,
        model,
        chunks.map((c) => `data: ${JSON.stringify(c)}\r\n\r\n`),
      );
    }
    json(res, 404, { error: { code: 404, message: `fake: no ${path}`, status: 'NOT_FOUND' } });
    return;
  }
}
