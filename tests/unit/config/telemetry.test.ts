import { describe, expect, it } from 'vitest';
import { telemetryConfig } from '../../../src/config/telemetry.ts';

const values = {
  endpoint: '',
  traces_endpoint: '',
  headers: '',
  service_name: 'gatehouse-proxy',
  max_queue_size: 2048,
  schedule_delay: 5000,
  export_timeout: 10_000,
  capture_content: false,
};

describe('proxy.telemetry', () => {
  it('is off without an endpoint', () => {
    expect(telemetryConfig(values).tracesUrl).toBeUndefined();
  });

  it('sends traces to <endpoint>/v1/traces, or to traces_endpoint as it is', () => {
    expect(telemetryConfig({ ...values, endpoint: 'http://collector:4318/' }).tracesUrl).toBe(
      'http://collector:4318/v1/traces',
    );
    expect(
      telemetryConfig({ ...values, endpoint: 'http://collector:4318', traces_endpoint: 'https://x.example/t' })
        .tracesUrl,
    ).toBe('https://x.example/t');
  });

  it('reads OTEL_EXPORTER_OTLP_HEADERS pairs, values percent-decoded, malformed pairs left out', () => {
    expect(telemetryConfig({ ...values, headers: 'api-key=a%20b, x-team = blue,broken,=nameless' }).headers).toEqual({
      'api-key': 'a b',
      'x-team': 'blue',
    });
  });
});
