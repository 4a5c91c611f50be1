import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI, Type } from '@google/genai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeUpstream } from '../support/fake-upstream.ts';
import { HOST_FROM_CONTAINER, startProxyContainer, type ProxyContainer } from '../support/proxy-container.ts';

const PROXY_KEY = 'sdk-suite-proxy-key';
const UPSTREAM_KEY = 'sdk-suite-upstream-key';
const WEATHER = {
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
};

/** The official SDKs as clients of the proxy (in its image), each against a same-protocol upstream. */
describe('official SDKs through gatehouse proxy (container)', () => {
  let fake: FakeUpstream;
  let proxy: ProxyContainer;

  beforeAll(async () => {
    fake = await FakeUpstream.start({ host: '0.0.0.0' });
    const at = (vendor: string) => `http://${HOST_FROM_CONTAINER}:${fake.port}/${vendor}`;
    proxy = await startProxyContainer(
      {
        proxy: {
          allow_lan_access: true,
          upstreams: [
            { name: 'oa', protocol: 'openai', base_url: at('openai/v1'), api_key: UPSTREAM_KEY, models: ['gpt-*'] },
            {
              name: 'an',
              protocol: 'anthropic',
              base_url: at('anthropic'),
              api_key: UPSTREAM_KEY,
              models: ['claude-*'],
            },
            { name: 'ge', protocol: 'gemini', base_url: at('gemini'), api_key: UPSTREAM_KEY, models: ['gemini-*'] },
          ],
        },
      },
      { PROXY_API_KEY: PROXY_KEY },
    );
  });
  afterAll(async () => {
    await (proxy as ProxyContainer | undefined)?.stop();
    await (fake as FakeUpstream | undefined)?.close();
  });

  describe('openai', () => {
    const client = () => new OpenAI({ apiKey: PROXY_KEY, baseURL: `${proxy.base}/v1`, maxRetries: 0 });
    const messages = [{ role: 'user' as const, content: 'Say hello' }];

    it('chat completion', async () => {
      const completion = await client().chat.completions.create({ model: 'gpt-4o', messages });
      expect(completion.choices[0]?.message.content).toBe('Hello from the fake upstream');
      expect(fake.last('/openai/v1/chat/completions').headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
    });

    it('streamed chat completion', async () => {
      const stream = await client().chat.completions.create({ model: 'gpt-4o', messages, stream: true });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      expect(text).toBe('Hello from the fake upstream');
    });

    it('tool calls, plain and streamed', async () => {
      const tools = [{ type: 'function' as const, function: WEATHER }];
      const completion = await client().chat.completions.create({ model: 'gpt-4o', messages, tools });
      const call = completion.choices[0]?.message.tool_calls?.[0];
      expect(call?.type === 'function' && call.function).toEqual({
        name: 'get_weather',
        arguments: '{"city":"Paris"}',
      });
      const runner = client().chat.completions.stream({ model: 'gpt-4o', messages, tools });
      const final = await runner.finalChatCompletion();
      const streamed = final.choices[0]?.message.tool_calls?.[0];
      expect(streamed?.type === 'function' && JSON.parse(streamed.function.arguments)).toEqual({ city: 'Paris' });
    });

    it('responses API', async () => {
      const response = await client().responses.create({ model: 'gpt-4.1', input: 'Say hello' });
      expect(response.output_text).toBe('Hello from the fake upstream');
    });

    it("a model nobody serves is the SDK's NotFoundError with the proxy's message", async () => {
      const error = await client()
        .chat.completions.create({ model: 'llama-x', messages })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.NotFoundError);
      expect((error as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('model_not_found');
    });
  });

  describe('@anthropic-ai/sdk', () => {
    const client = () => new Anthropic({ apiKey: PROXY_KEY, baseURL: proxy.base, maxRetries: 0 });
    const messages = [{ role: 'user' as const, content: 'Say hello' }];

    it('message', async () => {
      const message = await client().messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, messages });
      expect(message.content).toEqual([{ type: 'text', text: 'Hello from the fake upstream' }]);
      const seen = fake.last('/anthropic/v1/messages');
      expect(seen.headers['x-api-key']).toBe(UPSTREAM_KEY);
      // The SDK's own anthropic-version travels as it sent it.
      expect(seen.headers['anthropic-version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    });

    it('streamed message', async () => {
      const stream = client().messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 64, messages });
      const deltas: string[] = [];
      stream.on('text', (text) => deltas.push(text));
      const final = await stream.finalMessage();
      expect(deltas.join('')).toBe('Hello from the fake upstream');
      expect(final.stop_reason).toBe('end_turn');
    });

    it('tool use, plain and streamed', async () => {
      const tools = [{ name: WEATHER.name, description: WEATHER.description, input_schema: WEATHER.parameters }];
      const message = await client().messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, messages, tools });
      expect(message.content).toEqual([
        { type: 'tool_use', id: 'toolu_fake', name: 'get_weather', input: { city: 'Paris' } },
      ]);
      const final = await client()
        .messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 64, messages, tools })
        .finalMessage();
      expect(final.content[0]).toMatchObject({ type: 'tool_use', name: 'get_weather', input: { city: 'Paris' } });
    });

    it('count tokens', async () => {
      const counted = await client().messages.countTokens({ model: 'claude-sonnet-4-5', messages });
      expect(counted.input_tokens).toBe(42);
    });

    it("a wrong key is the SDK's AuthenticationError", async () => {
      const error = await new Anthropic({ apiKey: 'wrong', baseURL: proxy.base, maxRetries: 0 }).messages
        .create({ model: 'claude-x', max_tokens: 1, messages })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(Anthropic.AuthenticationError);
    });
  });

  describe('@google/genai', () => {
    const client = () => new GoogleGenAI({ apiKey: PROXY_KEY, httpOptions: { baseUrl: proxy.base } });
    const contents = 'Say hello';

    it('generateContent', async () => {
      const response = await client().models.generateContent({ model: 'gemini-2.5-flash', contents });
      expect(response.text).toBe('Hello from the fake upstream');
      const seen = fake.last('/gemini/v1beta/models/gemini-2.5-flash:generateContent');
      expect(seen.headers['x-goog-api-key']).toBe(UPSTREAM_KEY);
    });

    it('generateContentStream', async () => {
      const stream = await client().models.generateContentStream({ model: 'gemini-2.5-flash', contents });
      let text = '';
      for await (const chunk of stream) text += chunk.text ?? '';
      expect(text).toBe('Hello from the fake upstream');
    });

    it('function calls, plain and streamed', async () => {
      const config = {
        tools: [
          {
            functionDeclarations: [
              {
                name: WEATHER.name,
                description: WEATHER.description,
                parameters: { type: Type.OBJECT, properties: { city: { type: Type.STRING } } },
              },
            ],
          },
        ],
      };
      const response = await client().models.generateContent({ model: 'gemini-2.5-flash', contents, config });
      expect(response.functionCalls).toEqual([{ name: 'get_weather', args: { city: 'Paris' } }]);
      const calls = [];
      for await (const chunk of await client().models.generateContentStream({
        model: 'gemini-2.5-flash',
        contents,
        config,
      }))
        calls.push(...(chunk.functionCalls ?? []));
      expect(calls).toEqual([{ name: 'get_weather', args: { city: 'Paris' } }]);
    });

    it('countTokens', async () => {
      const counted = await client().models.countTokens({ model: 'gemini-2.5-flash', contents });
      expect(counted.totalTokens).toBe(42);
    });

    it('models.get and models.list', async () => {
      const model = await client().models.get({ model: 'gemini-fake-1' });
      expect(model.name).toBe('models/gemini-fake-1');
      const names: string[] = [];
      for await (const m of await client().models.list()) names.push(m.name ?? '');
      expect(names).toContain('models/gemini-fake-1');
    });
  });
});
