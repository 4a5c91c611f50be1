import type { UpstreamConfig } from './config/index.ts';
import type { ClientGone } from './client-gone.ts';
import type { OpenStreams } from './open-streams.ts';
import type { Operation, ProtocolSpec } from './protocols/protocol.ts';
import type { Protocol } from './protocols/registry.ts';
import { globToRegExp } from './glob.ts';
import type { Upstream } from './upstreams.ts';

/**
 * A routed model request: what the client asked for in its protocol and
 * where it goes. Handed to the translation handler unless it passes through
 * (see `passesThrough`).
 */
export interface Route {
  /** The client's protocol (the family of the path it called): its name, and its record (as Upstream#protocol). */
  clientProtocolName: Protocol;
  clientProtocol: ProtocolSpec;
  operation: Operation;
  upstream: Upstream;
  /** The model the client named. */
  clientModel: string;
  /** The model sent upstream (after `model_aliases`). */
  upstreamModel: string;
  /** The client asked for a stream (`stream: true`, or Gemini's streamGenerateContent). */
  stream: boolean;
  /** The parsed JSON request body (for multipart requests: empty). */
  body: Record<string, unknown>;
  /**
   * The size of the request body as received. Only its size: translation
   * keeps no reference to the raw bytes, so they go once the body is parsed.
   */
  rawBytes: number;
  /** Aborted when the client disconnects: pass it to sendUpstream. */
  signal: ClientGone;
  /** Where a streamed answer registers, so a shutdown can end it with an error event. */
  streams: OpenStreams;
}

/**
 * Whether a request goes to its upstream as it is: the upstream speaks the
 * client's protocol and serves the operation (an OpenAI upstream with
 * `responses_api: false` gets Responses requests translated).
 */
export function passesThrough(protocol: Protocol, operation: Operation, upstream: UpstreamConfig): boolean {
  return upstream.protocol === protocol && (operation.servedBy?.(upstream) ?? true);
}

/** What metrics and usage count a model name under when the configuration knows nothing of it. */
export const OTHER_MODELS = '(other)';

export interface Resolution {
  upstream: Upstream;
  /** The model name after aliasing, as the upstream gets it. */
  mappedModel: string;
}

/**
 * Model → upstream: the name is resolved through `model_aliases` (one step),
 * then the first upstream (config order) with a matching glob wins.
 */
export class ModelRouter {
  readonly upstreams: readonly Upstream[];
  readonly aliases: Readonly<Record<string, string>>;
  readonly #matchers: { upstream: Upstream; patterns: RegExp[] }[];
  /** Every upstream's `models` entry with its pattern, in file order (for countedAs). */
  readonly #entries: { entry: string; pattern: RegExp }[];

  constructor(upstreams: readonly Upstream[], aliases: Readonly<Record<string, string>>) {
    this.upstreams = upstreams;
    this.aliases = aliases;
    this.#matchers = upstreams.map((upstream) => ({ upstream, patterns: upstream.config.models.map(globToRegExp) }));
    this.#entries = this.#matchers.flatMap(({ upstream, patterns }) =>
      patterns.map((pattern, i) => ({ entry: upstream.config.models[i] as string, pattern })),
    );
  }

  /**
   * The name a client's model is counted under in metrics and usage: an alias, or the first `models` entry that
   * matches it (the name itself when listed as it is, else the glob), else OTHER_MODELS. Only names the
   * configuration holds, so clients choosing names cannot add series or usage rows without bound.
   */
  countedAs(model: string): string {
    if (Object.hasOwn(this.aliases, model)) return model;
    for (const { entry, pattern } of this.#entries) if (pattern.test(model)) return entry;
    return OTHER_MODELS;
  }

  /** The alias target, or the name itself. */
  mapped(model: string): string {
    return Object.hasOwn(this.aliases, model) ? (this.aliases[model] as string) : model;
  }

  /** Every upstream whose globs match, in file order: the candidates fallback and load balancing pick from. */
  candidates(model: string): Resolution[] {
    const mappedModel = this.mapped(model);
    const found: Resolution[] = [];
    for (const { upstream, patterns } of this.#matchers) {
      if (patterns.some((p) => p.test(mappedModel))) found.push({ upstream, mappedModel });
    }
    return found;
  }

  resolve(model: string): Resolution | undefined {
    const mappedModel = this.mapped(model);
    for (const { upstream, patterns } of this.#matchers) {
      if (patterns.some((p) => p.test(mappedModel))) return { upstream, mappedModel };
    }
    return undefined;
  }
}
