import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/config/errors.ts';
import { HEADER_NAME, stringMapFormat } from '../../../src/config/formats.ts';
import { uniqueNames, validateItem } from '../../../src/config/items.ts';

const schema = {
  name: { doc: 'n', format: 'item-name', default: null as unknown as string },
  url: { doc: 'u', format: 'base-url', default: '' },
  models: { doc: 'm', format: 'globs', default: null as unknown as string[] },
  headers: {
    doc: 'h',
    format: stringMapFormat(HEADER_NAME, 'header name', new Set(['host']), 'is set by the proxy'),
    default: {} as Record<string, string>,
  },
  secret: { doc: 's', format: 'optional-string', default: undefined as string | undefined, sensitive: true },
  env: { doc: 'e', format: 'optional-env-name', default: undefined as string | undefined },
  on: { doc: 'o', format: 'optional-boolean', default: undefined as boolean | undefined },
  count: { doc: 'c', format: 'positive-int', default: 1 },
  args: { doc: 'a', format: 'strings', default: [] as string[] },
  wait: { doc: 'w', format: 'duration', default: 1_000 },
};
const good = { name: 'a', url: 'https://x.example/v1', models: ['gpt-*'] };

function message(raw: unknown): string {
  try {
    validateItem('proxy.things[3]', raw, schema, 'a thing');
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('accepted');
}

describe('validateItem', () => {
  it('answers the item with defaults filled in and durations parsed', () => {
    expect(validateItem('k', { ...good, wait: '2s', headers: { 'X-A': 'b' } }, schema, 'a thing')).toMatchObject({
      ...good,
      headers: { 'X-A': 'b' },
      count: 1,
      args: [],
      wait: 2_000,
    });
  });

  it.each([
    ['x', 'proxy.things[3]: must be an object (a thing)'],
    [{ ...good, extra: 1 }, 'proxy.things[3].extra: is not a setting of a thing'],
    [{ ...good, name: '' }, 'proxy.things[3].name: must be a non-empty string'],
    [{ url: good.url, models: good.models }, 'proxy.things[3].name: must be a non-empty string'],
    [{ ...good, name: '-a' }, 'proxy.things[3].name: uses letters, digits'],
    [{ ...good, url: 'ftp://x' }, 'proxy.things[3].url: must be an absolute http(s) URL'],
    [{ ...good, url: 'https://u:p@x' }, 'proxy.things[3].url: must not carry a query, a fragment or credentials'],
    [{ ...good, models: [] }, 'proxy.things[3].models: must be a non-empty list of names or globs'],
    [{ ...good, models: ['a', ' '] }, 'proxy.things[3].models[1]: must be a non-empty string'],
    [{ ...good, headers: { 'bad header': 'x' } }, 'proxy.things[3].headers.bad header: is not a valid header name'],
    [{ ...good, headers: { Host: 'x' } }, 'proxy.things[3].headers.Host: is set by the proxy'],
    [{ ...good, headers: { 'X-A': 1 } }, 'proxy.things[3].headers.X-A: must be a string'],
    [{ ...good, headers: ['x'] }, 'proxy.things[3].headers: must be a map of header names to strings'],
    [{ ...good, env: 'A-B' }, 'proxy.things[3].env: must be an environment variable name'],
    [{ ...good, on: 'yes' }, 'proxy.things[3].on: must be true or false'],
    [{ ...good, count: 0 }, 'proxy.things[3].count: must be a positive integer'],
    [{ ...good, args: 'a b' }, 'proxy.things[3].args: must be a list of strings'],
    [{ ...good, wait: 'soon' }, 'proxy.things[3].wait: must be a positive duration'],
  ])('%j: %s', (raw, expected) => {
    expect(message(raw)).toContain(`invalid configuration: ${expected}`);
  });

  it('names every invalid setting of the item, one per line', () => {
    const lines = message({ ...good, count: 0, on: 1 }).split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(/^proxy\.things\[3\]\.count: must be a positive integer/);
  });

  it('never prints a sensitive value', () => {
    expect(message({ ...good, secret: 42 })).not.toContain('42');
  });
});

describe('uniqueNames', () => {
  it('refuses a name an earlier item has', () => {
    expect(() => uniqueNames('proxy.things', [{ name: 'a' }, { name: 'b' }, { name: 'a' }], 'thing')).toThrow(
      'proxy.things[2].name: "a" is used by an earlier thing',
    );
  });
});
