import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

export interface ConnectedMcp {
  client: Client;
  transport: StreamableHTTPClientTransport;
}

/** A real MCP client (the SDK's) connected over Streamable HTTP with the given request headers. */
export async function connectMcp(url: string, headers: Record<string, string> = {}): Promise<ConnectedMcp> {
  const client = new Client({ name: 'gatehouse-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  await client.connect(transport);
  return { client, transport };
}

/** The text of a tool result's first content block. */
export function firstText(result: unknown): string {
  const content = (result as { content?: { type: string; text?: string }[] }).content ?? [];
  return content[0]?.text ?? '';
}
