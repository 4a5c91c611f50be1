/** Folds stream events into the response they describe (for stores, caches and tests). */
import type { ModelResponse, ProtocolName, ReasoningPart, StreamEvent, ToolCallPart, Usage } from './model.ts';
import { compact } from './wire.ts';

export class Collector {
  id = '';
  model = '';
  /** Known from the stream's start event. */
  protocol: ProtocolName | undefined;
  readonly parts: ModelResponse['parts'] = [];
  private readonly calls = new Map<number, ToolCallPart>();
  usage: Usage = { input: 0, output: 0 };
  stop: ModelResponse['stopReason'] | undefined;
  stopSequence: string | undefined;
  error: { status: number; message: string } | undefined;

  add(e: StreamEvent): void {
    const last = this.parts[this.parts.length - 1];
    switch (e.type) {
      case 'start':
        this.id = e.id;
        this.model = e.model;
        this.protocol = e.protocol;
        return;
      case 'text':
        if (last?.type === 'text') last.text += e.text;
        else this.parts.push({ type: 'text', text: e.text });
        return;
      case 'reasoning': {
        const target =
          last?.type === 'reasoning' && last.signature === undefined && last.encrypted === undefined ? last : undefined;
        const part: ReasoningPart =
          target ?? compact({ type: 'reasoning' as const, text: '', protocol: this.protocol });
        if (!target) this.parts.push(part);
        part.text += e.text;
        if (e.signature !== undefined) part.signature = e.signature;
        if (e.encrypted !== undefined) part.encrypted = e.encrypted;
        return;
      }
      case 'tool_start': {
        const call: ToolCallPart = { type: 'tool_call', id: e.id, name: e.name, arguments: '' };
        if (e.signature !== undefined) call.signature = e.signature;
        this.calls.set(e.index, call);
        this.parts.push(call);
        return;
      }
      case 'tool_args': {
        const call = this.calls.get(e.index);
        if (call) call.arguments += e.delta;
        return;
      }
      case 'usage':
        this.usage = e.usage;
        return;
      case 'stop':
        this.stop = e.reason;
        this.stopSequence = e.stopSequence;
        return;
      case 'error':
        this.error = { status: e.status, message: e.message };
        return;
    }
  }

  response(): ModelResponse {
    const res: ModelResponse = {
      id: this.id,
      model: this.model,
      parts: this.parts,
      stopReason: this.stop ?? 'end',
      usage: this.usage,
    };
    if (this.stopSequence !== undefined) res.stopSequence = this.stopSequence;
    return res;
  }
}
