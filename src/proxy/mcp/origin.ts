import type { ProxyContext } from '../context.ts';
import { mcpErrors } from './errors.ts';

const LOOPBACK = /^(localhost|.+\.localhost|127\.\d{1,3}\.\d{1,3}\.\d{1,3}|\[::1\])$/;

/**
 * The MCP transport spec requires servers to validate Origin against DNS
 * rebinding: a web page must not drive local tools through a proxy on
 * 127.0.0.1. MCP clients outside a browser send no Origin; pages served from
 * this machine (an MCP inspector on localhost) may; any other origin is refused.
 */
export function checkOrigin(ctx: ProxyContext): void {
  const origin = ctx.get('origin');
  if (!origin) return;
  let hostname: string;
  try {
    hostname = new URL(origin).hostname;
  } catch {
    throw mcpErrors.originRefused(origin);
  }
  if (!LOOPBACK.test(hostname)) throw mcpErrors.originRefused(origin);
}
