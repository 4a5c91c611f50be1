/** Gemini's tool and response schemas (an OpenAPI 3.0 subset) ⇄ JSON Schema. */
import type { JsonObject } from '../../translate/model.ts';
import { isObject } from '../../../json.ts';

/** Gemini schemas (OpenAPI subset, upper-case types) → JSON Schema for the other wires. */
export function jsonSchemaOf(schema: unknown): JsonObject {
  if (!isObject(schema)) return {};
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === 'type' && typeof v === 'string') out.type = v.toLowerCase();
    else if (k === 'properties' && isObject(v))
      out.properties = Object.fromEntries(Object.entries(v).map(([n, s]) => [n, jsonSchemaOf(s)]));
    else if (k === 'items') out.items = jsonSchemaOf(v);
    else if (k === 'anyOf' && Array.isArray(v)) out.anyOf = v.map(jsonSchemaOf);
    else if (k === 'nullable' || k === 'propertyOrdering') continue;
    else out[k] = v;
  }
  if (schema.nullable === true && typeof out.type === 'string') out.type = [out.type, 'null'];
  return out;
}

/**
 * JSON Schema keywords Gemini's function declarations reject (it takes an
 * OpenAPI 3.0 subset). Everything else is kept; unknown formats are dropped
 * because Gemini only accepts `enum` and `date-time` for strings.
 */
const GEMINI_DROPPED = new Set([
  '$schema',
  '$id',
  '$ref',
  '$defs',
  'definitions',
  '$comment',
  'additionalProperties',
  'unevaluatedProperties',
  'patternProperties',
  'propertyNames',
  'dependentSchemas',
  'dependentRequired',
  'if',
  'then',
  'else',
  'not',
  'const',
  'examples',
  'default',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'contentEncoding',
  'contentMediaType',
  'strict',
  'title',
  'readOnly',
  'writeOnly',
  'deprecated',
  'additionalItems',
  'contains',
  'minContains',
  'maxContains',
  'uniqueItems',
  'multipleOf',
]);

/** Rewrites a JSON Schema into what Gemini's `parameters` accepts: refs inlined, unions flattened. */
export function geminiSchema(schema: unknown): JsonObject {
  const root = isObject(schema) ? schema : {};
  const defs = { ...(isObject(root.$defs) ? root.$defs : {}), ...(isObject(root.definitions) ? root.definitions : {}) };
  return cleanGemini(root, defs, 0);
}

function cleanGemini(node: JsonObject, defs: JsonObject, depth: number): JsonObject {
  if (depth > 32) return { type: 'object' };
  if (typeof node.$ref === 'string') {
    const name = node.$ref.replace(/^#\/(\$defs|definitions)\//, '');
    const target = defs[name];
    return isObject(target) ? cleanGemini(target, defs, depth + 1) : { type: 'object' };
  }
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(node)) {
    if (GEMINI_DROPPED.has(key)) continue;
    if (key === 'type' && Array.isArray(value)) {
      // ["string","null"] → type string, nullable.
      const types = value.filter((t) => t !== 'null');
      out.type = types[0] ?? 'string';
      if (types.length < value.length) out.nullable = true;
    } else if (key === 'properties' && isObject(value)) {
      out.properties = Object.fromEntries(
        Object.entries(value).map(([k, v]) => [k, isObject(v) ? cleanGemini(v, defs, depth + 1) : {}]),
      );
    } else if (key === 'items' && (isObject(value) || Array.isArray(value))) {
      // Tuples (an array of item schemas) are not in Gemini's subset: the first item schema stands for all.
      const item: unknown = Array.isArray(value) ? value[0] : value;
      out.items = isObject(item) ? cleanGemini(item, defs, depth + 1) : {};
    } else if ((key === 'anyOf' || key === 'oneOf') && Array.isArray(value)) {
      const variants = value.filter(isObject).filter((v) => v.type !== 'null');
      if (variants.length < value.length) out.nullable = true;
      const [only] = variants;
      if (variants.length === 1 && only) Object.assign(out, cleanGemini(only, defs, depth + 1));
      else if (variants.length > 1) out.anyOf = variants.map((v) => cleanGemini(v, defs, depth + 1));
    } else if (key === 'allOf' && Array.isArray(value)) {
      for (const v of value.filter(isObject)) Object.assign(out, cleanGemini(v, defs, depth + 1));
    } else if (key === 'format') {
      if (value === 'enum' || value === 'date-time') out.format = value;
    } else if (key === 'enum' && Array.isArray(value)) {
      out.enum = value.map(String);
    } else {
      out[key] = value;
    }
  }
  // Gemini refuses an empty `properties` and `required` names it does not define, and enums on non-strings.
  if (isObject(out.properties) && Object.keys(out.properties).length === 0) delete out.properties;
  const props = isObject(out.properties) ? out.properties : {};
  if (Array.isArray(out.required)) out.required = out.required.filter((r) => typeof r === 'string' && r in props);
  if (Array.isArray(out.required) && out.required.length === 0) delete out.required;
  if (out.enum !== undefined && out.type !== undefined && out.type !== 'string') delete out.enum;
  return out;
}

/**
 * A tool's `parameters` for Gemini: an object schema with properties, or
 * nothing (Gemini refuses an object schema without properties).
 */
export function geminiParameters(schema: unknown): JsonObject | undefined {
  const cleaned = geminiSchema(schema);
  if (!isObject(cleaned.properties)) return undefined;
  return { ...cleaned, type: 'object' };
}
