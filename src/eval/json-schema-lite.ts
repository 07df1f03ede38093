/**
 * The JSON-Schema subset tool definitions use: type (incl. integer and type lists),
 * properties, required, items, enum, additionalProperties. Other keywords are ignored.
 */
export interface JsonSchema {
  type?: string | string[];
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: unknown[];
  additionalProperties?: boolean | JsonSchema;
}

/** The JSON type name of a parsed value ('integer' is reported as 'number'). */
export function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

function hasType(v: unknown, t: string): boolean {
  switch (t) {
    case 'integer':
      return Number.isInteger(v);
    case 'number':
      return typeof v === 'number' && Number.isFinite(v);
    case 'object':
      return jsonType(v) === 'object';
    default:
      return jsonType(v) === t;
  }
}

function validateObject(schema: JsonSchema, obj: Record<string, unknown>, path: string): string[] {
  const errors: string[] = [];
  for (const key of schema.required ?? [])
    if (!(key in obj)) errors.push(`${path}: missing required property "${key}"`);
  for (const [key, val] of Object.entries(obj)) {
    const sub = schema.properties?.[key];
    if (sub) errors.push(...validateJson(sub, val, `${path}.${key}`));
    else if (schema.additionalProperties === false)
      errors.push(`${path}: unexpected property "${key}"`);
    else if (typeof schema.additionalProperties === 'object')
      errors.push(...validateJson(schema.additionalProperties, val, `${path}.${key}`));
  }
  return errors;
}

/** Every violation, each as "<path>: <what>"; empty when the value conforms. */
export function validateJson(schema: JsonSchema, value: unknown, path = '$'): string[] {
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!types.some((t) => hasType(value, t)))
      return [`${path}: expected ${types.join(' or ')}, got ${jsonType(value)}`];
  }
  if (schema.enum && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(value)))
    return [`${path}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`];
  if (jsonType(value) === 'object')
    return validateObject(schema, value as Record<string, unknown>, path);
  if (Array.isArray(value) && schema.items) {
    const items = schema.items;
    return value.flatMap((v, i) => validateJson(items, v, `${path}[${i}]`));
  }
  return [];
}
