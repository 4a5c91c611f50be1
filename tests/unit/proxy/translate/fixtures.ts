import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Collector } from '../../../../src/proxy/translate/collect.ts';
import type { ModelResponse, StreamDecoder, StreamEvent } from '../../../../src/proxy/translate/model.ts';

const DIR = path.resolve(import.meta.dirname, '../../../fixtures/translate');

export function fixture(name: string): string {
  return readFileSync(path.join(DIR, name), 'utf8');
}

export function fixtureJson(name: string): Record<string, unknown> {
  return JSON.parse(fixture(name)) as Record<string, unknown>;
}

/** Feeds text to a decoder in the given chunk sizes (cycled), then ends it. */
export function decodeAll(decoder: StreamDecoder, text: string, sizes: number[] = [text.length]): StreamEvent[] {
  const events: StreamEvent[] = [];
  let at = 0;
  let i = 0;
  while (at < text.length) {
    const size = Math.max(1, sizes[i++ % sizes.length] ?? text.length);
    events.push(...decoder.push(text.slice(at, at + size)));
    at += size;
  }
  events.push(...decoder.end());
  return events;
}

export function collect(events: StreamEvent[]): ModelResponse {
  const c = new Collector();
  for (const e of events) c.add(e);
  return c.response();
}

/** Splits SSE text into its frames' parsed data (and event names). */
export function sseFrames(text: string): { event?: string; data: unknown }[] {
  return text
    .split(/\r?\n\r?\n/)
    .filter((f) => f.trim() !== '')
    .map((frame) => {
      const event = /^event: (.*)$/m.exec(frame)?.[1];
      const data = frame
        .split(/\r?\n/)
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice(6))
        .join('\n');
      const parsed: unknown = data === '[DONE]' ? '[DONE]' : JSON.parse(data);
      return event === undefined ? { data: parsed } : { event, data: parsed };
    });
}
