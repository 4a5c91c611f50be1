import { describe, expect, it } from 'vitest';
import { operations as anthropic } from '../../../../src/proxy/protocols/anthropic/index.ts';
import { operations as gemini } from '../../../../src/proxy/protocols/gemini/index.ts';
import type { JsonObject } from '../../../../src/proxy/translate/model.ts';

/** The local estimate of each protocol's count operation. */
const COUNT = { anthropic: anthropic.countTokens.count, gemini: gemini.countTokens.count };
const estimateCountRequest = (family: keyof typeof COUNT, body: JsonObject, model: string) =>
  COUNT[family].estimate(body, model);

/** A 1000×750 PNG header (IHDR only): what the estimate reads of an image. */
const PNG = Buffer.concat([
  Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'),
  Buffer.from('000003e8000002ee0806000000', 'hex'),
]).toString('base64');

describe('local token estimates', () => {
  const base = { messages: [{ role: 'user', content: 'Hello there, how are you today?' }] };

  it('is never 0 for a non-empty request', () => {
    expect(estimateCountRequest('anthropic', { messages: [{ role: 'user', content: 'a' }] }, 'm')).toBeGreaterThan(0);
    expect(
      estimateCountRequest('gemini', { contents: [{ role: 'user', parts: [{ text: 'a' }] }] }, 'm'),
    ).toBeGreaterThan(0);
  });

  it('counts the system prompt, tools and images', () => {
    const plain = estimateCountRequest('anthropic', base, 'm');
    const withSystem = estimateCountRequest(
      'anthropic',
      { ...base, system: 'You are a careful assistant who answers in full sentences.' },
      'm',
    );
    const withTools = estimateCountRequest(
      'anthropic',
      {
        ...base,
        tools: [
          {
            name: 'get_weather',
            description: 'Weather for a city',
            input_schema: { type: 'object', properties: { city: { type: 'string' } } },
          },
        ],
      },
      'm',
    );
    const withImage = estimateCountRequest(
      'anthropic',
      {
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'Hello there, how are you today?' },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
            ],
          },
        ],
      },
      'm',
    );
    expect(withSystem).toBeGreaterThan(plain + 10);
    expect(withTools).toBeGreaterThan(plain + 15);
    expect(withImage - plain).toBe(1000);
  });

  it('reads Gemini bodies with contents or a whole generateContentRequest', () => {
    const contents = [{ role: 'user', parts: [{ text: 'Hello there, how are you today?' }] }];
    const direct = estimateCountRequest('gemini', { contents }, 'm');
    expect(estimateCountRequest('gemini', { generateContentRequest: { model: 'models/m', contents } }, 'm')).toBe(
      direct,
    );
    expect(
      estimateCountRequest(
        'gemini',
        { contents, systemInstruction: { parts: [{ text: 'Be brief and exact.' }] } },
        'm',
      ),
    ).toBeGreaterThan(direct);
  });
});
