/** A JSON Schema node as tools declare parameters (only the keywords the parser reads). */
export type JsonSchema = Readonly<Record<string, unknown>>;

/** How an element's content is read, decided from its schema when possible. */
export type ValueKind = 'leaf' | 'object' | 'array' | 'unknown';

// "null"/"Null"/"NULL" only: "none" or "nil" may be legitimate enum strings.
const NULL_STRINGS = new Set(['null', 'Null', 'NULL']);
const TRUE_STRINGS = new Set(['true', '1', 'yes', 'on']);
const FALSE_STRINGS = new Set(['false', '0', 'no', 'off']);

function asSchema(v: unknown): JsonSchema | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as JsonSchema) : undefined;
}

/** Declared types, lower-cased, including those of `anyOf`/`oneOf` branches. */
export function schemaTypes(schema: JsonSchema | undefined): Set<string> {
  const types = new Set<string>();
  if (!schema) return types;
  const t = schema['type'];
  for (const name of Array.isArray(t) ? t : [t]) {
    if (typeof name === 'string') types.add(aliasType(name.toLowerCase()));
  }
  for (const key of ['anyOf', 'oneOf']) {
    const branches = schema[key];
    if (Array.isArray(branches)) {
      for (const b of branches) for (const bt of schemaTypes(asSchema(b))) types.add(bt);
    }
  }
  return types;
}

function aliasType(t: string): string {
  const aliases: Record<string, string> = {
    str: 'string',
    int: 'integer',
    float: 'number',
    bool: 'boolean',
  };
  return aliases[t] ?? t;
}

/** Leaf for scalar-only schemas, container for object- or array-only ones, else unknown. */
export function kindOf(schema: JsonSchema | undefined): ValueKind {
  const types = schemaTypes(schema);
  const hasObject = types.has('object');
  const hasArray = types.has('array');
  const scalar = [...types].some((t) => t !== 'object' && t !== 'array');
  if (hasObject && !hasArray && !scalar) return 'object';
  if (hasArray && !hasObject && !scalar) return 'array';
  if (scalar && !hasObject && !hasArray) return 'leaf';
  return 'unknown';
}

/** True when only a string is allowed, so the text can stream out before the element closes. */
export function isStringOnly(schema: JsonSchema | undefined): boolean {
  const types = schemaTypes(schema);
  return types.size === 1 && types.has('string');
}

/** Schema of a child element: an array entry (by position) or an object property. */
export function childSchema(
  parent: JsonSchema | undefined,
  tag: string,
  index: number,
): JsonSchema | undefined {
  if (!parent) return undefined;
  if (schemaTypes(parent).has('array')) {
    const prefix = parent['prefixItems'];
    const items = parent['items'];
    if (Array.isArray(prefix) && index < prefix.length) return asSchema(prefix[index]);
    if (Array.isArray(items)) return asSchema(items[index]) ?? asSchema(parent['additionalItems']);
    return asSchema(items) ?? asSchema(parent['additionalItems']);
  }
  const props = asSchema(parent['properties']);
  const own = asSchema(props?.[tag]) ?? asSchema(parent['additionalProperties']);
  if (own) return own;
  for (const key of ['anyOf', 'oneOf']) {
    const branches = parent[key];
    if (!Array.isArray(branches)) continue;
    for (const b of branches) {
      const found = asSchema(asSchema(asSchema(b)?.['properties'])?.[tag]);
      if (found) return found;
    }
  }
  return undefined;
}

/**
 * Casts the text of a leaf element by its schema: strings verbatim; integers and numbers
 * parsed (JSON keeps integral numbers integral); booleans from true/1/yes/on and
 * false/0/no/off; null from "null"/"Null"/"NULL" or empty text, only where null is allowed;
 * objects/arrays from empty text or embedded JSON. Anything that does not cast stays a string.
 */
export function castLeaf(text: string, schema: JsonSchema | undefined): unknown {
  const types = schemaTypes(schema);
  const nullable = types.has('null');
  if (types.size === 0 || (types.has('string') && !nullable)) return text;
  if (nullable && (NULL_STRINGS.has(text.trim()) || text === '')) return null;
  const t = text.trim();
  const n = t === '' ? NaN : Number(t);
  if (types.has('integer') && Number.isInteger(n)) return n;
  if (types.has('number') && Number.isFinite(n)) return n;
  if (types.has('boolean')) {
    const lower = t.toLowerCase();
    if (TRUE_STRINGS.has(lower)) return true;
    if (FALSE_STRINGS.has(lower)) return false;
  }
  if (types.has('array') && (t === '' || t.startsWith('['))) return parseJsonOr(t, []);
  if (types.has('object') && (t === '' || t.startsWith('{'))) return parseJsonOr(t, {});
  return text;
}

function parseJsonOr(text: string, empty: unknown): unknown {
  if (text === '') return empty;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
