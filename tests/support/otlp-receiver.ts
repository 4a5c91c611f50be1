/**
 * An OTLP/HTTP trace receiver for the black-box suite (the OpenTelemetry
 * Collector is not installable here): `POST /v1/traces` with the JSON
 * encoding the official exporter sends, decoded per the OTLP specification
 * (ids hex, attributes as typed AnyValues), each span flattened. It can
 * also refuse every export (503) or take them and never answer.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedSpan {
  service: string;
  name: string;
  /** OTLP SpanKind: 2 server, 3 client. */
  kind: number;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  attributes: Record<string, Scalar | Scalar[]>;
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  status: number;
}

export interface OtlpReceiver {
  port: number;
  spans: ReceivedSpan[];
  /** Exports received, whatever became of them. */
  exports: number;
  mode: 'accept' | 'refuse' | 'hang';
  close(): Promise<void>;
}

type Scalar = string | number | boolean;

interface AnyValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: AnyValue[] };
}

function scalar(value: AnyValue): Scalar {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  return value.boolValue ?? '';
}

type Attributes = { key: string; value: AnyValue }[] | undefined;

function attributes(list: Attributes): Record<string, Scalar | Scalar[]> {
  return Object.fromEntries(
    (list ?? []).map((a) => [
      a.key,
      a.value.arrayValue ? (a.value.arrayValue.values ?? []).map(scalar) : scalar(a.value),
    ]),
  );
}

interface TraceRequest {
  resourceSpans?: {
    resource?: { attributes?: Attributes };
    scopeSpans?: {
      spans?: {
        name: string;
        kind: number;
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        attributes?: Attributes;
        status?: { code?: number };
      }[];
    }[];
  }[];
}

function decode(body: TraceRequest): ReceivedSpan[] {
  return (body.resourceSpans ?? []).flatMap((rs) => {
    const service = String(attributes(rs.resource?.attributes)['service.name'] ?? '');
    return (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s) => ({
        service,
        name: s.name,
        kind: s.kind,
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId ?? '',
        attributes: attributes(s.attributes),
        status: s.status?.code ?? 0,
      })),
    );
  });
}

export async function startOtlpReceiver(host = '0.0.0.0'): Promise<OtlpReceiver> {
  const hung: ServerResponse[] = [];
  const receiver: OtlpReceiver = {
    port: 0,
    spans: [],
    exports: 0,
    mode: 'accept',
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') return void res.writeHead(404).end();
      receiver.exports++;
      if (receiver.mode === 'hang') return void hung.push(res);
      if (receiver.mode === 'refuse') return void res.writeHead(503).end();
      receiver.spans.push(...decode(JSON.parse(Buffer.concat(chunks).toString('utf8')) as TraceRequest));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  receiver.port = (server.address() as AddressInfo).port;
  return receiver;
}
