/**
 * A local token estimate for count_tokens / countTokens when the upstream
 * speaks another protocol: the request decoded into the internal form (by its
 * protocol's count operation), then about four characters per token for text
 * (the vendors' rule of thumb), a few tokens of framing per message and tool,
 * and images by their size.
 */
import type { Conversation, ImagePart, Part } from './model.ts';

const CHARS_PER_TOKEN = 4;
const PER_MESSAGE = 4;
const PER_TOOL = 8;
/** An image whose size cannot be read: about a 1000×750 picture. */
const DEFAULT_IMAGE = 1000;
const MAX_IMAGE = 1600;

function text(s: string): number {
  return Math.ceil(s.length / CHARS_PER_TOKEN);
}

/** Anthropic's published estimate: width × height / 750, capped where images get resized. */
function image(part: ImagePart): number {
  const s = part.source;
  if (s.kind !== 'base64') return DEFAULT_IMAGE;
  const head = Buffer.from(s.data.slice(0, 44), 'base64');
  // PNG: the IHDR chunk holds width and height at bytes 16–23.
  if (head.length >= 24 && head.readUInt32BE(0) === 0x89504e47) {
    return Math.min(MAX_IMAGE, Math.max(1, Math.ceil((head.readUInt32BE(16) * head.readUInt32BE(20)) / 750)));
  }
  return DEFAULT_IMAGE;
}

function part(p: Part): number {
  switch (p.type) {
    case 'text':
      return text(p.text);
    case 'image':
      return image(p);
    case 'tool_call':
      return text(p.name) + text(p.arguments) + PER_TOOL;
    case 'tool_result':
      return p.content.reduce((n, c) => n + part(c), PER_TOOL);
    case 'reasoning':
      return text(p.text);
  }
}

export function estimateConversation(conv: Conversation): number {
  let tokens = conv.system === undefined ? 0 : text(conv.system) + PER_MESSAGE;
  for (const m of conv.messages) tokens += m.parts.reduce((n, p) => n + part(p), PER_MESSAGE);
  for (const t of conv.tools ?? [])
    tokens += text(t.name) + text(t.description ?? '') + text(JSON.stringify(t.parameters)) + PER_TOOL;
  return tokens;
}
