import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { ProxyContext } from './context.ts';

/**
 * Emits 'abort' (once) when the client goes away before its response is
 * complete, so the upstream call (and its token spend) stops with it.
 * undici takes an EventEmitter as a request's signal as it takes an
 * AbortSignal, and one costs far less per request than an AbortController with
 * undici's listener on it (docs/proxy.md, "Performance"). The flag is not
 * called `aborted`: undici treats any object with that property as an
 * AbortSignal.
 */
export class ClientGone extends EventEmitter {
  left = false;

  constructor(res: ServerResponse) {
    super();
    // A response closes once: `on` spares the wrapper `once` builds per request.
    res.on('close', () => {
      if (res.writableFinished) return;
      this.left = true;
      this.emit('abort');
    });
  }
}

export const clientGone = (ctx: ProxyContext): ClientGone => new ClientGone(ctx.res);
