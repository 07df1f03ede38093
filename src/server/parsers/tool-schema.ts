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

/**
 * Declared types, lower-cased, including those of `anyOf`/`oneOf` branches. A node without
 * `type` takes the types of its `enum`/`const` values (`{"enum": [1, 2, 3]}` is an integer).
 */
export function schemaTypes(schema: JsonSchema | undefined): Set<string> {
  const types = new Set<string>();
  if (!schema) return types;
  const t = schema['type'];
  for (const name of Array.isArray(t) ? t : [t]) {
    if (typeof name === 'string') types.add(aliasType(name.toLowerCase()));
  }
  if (t === undefined) for (const v of enumValues(schema)) types.add(jsonTypeOf(v));
  for (const key of ['anyOf', 'oneOf']) {
    const branches = schema[key];
    if (Array.isArray(branches)) {
      for (const b of branches) for (const bt of schemaTypes(asSchema(b))) types.add(bt);
    }
  }
  return types;
}

function enumValues(schema: JsonSchema): unknown[] {
  const e = schema['enum'];
  if (Array.isArray(e)) return e;
  return 'const' in schema ? [schema['const']] : [];
}

function jsonTypeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v; // string, boolean, object
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
    if (Array.isArray(items) && index < items.length) return asSchema(items[index]);
    // Past the tuple: additionalItems, then items, then the last tuple entry (SGLang's order).
    const tuple = Array.isArray(prefix) ? prefix : Array.isArray(items) ? items : [];
    return (
      asSchema(parent['additionalItems']) ??
      asSchema(Array.isArray(items) ? undefined : items) ??
      asSchema(tuple[tuple.length - 1])
    );
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
 * Casts the text of a leaf element by its schema, in the order and with the rules of SGLang's
 * MinimaxM3Detector: strings verbatim (unless null is allowed too); null from "null"/"Null"/"NULL"
 * or empty text where null is allowed; integers as Python's int() reads them (digits with an
 * optional sign, `_` between digits; exact beyond 2^53); numbers as float() reads them, integral
 * ones written as integers; booleans from true/1/yes/on and false/0/no/off; arrays and objects
 * from empty text or embedded JSON. Anything that does not cast stays a string.
 */
export function castLeaf(text: string, schema: JsonSchema | undefined): unknown {
  const types = schemaTypes(schema);
  const nullable = types.has('null');
  if (types.size === 0 || (types.has('string') && !nullable)) return text;
  if (nullable && (NULL_STRINGS.has(text.trim()) || text === '')) return null;
  const t = text.trim();
  if (types.has('integer') && PY_INT.test(t)) return exactInteger(BigInt(t.replaceAll('_', '')));
  if (types.has('number') && PY_FLOAT.test(t)) {
    const n = Number(t.replaceAll('_', ''));
    if (Number.isFinite(n)) return Number.isInteger(n) ? exactInteger(BigInt(n)) : n;
  }
  if (types.has('boolean')) {
    const lower = t.toLowerCase();
    if (TRUE_STRINGS.has(lower)) return true;
    if (FALSE_STRINGS.has(lower)) return false;
  }
  if (types.has('array') && (t === '' || t.startsWith('['))) return parseJsonOr(t, []);
  if (types.has('object') && (t === '' || t.startsWith('{'))) return parseJsonOr(t, {});
  return text;
}

// Python's int(str) and float(str) grammars (ASCII digits; inf/nan are not JSON numbers).
const DIGITS = String.raw`\d(?:_?\d)*`;
const PY_INT = new RegExp(`^[+-]?${DIGITS}$`);
const PY_FLOAT = new RegExp(
  `^[+-]?(?:${DIGITS}(?:\\.(?:${DIGITS})?)?|\\.${DIGITS})(?:[eE][+-]?${DIGITS})?$`,
);

/** A number when it is exact as one, else the bigint (written as its digits in the JSON). */
function exactInteger(v: bigint): number | bigint {
  const n = Number(v);
  return Number.isSafeInteger(n) ? n : v;
}

function parseJsonOr(text: string, empty: unknown): unknown {
  if (text === '') return empty;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
