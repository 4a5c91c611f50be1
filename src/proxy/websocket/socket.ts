import type { IncomingHttpHeaders } from 'node:http';
import type { Duplex } from 'node:stream';
import type { RawData, WebSocket } from 'ws';
import { HttpError } from '../../http/errors.ts';
import { isObject } from '../../json.ts';
import { proxyErrors } from '../errors.ts';
import type { JsonObject } from '../translate/model.ts';
import { newId } from '../translate/wire.ts';
import type { TurnOutput, TurnResponse } from './turn.ts';

/**
 * Events from this size on are compressed when the client offered permessage-deflate. A stream's deltas are
 * a hundred-odd bytes each: compressing each would cost a trip through zlib per frame and save little; its
 * first and last events (the whole response) are where compression pays. ws applies its own threshold only
 * without context takeover, which Codex does not ask for.
 */
const COMPRESS_FROM_CHARS = 1024;

/** Close codes (RFC 6455): the connection limit is a normal end, a shutdown is the server going away. */
export const CLOSE_NORMAL = 1000;
export const CLOSE_GOING_AWAY = 1001;

/** What a socket needs of the proxy: a turn is a streamed request to the HTTP route; errors take its shape. */
export interface SocketDeps {
  /** Sends one turn's body (a Responses create body, streamed) to the route; its answer goes to `output`. */
  send(body: Buffer, output: TurnOutput): TurnResponse;
  /** The route's error body for one of the proxy's own errors. */
  errorBody(error: HttpError): unknown;
  /** The connection's socket: a chunk's events are written to it in one go (corked). */
  socket: Duplex;
}

/** An end the socket is heading for: sent once no response is under way. */
interface Ending {
  code: number;
  reason: string;
  /** What a frame arriving meanwhile is told. */
  error: HttpError;
}

/** The conversation as of the last response on this connection: what a continuation by its id extends. */
interface LastResponse {
  id: string;
  items: unknown[];
}

/** A Responses `input`: a string is one user message. */
function inputItems(input: unknown): unknown[] {
  if (input === undefined || input === null) return [];
  if (typeof input === 'string') return [{ type: 'message', role: 'user', content: input }];
  return Array.isArray(input) ? input : [input];
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** The error frame for an answer that is not a stream: its status, its body's `error`, and its retry-after. */
function answerErrorFrame(status: number, text: string, headers: IncomingHttpHeaders): JsonObject {
  let error: unknown;
  try {
    const body: unknown = JSON.parse(text);
    error = isObject(body) && isObject(body['error']) ? body['error'] : undefined;
  } catch {
    error = undefined;
  }
  const frame: JsonObject = {
    type: 'error',
    status,
    error: error ?? { type: 'api_error', code: null, message: text.trim() || `HTTP ${status}`, param: null },
  };
  const retryAfter = headerValue(headers['retry-after']);
  if (retryAfter !== undefined) frame['headers'] = { 'retry-after': retryAfter };
  return frame;
}

/**
 * One client's connection in the Responses API's WebSocket mode. Each
 * `response.create` text frame is one streamed POST to the route, handed to
 * the proxy's own handler in memory (turn.ts), whose events go back one JSON
 * text frame each; an answer that is not a stream becomes an `error` frame
 * with its status.
 *
 * The connection remembers its last response (input and output), so a
 * continuation naming it by `previous_response_id` with only the new input
 * works with `store: false` and with any upstream: it is sent on as the whole
 * conversation. Any other `previous_response_id` goes on as it came (the
 * proxy's stored conversations, or the upstream's own for an answer passed
 * through for the same key).
 * `generate: false` (a warm-up) is answered here: an empty completed
 * response whose id a continuation can name.
 */
export class ResponsesSocket {
  readonly #ws: WebSocket;
  readonly #deps: SocketDeps;
  #turn: TurnResponse | undefined;
  #last: LastResponse | undefined;
  #ending: Ending | undefined;

  constructor(ws: WebSocket, deps: SocketDeps) {
    this.#ws = ws;
    this.#deps = deps;
    ws.on('message', (data, binary) => this.#frame(data, binary));
    // The client left: its response under way stops, and with it the upstream call.
    ws.on('close', () => this.#turn?.destroy());
    ws.on('error', () => this.#turn?.destroy());
  }

  get busy(): boolean {
    return this.#turn !== undefined;
  }

  /** Closes with `code` and `reason` now, or once the response under way has ended. */
  end(code: number, reason: string, error: HttpError): void {
    this.#ending ??= { code, reason, error };
    if (!this.busy) this.#ws.close(code, reason);
  }

  /** Drops the connection (a shutdown whose grace ran out). */
  terminate(): void {
    this.#turn?.destroy();
    this.#ws.terminate();
  }

  #sendError(error: HttpError): void {
    const frame = { type: 'error', status: error.status, ...(this.#deps.errorBody(error) as JsonObject) };
    this.#ws.send(JSON.stringify(frame));
  }

  #frame(data: RawData, binary: boolean): void {
    const ending = this.#ending;
    if (ending) {
      this.#sendError(ending.error);
      if (!this.busy) this.#ws.close(ending.code, ending.reason);
      return;
    }
    const body = this.#request(data, binary);
    if (body instanceof HttpError) {
      this.#sendError(body);
      return;
    }
    const last = this.#last;
    if (last && body['previous_response_id'] === last.id) {
      delete body['previous_response_id'];
      body['input'] = [...last.items, ...inputItems(body['input'])];
    }
    if (body['generate'] === false) {
      this.#warmUp(body);
      return;
    }
    body['stream'] = true;
    void this.#run(body);
  }

  /** The create body a frame carries, or why it is refused. */
  #request(data: RawData, binary: boolean): JsonObject | HttpError {
    if (binary) return proxyErrors.binaryFrame();
    let event: unknown;
    try {
      event = JSON.parse((data as Buffer).toString('utf8'));
    } catch {
      return proxyErrors.invalidJson();
    }
    if (!isObject(event)) return proxyErrors.notJsonObject();
    if (event['type'] !== 'response.create') return proxyErrors.unknownEvent(event['type']);
    if (this.busy) return proxyErrors.responseInProgress();
    const { type: _type, ...body } = event;
    return body;
  }

  /** A warm-up: nothing is generated, but the input is remembered under a new response id. */
  #warmUp(body: JsonObject): void {
    const id = newId('resp_');
    const items = inputItems(body['input']);
    const response = {
      id,
      object: 'response',
      created_at: Math.floor(Date.now() / 1000),
      model: body['model'],
      output: [],
    };
    this.#ws.send(
      JSON.stringify({
        type: 'response.created',
        sequence_number: 0,
        response: { ...response, status: 'in_progress' },
      }),
    );
    this.#ws.send(
      JSON.stringify({
        type: 'response.completed',
        sequence_number: 1,
        response: { ...response, status: 'completed', usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0 } },
      }),
    );
    this.#last = { id, items };
  }

  async #run(body: JsonObject): Promise<void> {
    const input = inputItems(body['input']);
    const ws = this.#ws;
    const socket = this.#deps.socket;
    const output: TurnOutput = {
      event: (data, written) => {
        if (data.includes('"response.completed"')) this.#remember(data, input);
        ws.send(data, { compress: data.length >= COMPRESS_FROM_CHARS }, written && (() => written()));
      },
      get backlog() {
        return ws.bufferedAmount;
      },
      hold: () => socket.cork(),
      release: () => socket.uncork(),
      answer: (status, headers, text) => ws.send(JSON.stringify(answerErrorFrame(status, text, headers))),
    };
    const turn = this.#deps.send(Buffer.from(JSON.stringify(body)), output);
    this.#turn = turn;
    try {
      // Ended, or destroyed: the client left, or the shutdown grace ran out.
      if (!turn.closed) await new Promise((resolve) => turn.once('close', resolve));
    } finally {
      this.#turn = undefined;
      const ending = this.#ending;
      if (ending) this.#ws.close(ending.code, ending.reason);
    }
  }

  /** A completed response: the conversation so far, for a continuation by its id. */
  #remember(data: string, input: unknown[]): void {
    let event: unknown;
    try {
      event = JSON.parse(data);
    } catch {
      return;
    }
    if (!isObject(event) || event['type'] !== 'response.completed' || !isObject(event['response'])) return;
    const { id, output } = event['response'];
    if (typeof id !== 'string') return;
    this.#last = { id, items: [...input, ...(Array.isArray(output) ? (output as unknown[]) : [])] };
  }
}
