/**
 * What gatehouse knows about one wire protocol, in one value. The core (auth,
 * routing, pass-through, translation, model lists, internal endpoints) reads
 * these through the record in registry.ts and never names a protocol itself.
 * Adding a protocol: see docs/proxy.md, "Adding a protocol".
 */
import type { ParsedUrlQuery } from 'node:querystring';
import type { HttpError } from '../../http/errors.ts';
import type { ClientAdapter, JsonObject, RequestContext, UpstreamAdapter } from '../translate/model.ts';

/** What an operation reads of an upstream's configuration: the settings protocols declare (`upstreamSettings`). */
export interface UpstreamSettings {
  /** `responses_api`: whether an OpenAI upstream serves `/responses` as it is. */
  readonly responsesApi: boolean;
}

/** Where a request to an upstream goes, below its base_url. */
export interface UpstreamTarget {
  path: string;
  /** Query string without `?`. */
  query?: string;
}

/** One client-facing operation: chat completions, messages, streamGenerateContent, … */
export interface Operation {
  /** Its name in logs and error messages. */
  readonly name: string;
  /** Where a request of this operation goes when it passes through, for the (mapped) model. */
  upstreamPath(model: string): string;
  /** Its side of a translated call; without one, only an upstream of the same protocol serves it (else 501). */
  readonly client?: ClientAdapter;
  /** A fixed stream flag (Gemini's method says it); otherwise the body's `stream: true`. */
  readonly stream?: boolean;
  /** Whether an upstream of the operation's own protocol takes it as it is (default: always). */
  servedBy?(upstream: UpstreamSettings): boolean;
  /**
   * The most output tokens the request asks for (its `max_tokens` or the like), read from the body as it came:
   * what admission reserves for the answer (see Reservation). Without it, or when it is not a number, the
   * configured default is reserved; an operation that answers no generated text reserves none (`count`).
   */
  outputCap?(body: JsonObject): unknown;
  /** A token count: answered locally, from this estimate, when it does not pass through. */
  readonly count?: {
    estimate(body: JsonObject, model: string): number;
    answer(tokens: number): unknown;
  };
  /**
   * The answer is kept for the client to continue by its id (the Responses API's previous_response_id). The
   * proxy names it with `newId()`, never after the upstream's id: that id is a key in a store every client of
   * the proxy (and every replica) shares, so it must be unique and unguessable whatever the upstream sends.
   */
  readonly continuable?: {
    newId(): string;
    /** The id of the answer a request continues (`previous_response_id`), as the body has it. */
    continues(body: JsonObject): unknown;
    /**
     * Whether the upstream keeps a passed-through answer to be continued (`store` is not false). Such an answer's
     * id is read from its start (its JSON body's `id`, or its stream's first event's `response.id`) and recorded
     * for the key that asked (src/proxy/response-owners.ts).
     */
    kept(body: JsonObject): boolean;
  };
  /** What the decoder needs from the query string (Gemini's `alt=sse`). */
  context?(query: ParsedUrlQuery): Partial<RequestContext>;
  /** Its OpenTelemetry GenAI `gen_ai.operation.name` (default `chat`). */
  readonly genAiOperation?: string;
}

/** A client-facing POST route whose model is the JSON body's `model` (an alias rewrites it there). */
export interface BodyRoute {
  readonly path: string;
  readonly operation: Operation;
  /** multipart/form-data bodies stream through to an upstream of the same protocol (a JSON body still may). */
  readonly multipart?: boolean;
  /**
   * Also served over a WebSocket (`GET` with `Upgrade: websocket`): each `response.create` text frame is a
   * streamed request to this route, its events sent back one text frame each (src/proxy/websocket).
   */
  readonly websocket?: boolean;
}

/** A client-facing POST route whose `:model` parameter names the model and the operation (Gemini's). */
export interface PathRoute {
  readonly path: string;
  fromPath(param: string): { operation: Operation; model: string } | undefined;
}

export type ClientRoute = BodyRoute | PathRoute;

/** One model as an upstream lists it. */
export interface ListedModel {
  id: string;
  displayName?: string;
}

/** One routable model as the proxy lists it to clients. */
export interface CatalogEntry {
  id: string;
  /** The upstream that serves it (for an alias: its target's). */
  upstream: string;
  displayName: string;
}

/** The credential a key travels in: on the way in (clients) and out (upstreams). */
export interface Credentials {
  /** The request header (lower case) a client presents its key in: never forwarded, redacted in logs. */
  readonly header: string;
  /** The scheme in front of the key in that header (`Bearer`), if any. */
  readonly scheme?: string;
  /** A query parameter a client may present its key in instead: never forwarded. */
  readonly query?: string;
  /** Puts an upstream's key (and any header the protocol requires) on a request to it. */
  authorize(headers: Record<string, string | string[]>, apiKey: string | undefined): void;
}

/** Tokens an upstream reported for one answer. */
export interface UpstreamUsage {
  input: number;
  output: number;
  /** Input tokens served from the prompt cache (part of input). */
  cached: number;
  /** Input tokens written to the prompt cache (part of input). */
  cacheWrite?: number;
}

export interface ProtocolSpec {
  /** Its OpenTelemetry GenAI `gen_ai.provider.name` (default: its name in the registry). */
  readonly genAiProvider?: string;
  /** Upstream settings only this protocol's upstreams take (`responses_api`). */
  readonly upstreamSettings?: readonly string[];
  /**
   * Request headers this protocol's SDKs send besides the key (versions, betas,
   * telemetry): a browser client of an allowed origin may send them.
   */
  readonly sdkHeaders: readonly string[];
  /** Client-facing model routes. */
  readonly routes: readonly ClientRoute[];
  /** Which request paths are this protocol's: their errors take its shape, their log lines its name. */
  readonly family: {
    readonly paths?: RegExp;
    /** Paths under it that no other protocol claims. */
    readonly fallback?: RegExp;
    /** Paths every vendor's SDK calls (`/v1/models`): another protocol's `sniff` may claim the request. */
    readonly shared?: RegExp;
    /** On a shared path: the request came from this protocol's SDK. */
    sniff?(get: (header: string) => string, query: string): boolean;
  };
  readonly credentials: Credentials;
  /** The upstream requests the core makes itself, below base_url. */
  readonly upstream: {
    /** A translated call: plain or streamed. */
    generate(model: string, stream: boolean): UpstreamTarget;
    /** The model list (also the key check of a model-less warmup). */
    readonly models: UpstreamTarget;
    /** The cheapest request that loads `model`: one output token. */
    warmup(model: string): { path: string; body: JsonObject };
  };
  /** The upstream side of a translated call. */
  readonly adapter: UpstreamAdapter;
  /**
   * Errors in this protocol's shape: one table for a whole answer and an
   * event inside a stream (the stream encoders use `type` too).
   */
  readonly errors: {
    /** The vendor's error type (or status name) for an HTTP status. */
    type(status: number): string;
    body(error: HttpError): unknown;
    /** The status a client of this protocol gets for an upstream's error status (default: the same). */
    status?(upstreamStatus: number): number;
  };
  /**
   * Token counts in a passed-through answer, read from its usage objects (a
   * JSON body's, or a stream's first and last: usage/tap.ts finds them); the
   * last number a field has counts. Undefined when they name none.
   */
  usage(text: string): UpstreamUsage | undefined;
  /** A stream's first usage object counts as well as its last; otherwise only the last is looked for. */
  readonly usageAtStart?: boolean;
  /**
   * A passed-through answer's finish reasons (OpenTelemetry's `gen_ai.response.finish_reasons`), in this
   * protocol's words, one per choice: read from what usage/tap.ts kept of it (its end, or the text after its last
   * `finishMark`). Read only while tracing is on.
   */
  finishReasons(text: string): string[];
  /** Where the finish reasons follow when they may be far from the answer's end (the Responses API's status). */
  readonly finishMark?: string;
  readonly models: {
    /** Client-facing GET paths: the list, and one model by `:model`. */
    readonly listPaths: readonly string[];
    readonly infoPaths: readonly string[];
    /** An upstream's model-list answer. */
    parse(json: unknown): ListedModel[];
    /** One model, and the list, in this protocol's client shape. */
    entry(entry: CatalogEntry): unknown;
    list(entries: readonly CatalogEntry[]): unknown;
  };
}
