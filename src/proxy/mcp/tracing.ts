/**
 * MCP calls as their own spans, after the OpenTelemetry semantic conventions
 * for MCP (client spans: the proxy calls the MCP server for its client). One
 * span per JSON-RPC request in a POST to `/mcp/<name>/mcp`, stdio or remote
 * alike: read from the body the client sent, ended by its answer in what the
 * proxy wrote back (one JSON body, or the events of an SSE stream). Named
 * `{mcp.method.name} {tool or prompt}`; a `params._meta.traceparent` is its
 * parent (the conventions' propagation), else the HTTP request's span.
 * Messages are relayed unchanged: nothing is injected into what the server
 * gets. A tool call's arguments and result are recorded only when
 * `capture_content` asks for them.
 */
import { context, propagation, SpanKind, SpanStatusCode, type Attributes, type Span } from '@opentelemetry/api';
import type { ServerResponse } from 'node:http';
import type { McpServer } from '../config/mcp.ts';
import { isObject } from '../../json.ts';
import type { Tracing } from '../../telemetry/tracing.ts';
import type { ProxyContext } from '../context.ts';

/** What of an answer is read for its JSON-RPC responses: a larger one leaves its calls' outcome unknown. */
const ANSWER_BYTES = 1024 * 1024;

type Message = Record<string, unknown>;

/** A JSON-RPC request id, as the conventions record it (a string); undefined for a notification. */
const idOf = (message: Message): string | undefined =>
  typeof message['id'] === 'string' || typeof message['id'] === 'number' ? String(message['id']) : undefined;

function messagesIn(value: unknown): Message[] {
  return (Array.isArray(value) ? value : [value]).filter(isObject);
}

/** The JSON-RPC messages of a POST body; none when it is not JSON (the bridge answers that). */
function requestsOf(body: Buffer | undefined): Message[] {
  if (body === undefined) return [];
  try {
    return messagesIn(JSON.parse(body.toString('utf8'))).filter((m) => typeof m['method'] === 'string');
  } catch {
    return [];
  }
}

/** The JSON-RPC messages the proxy wrote back: one JSON body, or each `data:` line of an SSE stream. */
function answersOf(text: string, contentType: string): Message[] {
  const texts = contentType.startsWith('text/event-stream')
    ? text.split(/\r?\n/).flatMap((line) => (line.startsWith('data:') ? [line.slice(5)] : []))
    : [text];
  return texts.flatMap((part) => {
    try {
      return messagesIn(JSON.parse(part));
    } catch {
      return [];
    }
  });
}

/** The span's name and attributes for one request, as the conventions have them. */
function describe(request: Message, captureContent: boolean): { name: string; attributes: Attributes } {
  const method = request['method'] as string;
  const params = isObject(request['params']) ? request['params'] : {};
  const attributes: Attributes = { 'mcp.method.name': method };
  const id = idOf(request);
  if (id !== undefined) attributes['jsonrpc.request.id'] = id;
  const target = typeof params['name'] === 'string' ? params['name'] : undefined;
  if (method === 'tools/call' && target !== undefined) {
    attributes['gen_ai.operation.name'] = 'execute_tool';
    attributes['gen_ai.tool.name'] = target;
    if (captureContent) attributes['gen_ai.tool.call.arguments'] = JSON.stringify(params['arguments'] ?? {});
  }
  if (method === 'prompts/get' && target !== undefined) attributes['gen_ai.prompt.name'] = target;
  if (typeof params['uri'] === 'string') attributes['mcp.resource.uri'] = params['uri'];
  if (method === 'initialize' && typeof params['protocolVersion'] === 'string') {
    attributes['mcp.protocol.version'] = params['protocolVersion'];
  }
  const named = method === 'tools/call' || method === 'prompts/get' ? target : undefined;
  return { name: named === undefined ? method : `${method} ${named}`, attributes };
}

/** Where the server is, as the conventions' network and server attributes say it. */
function serverAttributes(name: string, server: McpServer): Attributes {
  if (server.kind === 'stdio') return { 'gatehouse.mcp.server': name, 'network.transport': 'pipe' };
  const url = new URL(server.url);
  const port = url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  return {
    'gatehouse.mcp.server': name,
    'network.transport': 'tcp',
    'network.protocol.name': 'http',
    'server.address': url.hostname,
    'server.port': port,
  };
}

/** Keeps what the response writes (up to ANSWER_BYTES), and tells `done` it all once the response has closed. */
function watchAnswer(res: ServerResponse, done: (text: string) => void): void {
  const chunks: Buffer[] = [];
  let bytes = 0;
  const keep = (chunk: unknown): void => {
    if (bytes > ANSWER_BYTES) return;
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk instanceof Uint8Array ? chunk : undefined;
    if (buffer === undefined) return;
    chunks.push(Buffer.from(buffer));
    bytes += buffer.length;
  };
  const write = res.write.bind(res) as (chunk: unknown, ...rest: unknown[]) => boolean;
  const end = res.end.bind(res) as (chunk?: unknown, ...rest: unknown[]) => ServerResponse;
  res.write = ((chunk: unknown, ...rest: unknown[]) => {
    keep(chunk);
    return write(chunk, ...rest);
  }) as ServerResponse['write'];
  res.end = ((chunk?: unknown, ...rest: unknown[]) => {
    if (typeof chunk !== 'function') keep(chunk);
    return end(chunk, ...rest);
  }) as ServerResponse['end'];
  res.once('close', () => done(bytes > ANSWER_BYTES ? '' : Buffer.concat(chunks).toString('utf8')));
}

/** Ends a call's span with its answer (a result, a JSON-RPC error) or, without one, the HTTP status. */
function endCall(span: Span, answer: Message | undefined, status: number, captureContent: boolean): void {
  const error = answer?.['error'];
  const result = answer?.['result'];
  let type: string | undefined;
  if (isObject(error)) {
    type = String(error['code']);
    span.setAttribute('rpc.response.status_code', type);
    const message = error['message'];
    span.setStatus({ code: SpanStatusCode.ERROR, ...(typeof message === 'string' && { message }) });
  } else if (isObject(result)) {
    if (result['isError'] === true) type = 'tool_error';
    if (typeof result['protocolVersion'] === 'string')
      span.setAttribute('mcp.protocol.version', result['protocolVersion']);
    if (captureContent && 'content' in result) span.setAttribute('gen_ai.tool.call.result', JSON.stringify(result));
  } else {
    // No answer came (the client left, the proxy refused the request): the HTTP status, when it says more.
    type = status >= 400 ? String(status) : 'no_answer';
  }
  if (type !== undefined) {
    span.setAttribute('error.type', type);
    if (!isObject(error)) span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}

export class McpTracing {
  readonly #tracing: Tracing;

  constructor(tracing: Tracing) {
    this.#tracing = tracing;
  }

  /** Opens a span per request in this POST's body; each ends with its answer, once the response has closed. */
  watch(ctx: ProxyContext, name: string, server: McpServer, body: Buffer | undefined): void {
    const request = ctx.state.trace;
    const requests = requestsOf(body);
    if (!request || requests.length === 0) return;
    const { tracer, captureContent } = this.#tracing;
    const shared = serverAttributes(name, server);
    const session = ctx.get('mcp-session-id');
    if (session) shared['mcp.session.id'] = session;
    const version = ctx.get('mcp-protocol-version');
    if (version) shared['mcp.protocol.version'] = version;
    const calls = new Map<string, Span>();
    for (const message of requests) {
      const { name: spanName, attributes } = describe(message, captureContent);
      const params = isObject(message['params']) ? message['params'] : {};
      const meta = isObject(params['_meta']) ? params['_meta'] : undefined;
      const parent = meta && 'traceparent' in meta ? propagation.extract(context.active(), meta) : request.context;
      const span = tracer.startSpan(
        spanName,
        { kind: SpanKind.CLIENT, attributes: { ...shared, ...attributes } },
        parent,
      );
      const id = idOf(message);
      // A notification is answered by the 202 alone.
      if (id === undefined) span.end();
      else calls.set(id, span);
    }
    if (calls.size === 0) return;
    const res = ctx.res;
    watchAnswer(res, (text) => {
      const answers = new Map<string, Message>();
      for (const answer of answersOf(text, String(res.getHeader('content-type') ?? ''))) {
        const id = idOf(answer);
        if (id !== undefined && ('result' in answer || 'error' in answer)) answers.set(id, answer);
      }
      const sessionId = res.getHeader('mcp-session-id');
      for (const [id, span] of calls) {
        if (typeof sessionId === 'string' && !session) span.setAttribute('mcp.session.id', sessionId);
        endCall(span, answers.get(id), res.statusCode, captureContent);
      }
    });
  }
}
