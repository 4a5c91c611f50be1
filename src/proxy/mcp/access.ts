/**
 * What a key may do on the MCP endpoints, ahead of the gateway (the gateway outlives a reload; keys and limits
 * are the app's): only the servers its `mcp_servers` match, each request counted toward its rpm. Its refusals
 * are JSON-RPC error bodies, as the MCP transports answer their own HTTP-level errors.
 */
import { toHttpError, type HttpError } from '../../http/errors.ts';
import type { ProxyMiddleware } from '../context.ts';
import { keyErrors, type Admission, type ClientKey } from '../keys.ts';
import { RPC_REFUSED } from './errors.ts';
import { mcpServerOf } from './index.ts';

/** A refusal as JSON-RPC: no request id can be told before the body is read, hence null (as the SDK's own). */
export const rpcRefusal = (error: HttpError) => ({
  jsonrpc: '2.0',
  id: null,
  error: { code: RPC_REFUSED, message: error.message, data: { status: error.status, reason: error.kind } },
});

async function admit(admission: Admission, key: ClientKey, server: string): Promise<void> {
  if (!key.allowsMcp(server)) throw keyErrors.mcpServerNotAllowed(server);
  await admission.admitRequest(key);
}

/** Not async: every other request passes straight on, without a promise of its own. */
export function mcpAccess(admission: Admission): ProxyMiddleware {
  return (ctx, next): unknown => {
    const { key } = ctx.state;
    const server = key && mcpServerOf(ctx.path);
    if (key === undefined || server === undefined) return next();
    return admit(admission, key, server).then(
      () => next(),
      (thrown: unknown) => {
        const error = toHttpError(thrown);
        ctx.status = error.status;
        ctx.set(error.headers);
        ctx.body = rpcRefusal(error);
      },
    );
  };
}
