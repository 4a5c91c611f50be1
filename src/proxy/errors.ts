import { HttpError } from '../http/errors.ts';

/**
 * Every error the proxy itself answers with: status, message and kind in one
 * place. families.ts renders them in each vendor's body shape (the kind is
 * OpenAI's `error.code`). Same-protocol upstream errors are not here: they pass
 * through as the upstream sent them (translated ones use upstreamError).
 */
/** The kind of an upstream's own error relayed in a translated answer (also mid-stream). */
export const UPSTREAM_ERROR_KIND = 'upstream_error';

/** What a client is told to wait while Redis is away: about the longest pause between reconnection attempts. */
const STATE_RETRY_AFTER_S = 2;

export const proxyErrors = {
  unauthorized: () => new HttpError(401, 'Invalid or missing API key', { kind: 'invalid_api_key' }),
  originNotAllowed: (origin: string) =>
    new HttpError(
      403,
      `Origin ${origin} may not use this proxy: add it to proxy.cors.allowed_origins (PROXY_CORS_ALLOWED_ORIGINS)`,
      { kind: 'origin_not_allowed' },
    ),
  hostNotAllowed: (host: string) =>
    new HttpError(
      403,
      `Host ${JSON.stringify(host)} is not served to requests without a key: ` +
        'add it to proxy.allowed_hosts (PROXY_ALLOWED_HOSTS)',
      { kind: 'host_not_allowed' },
    ),
  invalidJson: () => new HttpError(400, 'Invalid JSON body', { kind: 'invalid_json' }),
  notJsonObject: () => new HttpError(400, 'The request body must be a JSON object', { kind: 'invalid_json' }),
  badField: (field: string, expected: string) =>
    new HttpError(400, `\`${field}\` must be ${expected}`, { kind: 'invalid_request' }),
  missingModel: () => new HttpError(400, 'The request names no `model`', { kind: 'missing_model' }),
  invalidMultipart: () => new HttpError(400, 'Malformed multipart/form-data body', { kind: 'invalid_multipart' }),
  invalidMultipartField: (what: string) =>
    new HttpError(400, `The multipart/form-data body has ${what}: send exactly one text field named "model"`, {
      kind: 'invalid_multipart',
    }),
  tooLarge: (limit: number) =>
    new HttpError(413, `Request body larger than ${limit} bytes`, { kind: 'request_too_large' }),
  modelNotFound: (model: string) =>
    new HttpError(404, `No upstream serves model ${JSON.stringify(model)}`, { kind: 'model_not_found' }),
  routeNotFound: (method: string, path: string) =>
    new HttpError(404, `No route for ${method} ${path}`, { kind: 'not_found' }),
  noTranslation: (from: string, to: string, what: string) =>
    new HttpError(501, `Translating ${what} from the ${from} protocol to a ${to} upstream is not supported`, {
      kind: 'translation_unavailable',
    }),
  adminRequired: () =>
    new HttpError(403, 'This endpoint needs an admin key (admin: true in proxy.keys, or proxy.api_key)', {
      kind: 'admin_required',
    }),
  usageNotKept: () => new HttpError(404, 'This proxy keeps no usage file', { kind: 'not_found' }),
  invalidRequest: (message: string) => new HttpError(400, message, { kind: 'invalid_request' }),
  previousResponseNotFound: (id: string) =>
    new HttpError(404, `Previous response with id '${id}' not found.`, { kind: 'previous_response_not_found' }),
  /** A translated request's upstream error: its status and message in the client's shape. */
  upstreamError: (status: number, message: string, headers: Record<string, string>) =>
    new HttpError(status, message, { kind: UPSTREAM_ERROR_KIND, headers }),
  upstreamUnreachable: (upstream: string) =>
    new HttpError(502, `Upstream ${upstream} is unreachable`, { kind: 'upstream_unreachable' }),
  upstreamBrokeOff: (upstream: string) =>
    new HttpError(502, `Upstream ${upstream} broke off its answer`, { kind: 'upstream_broke_off' }),
  /** Cuts the streams still open when the shutdown grace runs out (as their protocol's error event). */
  shuttingDown: () => new HttpError(503, 'The proxy is shutting down', { kind: 'shutting_down' }),
  /** Redis (proxy.state) cannot be reached: a stored conversation, or a limit with on_unavailable deny. */
  stateUnavailable: () =>
    new HttpError(503, "The proxy's shared state (Redis) cannot be reached; retry shortly", {
      kind: 'state_unavailable',
      headers: { 'retry-after': String(STATE_RETRY_AFTER_S) },
    }),
  /** An upstream whose api_key_env is unset (proxy.strict_keys off): never called, its models answer this. */
  upstreamKeyMissing: (upstream: string, variable: string) =>
    new HttpError(
      503,
      `Upstream ${upstream} has no API key: the environment variable ${variable} is not set where the proxy runs`,
      { kind: 'upstream_key_missing' },
    ),
  /** WebSocket frames the Responses API's WebSocket mode does not take (each gets an error frame; the socket stays). */
  binaryFrame: () =>
    new HttpError(400, 'Binary frames are not accepted: send each response.create as a JSON text frame', {
      kind: 'invalid_request',
    }),
  unknownEvent: (type: unknown) =>
    new HttpError(400, `Unsupported event type ${JSON.stringify(type)}: only response.create is accepted`, {
      kind: 'unknown_event_type',
    }),
  responseInProgress: () =>
    new HttpError(
      400,
      'A response is already in progress on this connection: wait for it to end, or open another connection',
      { kind: 'response_in_progress' },
    ),
  connectionLimit: (minutes: number) =>
    new HttpError(400, `WebSocket connection limit reached (${minutes} minutes): open a new connection to continue`, {
      kind: 'websocket_connection_limit_reached',
    }),
  upstreamTimeout: (upstream: string, ms: number) =>
    new HttpError(504, `Upstream ${upstream} did not answer within ${ms} ms`, { kind: 'upstream_timeout' }),
} as const;
