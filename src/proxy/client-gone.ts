import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { Context } from 'koa';

/**
 * Emits 'abort' (once) when the client goes away before its response is
 * complete, so the upstream call (and its token spend) stops with it.
 * undici takes an EventEmitter as a request's signal as it takes an
 * AbortSignal; an AbortController per request, with undici's listener on it,
 * cost five times as much (measured: 0.62 against 0.13 µs). The flag is not
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

export const clientGone = (ctx: Context): ClientGone => new ClientGone(ctx.res);
