import convict from 'convict';
import { isObject } from '../json.ts';
import { ConfigError } from './errors.ts';
import { registerFormats } from './formats.ts';
import { fail } from './shape.ts';

/**
 * Settings that are lists or maps of items (upstreams, MCP servers, keys),
 * each item validated by a convict schema of its own. convict loads an
 * object-valued setting as one opaque value, so each item gets its own convict
 * instance, and its messages are prefixed with the item's key:
 * `proxy.upstreams[1].base_url: must be an absolute http(s) URL`.
 *
 * A format that checks inside a map or list names the entry by starting its
 * message with it (`.X-Api-Key: …`, `[2]: …`); it is joined to the setting's
 * name, giving `headers.X-Api-Key: …`.
 */
export function validateItem<T>(key: string, raw: unknown, schema: convict.Schema<T>, what: string): T {
  if (!isObject(raw)) fail(key, `must be an object (${what})`);
  // Unknown settings first, with a message that says what the item is.
  for (const field of Object.keys(raw)) {
    if (!(field in schema)) fail(`${key}.${field}`, `is not a setting of ${what}`);
  }
  registerFormats();
  const config = convict(schema);
  config.load(raw);
  try {
    config.validate({ allowed: 'strict' });
  } catch (error) {
    const lines = (error as Error).message.split('\n');
    const named = lines.map((line) => `${key}.${line.replace(/^([^:]+): ([.[][^:]*): /, '$1$2: ')}`);
    throw new ConfigError(`invalid configuration: ${named.join('\n')}`);
  }
  return config.getProperties();
}

/** An item's setting it must have: convict's null default, typed as the value its format checks. */
export const required = <T>(doc: string, format: convict.SchemaObj<T>['format']): convict.SchemaObj<T> => ({
  doc,
  format,
  default: null,
});

/** An item's setting it may leave out: undefined when absent (a format is not run on an absent setting). */
export const optional = <T>(
  doc: string,
  format: convict.SchemaObj<T | undefined>['format'],
): convict.SchemaObj<T | undefined> => ({ doc, format, default: undefined });

/** Fails on the second item whose `name` an earlier one has. */
export function uniqueNames(key: string, items: { name: string }[], what: string): void {
  const seen = new Set<string>();
  items.forEach((item, i) => {
    if (seen.has(item.name)) fail(`${key}[${i}].name`, `${JSON.stringify(item.name)} is used by an earlier ${what}`);
    seen.add(item.name);
  });
}
