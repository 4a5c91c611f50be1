/**
 * `proxy.telemetry` (and the review server's and hub's `telemetry`): OpenTelemetry traces over OTLP/HTTP. On
 * when an endpoint is set, off otherwise. The endpoint, headers and service name also come from the standard
 * OTEL_* variables, as every OpenTelemetry SDK reads them.
 */
export interface TelemetryConfig {
  /** Where spans are POSTed (`…/v1/traces`); undefined: tracing is off. */
  tracesUrl: string | undefined;
  /** Sent with every export (an API key for a hosted backend). */
  headers: Record<string, string>;
  serviceName: string;
  /** Spans waiting to be exported at most; more are dropped (and counted). */
  maxQueueSize: number;
  /** How long a finished span may wait for its batch to go out. */
  scheduleDelayMs: number;
  /** How long one export may take. */
  exportTimeoutMs: number;
  /** Content (an MCP tool call's arguments and result) is recorded on spans: off unless asked for. */
  captureContent: boolean;
}

export function telemetrySchema(serviceName: string) {
  return {
    endpoint: {
      doc: 'OTLP/HTTP base URL (traces go to <endpoint>/v1/traces); empty: no traces.',
      format: String,
      default: '',
      env: 'OTEL_EXPORTER_OTLP_ENDPOINT',
    },
    traces_endpoint: {
      doc: 'OTLP/HTTP traces URL, taken as is (over endpoint).',
      format: String,
      default: '',
      env: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
    },
    headers: {
      doc: 'Headers sent with every export: `name=value` pairs, comma-separated.',
      format: String,
      default: '',
      env: 'OTEL_EXPORTER_OTLP_HEADERS',
      sensitive: true,
    },
    service_name: { doc: 'service.name of the spans.', format: String, default: serviceName, env: 'OTEL_SERVICE_NAME' },
    max_queue_size: { doc: 'Spans waiting for export at most; more are dropped.', format: 'nat', default: 2048 },
    schedule_delay: {
      doc: 'How long a finished span may wait for its batch to be exported.',
      format: 'duration',
      default: 5_000,
      env: 'OTEL_BSP_SCHEDULE_DELAY',
    },
    export_timeout: { doc: 'How long one export may take.', format: 'duration', default: 10_000 },
    capture_content: {
      doc: "Record content on spans (an MCP tool call's arguments and result); off: never.",
      format: Boolean,
      default: false,
      env: 'OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT',
    },
  };
}

interface TelemetryValues {
  endpoint: string;
  traces_endpoint: string;
  headers: string;
  service_name: string;
  max_queue_size: number;
  schedule_delay: number;
  export_timeout: number;
  capture_content: boolean;
}

/** `a=b,c=d` (values percent-decoded, as the OTLP exporter specification has them). */
function parseHeaders(text: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of text.split(',')) {
    const at = pair.indexOf('=');
    if (at <= 0) continue;
    headers[pair.slice(0, at).trim()] = decodeURIComponent(pair.slice(at + 1).trim());
  }
  return headers;
}

export function telemetryConfig(values: TelemetryValues): TelemetryConfig {
  const base = values.endpoint.replace(/\/+$/, '');
  const tracesUrl = values.traces_endpoint || (base ? `${base}/v1/traces` : undefined);
  return {
    tracesUrl,
    headers: parseHeaders(values.headers),
    serviceName: values.service_name,
    maxQueueSize: values.max_queue_size,
    scheduleDelayMs: values.schedule_delay,
    exportTimeoutMs: values.export_timeout,
    captureContent: values.capture_content,
  };
}
