/**
 * A tiny stdio MCP server for the gateway's tests: `node tests/support/mcp-stdio-server.ts`.
 * Tools: add, echo, env (the variable names it sees, and its pid), slow (answers after `ms`),
 * crash (exits with code 3 instead of answering).
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const server = new McpServer({ name: 'fixture-stdio', version: '1.0.0' });
const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] });

server.registerTool(
  'add',
  { description: 'Adds two numbers', inputSchema: { a: z.number(), b: z.number() } },
  ({ a, b }) => text(String(a + b)),
);
server.registerTool('echo', { description: 'Echoes its text', inputSchema: { text: z.string() } }, ({ text: value }) =>
  text(value),
);
server.registerTool(
  'env',
  { description: 'Lists the environment variable names it sees, FIXTURE_GREETING and its pid' },
  () =>
    text(
      JSON.stringify({
        names: Object.keys(process.env).sort(),
        greeting: process.env['FIXTURE_GREETING'] ?? null,
        pid: process.pid,
      }),
    ),
);
server.registerTool(
  'slow',
  { description: 'Answers after ms milliseconds', inputSchema: { ms: z.number() } },
  async ({ ms }) => {
    await new Promise((resolve) => setTimeout(resolve, ms));
    return text('done');
  },
);
server.registerTool('crash', { description: 'Exits with code 3 instead of answering' }, () => {
  process.stderr.write('fixture: crashing on purpose\n');
  process.exit(3);
});

await server.connect(new StdioServerTransport());
