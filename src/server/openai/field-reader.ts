import { badRequest } from '../errors.js';

export type JsonObject = Record<string, unknown>;

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A short, printable description of a bad value for error messages. */
export function describe(v: unknown): string {
  if (Array.isArray(v)) return 'an array';
  if (v === null) return 'null';
  if (typeof v === 'object') return 'an object';
  const text = JSON.stringify(v) ?? String(v);
  const shown = text.length > 40 ? `${text.slice(0, 40)}…` : text;
  return `${shown} (${typeof v})`;
}

export interface NumberRange {
  integer?: boolean;
  min?: number;
  max?: number;
  /** Exclusive lower bound. */
  above?: number;
}

function rangeText(r: NumberRange): string {
  const parts: string[] = [];
  if (r.above !== undefined) parts.push(`> ${r.above}`);
  if (r.min !== undefined) parts.push(`>= ${r.min}`);
  if (r.max !== undefined) parts.push(`<= ${r.max}`);
  return parts.join(' and ');
}

/**
 * Reads typed fields of one JSON object and throws a 400 that names the field (with its full
 * path, e.g. `messages[2].content`) when a value has the wrong type or range. `null` counts as
 * absent, as the OpenAI API treats it; fields nobody asks for are ignored.
 */
export class FieldReader {
  constructor(
    readonly obj: JsonObject,
    readonly prefix = '',
  ) {}

  path(name: string): string {
    return this.prefix ? `${this.prefix}.${name}` : name;
  }

  raw(name: string): unknown {
    const v = this.obj[name];
    return v === null ? undefined : v;
  }

  fail(name: string, message: string): never {
    throw badRequest(`${this.path(name)} ${message}`, this.path(name));
  }

  number(name: string, range: NumberRange = {}): number | undefined {
    const v = this.raw(name);
    if (v === undefined) return undefined;
    const kind = range.integer ? 'an integer' : 'a number';
    if (typeof v !== 'number' || !Number.isFinite(v))
      this.fail(name, `must be ${kind}, got ${describe(v)}`);
    const inRange =
      (!range.integer || Number.isSafeInteger(v)) &&
      (range.min === undefined || v >= range.min) &&
      (range.max === undefined || v <= range.max) &&
      (range.above === undefined || v > range.above);
    if (!inRange) {
      const bounds = rangeText(range);
      this.fail(name, `must be ${kind}${bounds ? ` ${bounds}` : ''}, got ${v}`);
    }
    return v;
  }

  boolean(name: string): boolean | undefined {
    const v = this.raw(name);
    if (v === undefined) return undefined;
    if (typeof v !== 'boolean') this.fail(name, `must be a boolean, got ${describe(v)}`);
    return v;
  }

  string(name: string): string | undefined {
    const v = this.raw(name);
    if (v === undefined) return undefined;
    if (typeof v !== 'string') this.fail(name, `must be a string, got ${describe(v)}`);
    return v;
  }

  /** A string that must be present and non-empty. */
  requiredString(name: string): string {
    const v = this.string(name);
    if (v === undefined || v === '') this.fail(name, 'is required');
    return v;
  }

  object(name: string): JsonObject | undefined {
    const v = this.raw(name);
    if (v === undefined) return undefined;
    if (!isObject(v)) this.fail(name, `must be an object, got ${describe(v)}`);
    return v;
  }

  array(name: string): unknown[] | undefined {
    const v = this.raw(name);
    if (v === undefined) return undefined;
    if (!Array.isArray(v)) this.fail(name, `must be an array, got ${describe(v)}`);
    return v;
  }

  /** A reader for a nested object field (required unless `optional`). */
  child(name: string, optional: true): FieldReader | undefined;
  child(name: string, optional?: false): FieldReader;
  child(name: string, optional = false): FieldReader | undefined {
    const v = this.object(name);
    if (v === undefined) {
      if (optional) return undefined;
      this.fail(name, 'is required');
    }
    return new FieldReader(v, this.path(name));
  }

  /** A reader for element `i` of an array field, which must be an object. */
  element(name: string, i: number, value: unknown): FieldReader {
    const p = `${this.path(name)}[${i}]`;
    if (!isObject(value)) throw badRequest(`${p} must be an object, got ${describe(value)}`, p);
    return new FieldReader(value, p);
  }
}
