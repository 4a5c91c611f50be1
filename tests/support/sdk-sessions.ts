/**
 * Scripted sessions run with the official SDKs against a proxy URL: a plain
 * answer, a streamed answer, and a two-turn tool call (plain and streamed).
 * Each returns the texts the client saw, so a test can check them.
 */
import Anthropic from '@anthropic-ai/sdk';
import { FunctionResponse, GoogleGenAI, type Content } from '@google/genai';
import OpenAI from 'openai';

export type ClientFamily = 'openai-chat' | 'openai-responses' | 'anthropic' | 'gemini';

export interface SessionResult {
  /** The text of the final answer. */
  text: string;
  /** The tool call the model made on the first turn (tool sessions). */
  call?: { id: string; name: string; args: unknown };
}

export interface Sessions {
  plain(model: string): Promise<SessionResult>;
  stream(model: string): Promise<SessionResult>;
  tool(model: string, stream: boolean): Promise<SessionResult>;
}

const SYSTEM = 'Answer briefly.';
export const QUESTION = 'What is the weather in Paris?';
const TOOL_OUTPUT = 'sunny, 24 degrees';
const WEATHER_SCHEMA = {
  type: 'object' as const,
  properties: { city: { type: 'string', description: 'City name' } },
  required: ['city'],
  additionalProperties: false,
};

function openaiChat(url: string, key: string): Sessions {
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: key, maxRetries: 0 });
  const tools: OpenAI.Chat.ChatCompletionTool[] = [
    {
      type: 'function',
      function: { name: 'get_weather', description: 'Weather for a city', parameters: WEATHER_SCHEMA, strict: true },
    },
  ];
  const first: OpenAI.Chat.ChatCompletionMessageParam[] = [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: QUESTION },
  ];
  return {
    async plain(model) {
      // eslint-disable-next-line @typescript-eslint/no-deprecated -- the older spelling clients still send
      const r = await client.chat.completions.create({ model, messages: first, max_tokens: 200 });
      return { text: r.choices[0]?.message.content ?? '' };
    },
    async stream(model) {
      const s = client.chat.completions.stream({ model, messages: first, stream_options: { include_usage: true } });
      const r = await s.finalChatCompletion();
      return { text: r.choices[0]?.message.content ?? '' };
    },
    async tool(model, stream) {
      const ask = async (messages: OpenAI.Chat.ChatCompletionMessageParam[]) =>
        stream
          ? client.chat.completions.stream({ model, messages, tools }).finalChatCompletion()
          : client.chat.completions.create({ model, messages, tools });
      const r1 = await ask(first);
      const message = r1.choices[0]?.message;
      const call = message?.tool_calls?.[0];
      if (!message || call?.type !== 'function') throw new Error(`no tool call: ${JSON.stringify(r1)}`);
      const r2 = await ask([...first, message, { role: 'tool', tool_call_id: call.id, content: TOOL_OUTPUT }]);
      return {
        text: r2.choices[0]?.message.content ?? '',
        call: { id: call.id, name: call.function.name, args: JSON.parse(call.function.arguments) },
      };
    },
  };
}

function openaiResponses(url: string, key: string): Sessions {
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: key, maxRetries: 0 });
  const tools: OpenAI.Responses.Tool[] = [
    {
      type: 'function',
      name: 'get_weather',
      description: 'Weather for a city',
      parameters: WEATHER_SCHEMA,
      strict: true,
    },
  ];
  return {
    async plain(model) {
      const r = await client.responses.create({ model, instructions: SYSTEM, input: QUESTION });
      return { text: r.output_text };
    },
    async stream(model) {
      const r = await client.responses.stream({ model, instructions: SYSTEM, input: QUESTION }).finalResponse();
      return { text: r.output_text };
    },
    async tool(model, stream) {
      const ask = async (body: OpenAI.Responses.ResponseCreateParamsNonStreaming & { stream?: false }) =>
        stream ? client.responses.stream({ ...body, stream: true }).finalResponse() : client.responses.create(body);
      const r1 = await ask({ model, instructions: SYSTEM, input: QUESTION, tools });
      const call = r1.output.find((o) => o.type === 'function_call');
      if (call?.type !== 'function_call') throw new Error(`no tool call: ${JSON.stringify(r1)}`);
      // The second turn continues the stored response, as the Responses API allows.
      const r2 = await ask({
        model,
        previous_response_id: r1.id,
        input: [{ type: 'function_call_output', call_id: call.call_id, output: TOOL_OUTPUT }],
        tools,
      });
      return { text: r2.output_text, call: { id: call.call_id, name: call.name, args: JSON.parse(call.arguments) } };
    },
  };
}

function anthropic(url: string, key: string): Sessions {
  const client = new Anthropic({ baseURL: url, apiKey: key, maxRetries: 0 });
  const tools: Anthropic.Tool[] = [
    { name: 'get_weather', description: 'Weather for a city', input_schema: WEATHER_SCHEMA },
  ];
  const first: Anthropic.MessageParam[] = [{ role: 'user', content: QUESTION }];
  const text = (m: Anthropic.Message) => m.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('');
  return {
    async plain(model) {
      return { text: text(await client.messages.create({ model, max_tokens: 200, system: SYSTEM, messages: first })) };
    },
    async stream(model) {
      return {
        text: text(
          await client.messages.stream({ model, max_tokens: 200, system: SYSTEM, messages: first }).finalMessage(),
        ),
      };
    },
    async tool(model, stream) {
      const ask = async (messages: Anthropic.MessageParam[]) => {
        const body = { model, max_tokens: 200, system: SYSTEM, messages, tools };
        return stream ? client.messages.stream(body).finalMessage() : client.messages.create(body);
      };
      const r1 = await ask(first);
      const call = r1.content.find((b) => b.type === 'tool_use');
      if (call?.type !== 'tool_use') throw new Error(`no tool call: ${JSON.stringify(r1)}`);
      const r2 = await ask([
        ...first,
        { role: 'assistant', content: r1.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: TOOL_OUTPUT }] },
      ]);
      return { text: text(r2), call: { id: call.id, name: call.name, args: call.input } };
    },
  };
}

function gemini(url: string, key: string): Sessions {
  // @google/genai 3 defaults to /v1; the proxy's Gemini family lives under /v1beta, as the spec lists it.
  const ai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: url, apiVersion: 'v1beta' } });
  const tools = [
    {
      functionDeclarations: [
        { name: 'get_weather', description: 'Weather for a city', parametersJsonSchema: WEATHER_SCHEMA },
      ],
    },
  ];
  const first: Content[] = [{ role: 'user', parts: [{ text: QUESTION }] }];
  return {
    async plain(model) {
      const r = await ai.models.generateContent({ model, contents: first, config: { systemInstruction: SYSTEM } });
      return { text: r.text ?? '' };
    },
    async stream(model) {
      let text = '';
      for await (const chunk of await ai.models.generateContentStream({
        model,
        contents: first,
        config: { systemInstruction: SYSTEM },
      }))
        text += chunk.text ?? '';
      return { text };
    },
    async tool(model, stream) {
      const ask = async (contents: Content[]): Promise<{ content: Content; text: string }> => {
        const params = { model, contents, config: { systemInstruction: SYSTEM, tools } };
        if (!stream) {
          const r = await ai.models.generateContent(params);
          return { content: r.candidates?.[0]?.content ?? { parts: [] }, text: r.text ?? '' };
        }
        const parts: NonNullable<Content['parts']> = [];
        let text = '';
        for await (const chunk of await ai.models.generateContentStream(params)) {
          parts.push(...(chunk.candidates?.[0]?.content?.parts ?? []));
          text += chunk.text ?? '';
        }
        return { content: { role: 'model', parts }, text };
      };
      const r1 = await ask(first);
      const call = r1.content.parts?.find((p) => p.functionCall)?.functionCall;
      if (!call?.name) throw new Error(`no tool call: ${JSON.stringify(r1)}`);
      const r2 = await ask([
        ...first,
        r1.content,
        {
          role: 'user',
          parts: [
            {
              functionResponse: Object.assign(new FunctionResponse(), {
                id: call.id,
                name: call.name,
                response: { output: TOOL_OUTPUT },
              }),
            },
          ],
        },
      ]);
      return { text: r2.text, call: { id: call.id ?? '', name: call.name, args: call.args } };
    },
  };
}

export function sessions(family: ClientFamily, url: string, key: string): Sessions {
  switch (family) {
    case 'openai-chat':
      return openaiChat(url, key);
    case 'openai-responses':
      return openaiResponses(url, key);
    case 'anthropic':
      return anthropic(url, key);
    case 'gemini':
      return gemini(url, key);
  }
}

export const TOOL_RESULT_TEXT = TOOL_OUTPUT;
