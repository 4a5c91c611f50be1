import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { UpstreamConfig } from '../../../src/proxy/config/index.ts';
import { operations as anthropicOperations } from '../../../src/proxy/protocols/anthropic/index.ts';
import { operations as openaiOperations } from '../../../src/proxy/protocols/openai/index.ts';
import type { Operation } from '../../../src/proxy/protocols/protocol.ts';
import { PROTOCOLS } from '../../../src/proxy/protocols/registry.ts';
import { globToRegExp, isGlob } from '../../../src/proxy/glob.ts';
import { ModelRouter, OTHER_MODELS, passesThrough } from '../../../src/proxy/routing.ts';
import type { Upstream } from '../../../src/proxy/upstreams.ts';

function upstreamConfig(
  name: string,
  models: string[],
  protocol: UpstreamConfig['protocol'] = 'openai',
  responsesApi = true,
): UpstreamConfig {
  return {
    name,
    protocol,
    baseUrl: 'http://127.0.0.1:1',
    apiKey: undefined,
    models,
    headers: {},
    timeoutMs: 1000,
    responsesApi,
  };
}

function upstream(name: string, models: string[], protocol: UpstreamConfig['protocol'] = 'openai'): Upstream {
  const config = upstreamConfig(name, models, protocol);
  return { config, protocol: PROTOCOLS[protocol], basePath: '', pool: undefined as never };
}

describe('globToRegExp', () => {
  it.each([
    ['gpt-*', 'gpt-4o', true],
    ['gpt-*', 'gpt-', true],
    ['gpt-*', 'chatgpt-4o', false],
    ['claude-?-haiku', 'claude-3-haiku', true],
    ['claude-?-haiku', 'claude-35-haiku', false],
    ['*', 'anything at all', true],
    ['gemini-2.5-pro', 'gemini-2.5-pro', true],
    ['gemini-2.5-pro', 'gemini-2x5-pro', false],
    ['a+b(c)[d]{e}|f^$\\', 'a+b(c)[d]{e}|f^$\\', true],
    ['*/*', 'org/model', true],
  ])('%s against %s → %s', (glob, model, matches) => {
    expect(globToRegExp(glob).test(model)).toBe(matches);
  });

  it('a glob without wildcards matches exactly itself', () => {
    fc.assert(
      fc.property(
        fc.string().filter((s) => !isGlob(s)),
        fc.string(),
        (name, other) => {
          expect(globToRegExp(name).test(name)).toBe(true);
          expect(globToRegExp(name).test(other)).toBe(other === name);
        },
      ),
    );
  });

  it('`prefix*` matches exactly the names starting with prefix', () => {
    fc.assert(
      fc.property(
        fc.string().filter((s) => !isGlob(s)),
        fc.string(),
        (prefix, rest) => {
          expect(globToRegExp(`${prefix}*`).test(prefix + rest)).toBe(true);
          expect(globToRegExp(`${prefix}*`).test(rest)).toBe(rest.startsWith(prefix));
        },
      ),
    );
  });
});

describe('ModelRouter', () => {
  const oa = upstream('oa', ['gpt-*', 'o3']);
  const an = upstream('an', ['claude-*'], 'anthropic');
  const catchAll = upstream('local', ['*']);
  const router = new ModelRouter([oa, an, catchAll], { fast: 'gpt-4o-mini', smart: 'claude-opus-4', loop: 'fast' });

  it('the first upstream whose globs match wins, in config order', () => {
    expect(router.resolve('gpt-4o')).toEqual({ upstream: oa, mappedModel: 'gpt-4o' });
    expect(router.resolve('o3')).toEqual({ upstream: oa, mappedModel: 'o3' });
    expect(router.resolve('claude-sonnet-4')).toEqual({ upstream: an, mappedModel: 'claude-sonnet-4' });
    expect(router.resolve('llama3')).toEqual({ upstream: catchAll, mappedModel: 'llama3' });
  });

  it('resolves aliases first, one step only', () => {
    expect(router.resolve('fast')).toEqual({ upstream: oa, mappedModel: 'gpt-4o-mini' });
    expect(router.resolve('smart')).toEqual({ upstream: an, mappedModel: 'claude-opus-4' });
    expect(router.resolve('loop')).toEqual({ upstream: catchAll, mappedModel: 'fast' });
  });

  it('no match → undefined (the caller answers 404)', () => {
    const strict = new ModelRouter([oa], {});
    expect(strict.resolve('claude-3')).toBeUndefined();
    expect(strict.resolve('toString')).toBeUndefined();
    expect(new ModelRouter([], {}).resolve('gpt-4o')).toBeUndefined();
  });

  it('counts a model under an alias, its listed name or the glob that matched it, else one bucket', () => {
    const strict = new ModelRouter([upstream('oa', ['gpt-4o', 'gpt-*'])], { fast: 'gpt-4o-mini' });
    expect(['fast', 'gpt-4o', 'gpt-4o-mini', 'gpt-anything-at-all'].map((m) => strict.countedAs(m))).toEqual([
      'fast',
      'gpt-4o',
      'gpt-*',
      'gpt-*',
    ]);
    expect(['claude-3', 'constructor', ''].map((m) => strict.countedAs(m))).toEqual([
      OTHER_MODELS,
      OTHER_MODELS,
      OTHER_MODELS,
    ]);
    // However many names clients choose, they count under the entries of the configuration.
    const names = new Set(Array.from({ length: 1_000 }, (_, i) => router.countedAs(`gpt-${i}`)));
    expect([...names]).toEqual(['gpt-*']);
  });

  it('an alias named like an Object.prototype member is not inherited', () => {
    expect(new ModelRouter([oa], {}).mapped('constructor')).toBe('constructor');
  });
});

describe('passesThrough', () => {
  const openai = upstreamConfig('oa', ['*']);
  const chatOnly = upstreamConfig('vllm', ['*'], 'openai', false);
  const anthropic = upstreamConfig('an', ['*'], 'anthropic');

  const operations: Record<'openai' | 'anthropic', Record<string, Operation>> = {
    openai: openaiOperations,
    anthropic: anthropicOperations,
  };
  const endpoint = (family: 'openai' | 'anthropic', name: string): Operation | undefined =>
    Object.values(operations[family]).find((o) => o.name === name);

  it.each<[string, boolean, UpstreamConfig, 'openai' | 'anthropic', string]>([
    ['Responses to an OpenAI upstream', true, openai, 'openai', 'responses'],
    ['Responses to an upstream without the Responses API', false, chatOnly, 'openai', 'responses'],
    ['chat completions to an upstream without the Responses API', true, chatOnly, 'openai', 'chat.completions'],
    ['images to an upstream without the Responses API', true, chatOnly, 'openai', 'images.generations'],
    ['Responses to an Anthropic upstream', false, anthropic, 'openai', 'responses'],
    ['Anthropic messages to an Anthropic upstream', true, anthropic, 'anthropic', 'messages'],
    ['Anthropic messages to an OpenAI upstream', false, openai, 'anthropic', 'messages'],
  ])('%s → passes through: %s', (_, expected, config, family, name) => {
    const operation = endpoint(family, name);
    expect(operation).toBeDefined();
    if (operation) expect(passesThrough(family, operation, config)).toBe(expected);
  });
});
