import { request, type ClientRequest, type IncomingHttpHeaders } from 'node:http';
import { connect, type Socket } from 'node:net';

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/**
 * One HTTP/1.1 request through node:http, which (unlike fetch) sends any
 * `Host` header it is given: what a page whose name was rebound to this
 * address sends.
 */
export interface RawRequestOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
}

function answerOf(req: ClientRequest): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

export function rawRequest(url: string, options: RawRequestOptions = {}): Promise<RawResponse> {
  const req = request(url, { method: options.method ?? 'GET', headers: options.headers ?? {} });
  const answer = answerOf(req);
  req.end(options.body);
  return answer;
}

/**
 * JSON POSTs under way in the server all at once, each on its own connection:
 * each sends its headers with `Expect: 100-continue`, and no body goes out
 * before every one has had its `100 Continue`, which node:http sends as the
 * request reaches its handler. Sent at the same moment without this, through
 * Docker's port forwarding, one may reach the server only after another was
 * answered and the server closed.
 */
export async function postsUnderWayTogether<const P extends readonly { path: string; body: unknown }[]>(
  base: string,
  posts: P,
): Promise<{ [K in keyof P]: RawResponse }> {
  const started = posts.map(({ path, body }) => {
    const bytes = Buffer.from(JSON.stringify(body));
    const req = request(new URL(path, base), {
      method: 'POST',
      agent: false,
      headers: { 'content-type': 'application/json', 'content-length': bytes.length, expect: '100-continue' },
    });
    const answer = answerOf(req);
    const admitted = new Promise((resolve) => {
      req.once('continue', resolve);
      // An answer before the body (a refusal) admits it too: its body is then never read.
      req.once('response', resolve);
    });
    req.flushHeaders();
    return { req, bytes, answer, admitted };
  });
  await Promise.all(started.map(({ admitted }) => admitted));
  for (const { req, bytes } of started) req.end(bytes);
  return (await Promise.all(started.map(({ answer }) => answer))) as { [K in keyof P]: RawResponse };
}

/** The same request as source text for `node -e` inside a container: prints `<status> <nosniff> <body>`. */
export function rawRequestScript(url: string, options: RawRequestOptions = {}): string {
  const init = JSON.stringify({ method: options.method ?? 'GET', headers: options.headers ?? {} });
  return `const r = require('node:http').request(${JSON.stringify(url)}, ${init}, (res) => {
    let t = '';
    res.on('data', (c) => (t += c));
    res.on('end', () => console.log(res.statusCode, res.headers['x-content-type-options'], t));
  });
  r.end(${JSON.stringify(options.body ?? '')});`;
}

/**
 * HTTP/1.1 by hand over a socket, for what fetch hides: a client still
 * sending a body while the answer comes back, a connection reset, a client
 * hanging up halfway through its body.
 */

export interface RawRequest {
  path: string;
  headers: Record<string, string>;
  /** The body's first bytes; the rest is `x` up to `bodyBytes`. */
  bodyPrefix: string;
  bodyBytes: number;
  /** A declared Content-Length, or chunked transfer coding (no length). */
  framing: 'content-length' | 'chunked';
  /** Hang up (destroy the socket) after this many body bytes. */
  hangUpAfter?: number;
}

export interface RawAnswer {
  /** 0 when no status line arrived. */
  status: number;
  /** The response body as text. */
  text: string;
  json: unknown;
  /** The socket error the client saw (EPIPE, ECONNRESET…), if any. */
  error: string | undefined;
}

const CHUNK = 64 * 1024;

function waitWritable(socket: Socket): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      socket.off('drain', done);
      socket.off('close', done);
      resolve();
    };
    socket.on('drain', done);
    socket.on('close', done);
  });
}

/** The body's pieces as they go on the wire (chunk-framed when `chunked`). */
function* bodyPieces(request: RawRequest): Generator<Buffer> {
  const filler = Buffer.alloc(CHUNK, 'x');
  let sent = 0;
  let first = true;
  while (sent < request.bodyBytes) {
    const data = first ? Buffer.concat([Buffer.from(request.bodyPrefix), filler]).subarray(0, CHUNK) : filler;
    first = false;
    const piece = data.subarray(0, Math.min(data.length, request.bodyBytes - sent));
    sent += piece.length;
    if (request.framing === 'content-length') yield piece;
    else yield Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]);
  }
  if (request.framing === 'chunked') yield Buffer.from('0\r\n\r\n');
}

function parseAnswer(raw: Buffer, error: string | undefined): RawAnswer {
  const text = raw.toString('utf8');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
  const body = text.slice(text.indexOf('\r\n\r\n') + 4);
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    json = undefined;
  }
  return { status, text: status === 0 ? text : body, json, error };
}

/**
 * Sends the request, writing the body as fast as the connection takes it
 * while reading whatever comes back, then half-closes and reads until the
 * server closes. Socket errors are part of the answer, never thrown.
 */
export async function rawExchange(base: URL, request: RawRequest): Promise<RawAnswer> {
  const socket = connect(Number(base.port), base.hostname);
  const received: Buffer[] = [];
  let error: string | undefined;
  socket.on('data', (chunk: Buffer) => received.push(chunk));
  socket.on('error', (e: NodeJS.ErrnoException) => (error ??= e.code ?? e.message));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve) => {
    socket.once('connect', resolve);
    socket.once('close', resolve);
  });
  const framing = request.framing === 'chunked' ? 'transfer-encoding: chunked' : `content-length: ${request.bodyBytes}`;
  const fields = Object.entries(request.headers).map(([k, v]) => `${k}: ${v}`);
  const head = [`POST ${request.path} HTTP/1.1`, `host: ${base.host}`, ...fields, framing, '', ''];
  socket.write(head.join('\r\n'));
  let written = 0;
  for (const piece of bodyPieces(request)) {
    if (socket.destroyed) break;
    if (request.hangUpAfter !== undefined && written + piece.length >= request.hangUpAfter) {
      socket.write(piece.subarray(0, request.hangUpAfter - written));
      socket.destroy();
      break;
    }
    written += piece.length;
    if (!socket.write(piece)) await waitWritable(socket);
  }
  if (!socket.destroyed) socket.end();
  await closed;
  return parseAnswer(Buffer.concat(received), error);
}

export interface LogLine {
  level: number;
  msg?: string;
  status?: number;
  [field: string]: unknown;
}

/** The JSON lines of a process's log (pino), skipping anything else. */
export function logLines(output: string): LogLine[] {
  return output.split('\n').flatMap((line) => {
    if (!line.startsWith('{')) return [];
    try {
      return [JSON.parse(line) as LogLine];
    } catch {
      return [];
    }
  });
}
