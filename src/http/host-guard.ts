import { isIPv4, isIPv6 } from 'node:net';
import type { Context, Middleware, Next } from 'koa';

/** A DNS name's label: letters, digits, `-` and `_` (container and Codespaces names), at most 63. */
const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;
const BRACKETED = /^\[([0-9a-f:.]+)\](?::(\d{1,5}))?$/;
const NAMED = /^([^:[\]]+)(?::(\d{1,5}))?$/;

/**
 * A `Host` header (or an allowed-hosts entry) read strictly: an IPv6 literal
 * in brackets, or a DNS name / dotted IPv4 address, then an optional port
 * (1-65535). Anything a URL parser would reject or read differently (`%`,
 * `#`, `@`, `,`, spaces, `127.1`, an empty port) is null, so that a name
 * which passes can be put into a URL as it is.
 */
export function parseHost(host: string): { hostname: string; port: number | null } | null {
  const lower = host.toLowerCase();
  const bracketed = BRACKETED.exec(lower);
  const match = bracketed ?? NAMED.exec(lower);
  if (match === null) return null;
  const [, name = '', portText] = match;
  const port = portText === undefined ? null : Number(portText);
  if (port !== null && (port < 1 || port > 65_535)) return null;
  if (bracketed) return isIPv6(name) ? { hostname: name, port } : null;
  const hostname = name.replace(/\.$/, '');
  if (hostname.length > 253 || !hostname.split('.').every((label) => LABEL.test(label))) return null;
  // What a browser would connect to must be the very name checked (`127.1` is 127.0.0.1 to it).
  if (new URL(`http://${hostname}/`).hostname !== hostname) return null;
  return { hostname, port };
}

/**
 * The name part of a `Host` header, lowercased, without its port, brackets or
 * trailing dot; '' when there is none or the header is not a valid host[:port].
 */
export function hostnameOf(host: string): string {
  return parseHost(host)?.hostname ?? '';
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

/**
 * The origin a request reached this server at, rebuilt from its parsed
 * `Host` (never the header's raw text); null when the Host is not a valid
 * host[:port]. Links handed to others are built on it.
 */
export function originOf(protocol: string, host: string): string | null {
  const parsed = parseHost(host);
  if (parsed === null) return null;
  const name = parsed.hostname.includes(':') ? `[${parsed.hostname}]` : parsed.hostname;
  return new URL(`${protocol}://${name}${parsed.port === null ? '' : `:${parsed.port}`}/`).origin;
}
