/**
 * OpenTelemetry traces, with the official SDK: spans batched in a bounded
 * queue and exported over OTLP/HTTP (JSON). Nothing here waits on the
 * collector: a span ends into the queue, and when the queue is full (a
 * collector down or slow) it is dropped and counted, as is a batch whose
 * export failed. With no endpoint configured nothing is started and nothing is
 * registered: the OpenTelemetry API stays its no-op self.
 */
import {
  context,
  createNoopMeter,
  propagation,
  trace,
  type Attributes,
  type Counter,
  type Meter,
  type MeterProvider,
  type Tracer,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TelemetryConfig } from '../config/telemetry.ts';

export interface Tracing {
  readonly tracer: Tracer;
  /** Content may be recorded (TelemetryConfig.captureContent). */
  readonly captureContent: boolean;
  /** Exports what is queued (for up to `waitMs`, 2 s by default), then stops. */
  shutdown(waitMs?: number): Promise<void>;
}

/** How long shutdown waits for the last spans to go out: a collector that hangs must not hold the exit. */
const SHUTDOWN_FLUSH_MS = 2_000;

/** Told of spans that never reach the collector: `queue_full`, or the export's error. */
export type DroppedSpans = (count: number, reason: string) => void;

/** The SDK's own count of spans a processor finished with (an `error.type` when they were lost). */
const PROCESSED = 'otel.sdk.processor.span.processed';

/**
 * The SDK reports what its processor did through a meter (its self-observability metrics); of those only
 * the lost spans are taken, into `dropped`. Every other instrument is the no-op one.
 */
function droppedSpansMeter(dropped: DroppedSpans): MeterProvider {
  const noop = createNoopMeter();
  const counter: Counter = {
    add: (value: number, attributes?: Attributes) => {
      const reason = attributes?.['error.type'];
      if (typeof reason === 'string') dropped(value, reason);
    },
  };
  const meter: Meter = Object.assign(Object.create(noop) as Meter, {
    createCounter: (name: string) => (name === PROCESSED ? counter : noop.createCounter(name)),
  });
  return { getMeter: () => meter };
}

/** Starts tracing when an endpoint is configured, registering it as the process's OpenTelemetry. */
export function startTracing(config: TelemetryConfig, dropped: DroppedSpans): Tracing | undefined {
  if (config.tracesUrl === undefined) return undefined;
  const exporter = new OTLPTraceExporter({
    url: config.tracesUrl,
    headers: config.headers,
    timeoutMillis: config.exportTimeoutMs,
  });
  const processor = new BatchSpanProcessor({
    exporter,
    maxQueueSize: config.maxQueueSize,
    scheduledDelayMillis: config.scheduleDelayMs,
    exportTimeoutMillis: config.exportTimeoutMs,
    selfObsMeterProvider: droppedSpansMeter(dropped),
  });
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': config.serviceName }),
    spanProcessors: [processor],
  });
  // The span of a request is the active one for what it calls (AsyncLocalStorage), so an upstream call finds it.
  context.setGlobalContextManager(new AsyncLocalStorageContextManager());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  return {
    tracer: provider.getTracer('gatehouse'),
    captureContent: config.captureContent,
    shutdown: async (waitMs = SHUTDOWN_FLUSH_MS) => {
      await Promise.race([provider.shutdown(), sleep(waitMs, undefined, { ref: false })]);
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}
