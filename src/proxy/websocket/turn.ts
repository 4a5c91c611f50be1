/**
 * A WebSocket turn as a request to the proxy's own request handler, in
 * memory: no HTTP is written or parsed. The handler (the Koa app in force)
 * reads a TurnRequest as it reads a client's request and writes a
 * TurnResponse as it writes a client's response, so a turn meets every
 * middleware a POST meets (log line, origin, host, key, limits, routing,
 * fallback, usage, metrics, traces) and the same dispatch; nothing of that
 * path is copied here. What the handler writes goes out as frames: a
 * stream's events one text frame each, as they are written, and any other
 * answer (an error, the upgrade check's 204) whole.
 */
import { EventEmitter } from 'node:events';
import type {
  IncomingHttpHeaders,
  IncomingMessage,
  OutgoingHttpHeader,
  OutgoingHttpHeaders,
  ServerResponse,
} from 'node:http';
import { Readable, Writable } from 'node:stream';
import { SseParser } from '../translate/wire.ts';

/** The proxy's request handler (LiveProxy.handle): what a turn is sent to. */
export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * Bytes the socket may hold unwritten before the answer waits for them: a
 * slow client holds back the upstream, as on the HTTP path.
 */
export const HIGH_WATER_BYTES = 64 * 1024;
/** A whole answer's body is kept up to this size (the rest would be an upstream's page of HTML). */
const MAX_ANSWER_BYTES = 64 * 1024;

/** Where a turn's answer goes. */
export interface TurnOutput {
  /** One event of a streamed answer (its SSE data); `written`, when given, is called once the socket took it. */
  event(data: string, written?: () => void): void;
  /** Bytes sent on and not yet written to the socket. */
  readonly backlog: number;
  /** The events of one chunk leave in one write: `hold` before them, `release` after. */
  hold(): void;
  release(): void;
  /** An answer that is not a stream, once it has ended. */
  answer(status: number, headers: IncomingHttpHeaders, body: string): void;
}

/** What a request's socket tells: where the connection came from. */
function peer(socket: { remoteAddress?: string | undefined; remotePort?: number | undefined; encrypted?: boolean }) {
  return Object.assign(new EventEmitter(), {
    remoteAddress: socket.remoteAddress,
    remotePort: socket.remotePort,
    encrypted: socket.encrypted === true,
  });
}

/**
 * The request of one turn: the upgrade's headers (its key, its origin), a
 * method and path, and the body. Its socket only tells where the connection
 * came from: the WebSocket's own socket is not the request's to touch.
 */
export class TurnRequest extends Readable {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly socket: ReturnType<typeof peer>;
  readonly httpVersion = '1.1';
  readonly httpVersionMajor = 1;
  readonly httpVersionMinor = 1;
  #body: Buffer | undefined;

  constructor(
    method: 'GET' | 'POST',
    url: string,
    headers: IncomingHttpHeaders,
    from: IncomingMessage['socket'],
    body?: Buffer,
  ) {
    super();
    this.method = method;
    this.url = url;
    this.headers = body === undefined ? headers : { ...headers, 'content-length': String(body.length) };
    this.socket = peer(from);
    this.#body = body;
  }

  override _read(): void {
    const body = this.#body;
    this.#body = undefined;
    if (body !== undefined && body.length > 0) this.push(body);
    this.push(null);
  }
}

/**
 * The response of one turn, with what the proxy's writers use of a
 * ServerResponse: status and headers, writes with backpressure, `end`, and
 * 'close' once it has ended or been destroyed (the client left: the
 * request's upstream call stops, as when an HTTP client hangs up). A 200
 * event stream is read event by event into frames; any other answer is kept
 * (up to MAX_ANSWER_BYTES) and told whole when it ends.
 */
export class TurnResponse extends Writable {
  statusCode = 200;
  statusMessage = '';
  /** No socket: Koa takes the response as writable until it has ended. */
  readonly socket = null;
  readonly #output: TurnOutput;
  readonly #headers = new Map<string, OutgoingHttpHeader>();
  #sent = false;
  /** Set when the headers go: a stream's events, else the whole answer's text. */
  #events: SseParser | undefined;
  #text = '';

  constructor(output: TurnOutput) {
    super({ decodeStrings: false, highWaterMark: HIGH_WATER_BYTES });
    this.#output = output;
    // Writes after the client left fail quietly, as a ServerResponse's do.
    this.on('error', () => undefined);
  }

  get headersSent(): boolean {
    return this.#sent;
  }

  setHeader(name: string, value: OutgoingHttpHeader): this {
    this.#headers.set(name.toLowerCase(), value);
    return this;
  }

  getHeader(name: string): OutgoingHttpHeader | undefined {
    return this.#headers.get(name.toLowerCase());
  }

  getHeaders(): OutgoingHttpHeaders {
    return Object.fromEntries(this.#headers);
  }

  getHeaderNames(): string[] {
    return [...this.#headers.keys()];
  }

  hasHeader(name: string): boolean {
    return this.#headers.has(name.toLowerCase());
  }

  removeHeader(name: string): void {
    this.#headers.delete(name.toLowerCase());
  }

  writeHead(status: number, headers?: OutgoingHttpHeaders | readonly string[]): this {
    this.statusCode = status;
    if (headers && !Array.isArray(headers)) {
      for (const [name, value] of Object.entries(headers)) if (value !== undefined) this.setHeader(name, value);
    }
    this.#send();
    return this;
  }

  /** The headers go with the first write, as a ServerResponse's do. */
  #send(): void {
    if (this.#sent) return;
    this.#sent = true;
    const type = String(this.getHeader('content-type') ?? '');
    if (this.statusCode === 200 && type.startsWith('text/event-stream')) this.#events = new SseParser();
  }

  override _write(chunk: Buffer | string, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    this.#send();
    const text = typeof chunk === 'string' ? chunk : chunk.toString('utf8');
    const events = this.#events;
    if (!events) {
      if (this.#text.length < MAX_ANSWER_BYTES) this.#text += text.slice(0, MAX_ANSWER_BYTES - this.#text.length);
      done();
      return;
    }
    this.#relay(events.push(text), done);
  }

  override _final(done: (error?: Error | null) => void): void {
    this.#send();
    const events = this.#events;
    if (events) {
      this.#relay(events.flush(), done);
      return;
    }
    const headers: IncomingHttpHeaders = {};
    for (const [name, value] of this.#headers) headers[name] = typeof value === 'number' ? String(value) : value;
    this.#output.answer(this.statusCode, headers, this.#text);
    done();
  }

  /** Sends events on in one write; `done` waits for the socket when it holds more than HIGH_WATER_BYTES. */
  #relay(frames: readonly { data: string }[], done: () => void): void {
    const output = this.#output;
    let last: string | undefined;
    output.hold();
    for (const { data } of frames) {
      if (data === '[DONE]') continue;
      if (last !== undefined) output.event(last);
      last = data;
    }
    // Decided before the last event goes: once it is written, `done` must not come twice.
    const wait = last !== undefined && output.backlog >= HIGH_WATER_BYTES;
    if (last !== undefined) output.event(last, wait ? done : undefined);
    output.release();
    if (!wait) done();
  }
}

/**
 * Hands an in-memory request to the proxy's handler. The handler is typed for node:http's request and response;
 * a TurnRequest and a TurnResponse have every member it reads of them (Koa's request and response, the request
 * log, the pass-through and translated writers), which the WebSocket black-box suite runs through.
 */
export function sendTurn(handle: RequestHandler, req: TurnRequest, res: TurnResponse): void {
  handle(req as unknown as IncomingMessage, res as unknown as ServerResponse);
}
