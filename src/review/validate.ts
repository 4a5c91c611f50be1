import { isObject } from '../json.ts';
import { reviewErrors } from './errors.ts';

/**
 * Field readers for JSON request bodies. Each one names the field by its path
 * (`planSave.customPath`, `annotations[0].side`) in the 400 it throws.
 * Optional fields treat `null` like an absent field, as JSON clients often send it.
 */
export type Fields = Readonly<Record<string, unknown>>;

/** The body as an object: no body (or an empty one) is `{}`; arrays and scalars are refused. */
export function bodyObject(body: unknown): Fields {
  if (body === undefined || body === '') return {};
  if (!isObject(body)) throw reviewErrors.bodyNotObject();
  return body;
}

function join(prefix: string, key: string): string {
  return prefix ? `${prefix}.${key}` : key;
}

/** Reads the fields of one JSON object found at `path` (empty for the body itself). */
export class FieldReader {
  readonly fields: Fields;
  readonly path: string;

  constructor(fields: Fields, path = '') {
    this.fields = fields;
    this.path = path;
  }

  #present(key: string): unknown {
    const value = this.fields[key];
    return value === null ? undefined : value;
  }

  optionalString(key: string): string | undefined {
    const value = this.#present(key);
    if (value !== undefined && typeof value !== 'string') {
      throw reviewErrors.invalidField(join(this.path, key), 'a string');
    }
    // A lone surrogate is no text: it can be neither URL-encoded nor written as UTF-8.
    if (value !== undefined && !value.isWellFormed()) {
      throw reviewErrors.invalidField(join(this.path, key), 'well-formed Unicode text');
    }
    return value;
  }

  requiredString(key: string): string {
    const value = this.optionalString(key);
    if (value === undefined) throw reviewErrors.missingField(join(this.path, key));
    return value;
  }

  /** A string with more than white space in it (a plan, a document). */
  requiredText(key: string): string {
    const value = this.requiredString(key);
    if (value.trim() === '') throw reviewErrors.invalidField(join(this.path, key), 'a non-empty string');
    return value;
  }

  optionalBoolean(key: string): boolean | undefined {
    const value = this.#present(key);
    if (value !== undefined && typeof value !== 'boolean') {
      throw reviewErrors.invalidField(join(this.path, key), 'true or false');
    }
    return value;
  }

  requiredNumber(key: string, { integer = false, min = -Infinity, max = Infinity } = {}): number {
    const value = this.#present(key);
    if (value === undefined) throw reviewErrors.missingField(join(this.path, key));
    const whole = !integer || Number.isInteger(value);
    if (typeof value !== 'number' || !Number.isFinite(value) || !whole || value < min || value > max) {
      const what = integer ? 'an integer' : 'a number';
      const tooLarge = typeof value === 'number' && value > max;
      const range = tooLarge ? ` ≤ ${max}` : min > -Infinity ? ` ≥ ${min}` : '';
      throw reviewErrors.invalidField(join(this.path, key), `${what}${range}`);
    }
    return value;
  }

  optionalEnum<T extends string>(key: string, allowed: readonly T[]): T | undefined {
    const value = this.optionalString(key);
    if (value !== undefined && !allowed.includes(value as T)) {
      throw reviewErrors.invalidField(join(this.path, key), `one of ${allowed.join(', ')}`);
    }
    return value as T | undefined;
  }

  requiredEnum<T extends string>(key: string, allowed: readonly T[]): T {
    const value = this.optionalEnum(key, allowed);
    if (value === undefined) throw reviewErrors.missingField(join(this.path, key));
    return value;
  }

  optionalStringArray(key: string): string[] | undefined {
    const value = this.#present(key);
    if (value === undefined) return undefined;
    if (!Array.isArray(value) || value.some((item) => typeof item !== 'string')) {
      throw reviewErrors.invalidField(join(this.path, key), 'an array of strings');
    }
    return value as string[];
  }

  /** A nested object, read with its own FieldReader. */
  optionalObject(key: string): FieldReader | undefined {
    const value = this.#present(key);
    if (value === undefined) return undefined;
    if (!isObject(value)) throw reviewErrors.invalidField(join(this.path, key), 'an object');
    return new FieldReader(value, join(this.path, key));
  }

  /** An array of objects, each read with its own FieldReader (`key[i]`). */
  optionalObjectArray(key: string): FieldReader[] | undefined {
    const value = this.#present(key);
    if (value === undefined) return undefined;
    const path = join(this.path, key);
    if (!Array.isArray(value)) throw reviewErrors.invalidField(path, 'an array');
    return value.map((item: unknown, index) => {
      if (!isObject(item)) throw reviewErrors.invalidField(`${path}[${index}]`, 'an object');
      return new FieldReader(item, `${path}[${index}]`);
    });
  }
}

/** A reader over a request body (see bodyObject). */
export function readBody(body: unknown): FieldReader {
  return new FieldReader(bodyObject(body));
}

/** The longest short text a submission names (a title, a branch, a mode). */
export const SHORT_TEXT_MAX = 200;

/** An optional one-line text of at most SHORT_TEXT_MAX characters, trimmed; `fallback` when empty or absent. */
export function shortText(body: FieldReader, key: string, fallback: string): string {
  const value = body.optionalString(key)?.trim() ?? '';
  if (value.length > SHORT_TEXT_MAX) throw reviewErrors.invalidField(key, `at most ${SHORT_TEXT_MAX} characters`);
  return value || fallback;
}
