import { isIPv4 } from 'node:net';
import type { Context, Middleware, Next } from 'koa';

/**
 * The name part of a `Host` header, lowercased, without its port, brackets or
 * trailing dot; '' when there is none.
 */
export function hostnameOf(host: string): string {
  const name = host.startsWith('[') ? host.slice(1, host.indexOf(']')) : host.replace(/:\d*$/, '');
  return name.toLowerCase().replace(/\.$/, '');
}

/**
 * Names and addresses that always mean this machine: `localhost` and its
 * subdomains (browsers resolve them to loopback themselves), 127.0.0.0/8 and
 * ::1. A page can never rebind its own name to one of them.
 */
export function isLoopbackHostname(hostname: string): boolean {
  if (hostname === 'localhost' || hostname.endsWith('.localhost')) return true;
  if (hostname === '::1' || hostname === '0:0:0:0:0:0:0:1') return true;
  const v4 = hostname.startsWith('::ffff:') ? hostname.slice('::ffff:'.length) : hostname;
  return isIPv4(v4) && v4.startsWith('127.');
}

/** The hostnames a server answers to: loopback, plus `allowed` (names or addresses, compared without the port). */
export function hostAllowed(host: string, allowed: readonly string[]): boolean {
  const hostname = hostnameOf(host);
  if (hostname === '') return false;
  return isLoopbackHostname(hostname) || allowed.some((entry) => hostnameOf(entry) === hostname);
}

/**
 * Refuses a request whose `Host` is not one this server serves, before any
 * route runs: a page whose own name was rebound to this address (DNS
 * rebinding) still sends its own name as the Host. `refuse` builds the error
 * (the family's message names the host and the setting to change).
 */
export function hostGuard(allowed: readonly string[], refuse: (host: string) => Error): Middleware {
  return (ctx: Context, next: Next) => {
    const host = ctx.get('host');
    if (!hostAllowed(host, allowed)) throw refuse(host);
    return next();
  };
}
