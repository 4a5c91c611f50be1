import { createServer } from 'node:http';
import Koa from 'koa';
import type { McpServers } from '../../src/proxy/config/mcp.ts';
import { close, listen } from '../../src/http/server.ts';
import { createLogger } from '../../src/log.ts';
import { mcpRoutes, type McpGateway } from '../../src/proxy/mcp/index.ts';

export interface GatewayApp {
  /** `http://127.0.0.1:<port>/mcp/<name>/mcp` */
  url(name: string): string;
  origin: string;
  gateway: McpGateway;
  close(): Promise<void>;
}

/** The MCP gateway alone in a Koa app on a random loopback port, as the proxy mounts it. */
export async function startGateway(servers: McpServers, options: { maxBodyBytes?: number } = {}): Promise<GatewayApp> {
  const app = new Koa();
  const env = { PATH: process.env['PATH'], HOME: process.env['HOME'] };
  const gateway = mcpRoutes(servers, { env, log: createLogger('silent'), ...options });
  app.use(gateway);
  const handle = app.callback();
  const server = createServer((req, res) => void handle(req, res));
  const { port } = await listen(server, { port: 0, host: '127.0.0.1' });
  const origin = `http://127.0.0.1:${port}`;
  return {
    url: (name) => `${origin}/mcp/${name}/mcp`,
    origin,
    gateway,
    close: async () => {
      await gateway.close();
      await close(server, 200);
    },
  };
}
