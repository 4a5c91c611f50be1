/**
 * A local token-count estimate for count_tokens/countTokens when no upstream
 * of the client's protocol can count: about four characters of text per
 * token, the rule of thumb the vendors publish. Binary payloads (base64
 * images, signatures) and the model name are not text the model reads.
 */
const NOT_TEXT = new Set(['model', 'data', 'signature', 'thoughtSignature', 'mimeType', 'media_type']);
const PER_MESSAGE = 4;

function textLength(value: unknown): { chars: number; items: number } {
  let chars = 0;
  let items = 0;
  const walk = (v: unknown): void => {
    if (typeof v === 'string') chars += v.length;
    else if (Array.isArray(v)) v.forEach(walk);
    else if (typeof v === 'object' && v !== null) {
      if ('role' in v) items++;
      for (const [key, item] of Object.entries(v)) if (!NOT_TEXT.has(key)) walk(item);
    }
  };
  walk(value);
  return { chars, items };
}

export function estimateTokens(body: Record<string, unknown>): number {
  const { chars, items } = textLength(body);
  return Math.ceil(chars / 4) + items * PER_MESSAGE;
}
