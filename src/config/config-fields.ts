/** Typed, range-checked reads of config.json fields; every error names the field and value. */

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export type Json = Record<string, unknown>;

type Kind = 'number' | 'boolean' | 'string';

/** What a numeric field may hold. */
export type NumberRange =
  'positive-int' | 'non-negative-int' | 'positive' | 'finite' | 'unit-interval'; // (0, 1]

const RANGE_TEXT: Readonly<Record<NumberRange, string>> = {
  'positive-int': 'a positive integer',
  'non-negative-int': 'a non-negative integer',
  positive: 'a positive finite number',
  finite: 'a finite number',
  'unit-interval': 'a number in (0, 1]',
};

export function inRange(v: number, range: NumberRange): boolean {
  switch (range) {
    case 'positive-int':
      return Number.isInteger(v) && v > 0;
    case 'non-negative-int':
      return Number.isInteger(v) && v >= 0;
    case 'positive':
      return Number.isFinite(v) && v > 0;
    case 'finite':
      return Number.isFinite(v);
    case 'unit-interval':
      return Number.isFinite(v) && v > 0 && v <= 1;
  }
}

/** Throws unless `v` is in `range`: `<where>: field "<key>" must be <range> (got <v>)`. */
export function checkRange(v: number, range: NumberRange, key: string, where: string): number {
  if (!inRange(v, range))
    throw new ConfigError(`${where}: field "${key}" must be ${RANGE_TEXT[range]} (got ${v})`);
  return v;
}

function typed<T>(obj: Json, key: string, kind: Kind, where: string): T {
  const v = obj[key];
  if (typeof v !== kind) {
    throw new ConfigError(
      `${where}: field "${key}" is ${v === undefined ? 'missing' : `not a ${kind} (${JSON.stringify(v)})`}`,
    );
  }
  return v as T;
}

const absent = (obj: Json, key: string): boolean => obj[key] === undefined || obj[key] === null;

/** A required number in `range`. */
export function num(obj: Json, key: string, range: NumberRange, where: string): number {
  return checkRange(typed<number>(obj, key, 'number', where), range, key, where);
}

/** An optional number in `range`; `fallback` when absent or null. */
export function optNum(
  obj: Json,
  key: string,
  range: NumberRange,
  fallback: number,
  where: string,
): number {
  return absent(obj, key) ? fallback : num(obj, key, range, where);
}

export function optBool(obj: Json, key: string, fallback: boolean, where: string): boolean {
  return absent(obj, key) ? fallback : typed<boolean>(obj, key, 'boolean', where);
}

export function optStr(obj: Json, key: string, fallback: string, where: string): string {
  return absent(obj, key) ? fallback : typed<string>(obj, key, 'string', where);
}

/** A nested object field, or undefined when absent or null. */
export function optObject(obj: Json, key: string, where: string): Json | undefined {
  const v = obj[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'object' || Array.isArray(v))
    throw new ConfigError(`${where}: field "${key}" is not an object (${JSON.stringify(v)})`);
  return v as Json;
}

/**
 * Per-layer flags from a 0/1 (or boolean) list of num_hidden_layers entries, or an integer
 * frequency k (every k-th layer, as some configs write moe_layer_freq = 1).
 */
export function layerFlags(
  obj: Json,
  key: string,
  numLayers: number,
  where: string,
): boolean[] | undefined {
  const v = obj[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'number') {
    checkRange(v, 'non-negative-int', key, where);
    return Array.from({ length: numLayers }, (_, i) => v > 0 && (i + 1) % v === 0);
  }
  if (
    !Array.isArray(v) ||
    v.length !== numLayers ||
    v.some((x) => x !== 0 && x !== 1 && typeof x !== 'boolean')
  ) {
    throw new ConfigError(
      `${where}: field "${key}" must be a list of ${numLayers} zeros and ones (num_hidden_layers)`,
    );
  }
  return v.map((x) => x === 1 || x === true);
}

/** Per-layer flags from a list of names: true for `on`, false for `off`, anything else an error. */
export function layerKinds(
  obj: Json,
  key: string,
  numLayers: number,
  kinds: { readonly on: string; readonly off: string },
  where: string,
): boolean[] | undefined {
  const v = obj[key];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || v.length !== numLayers) {
    throw new ConfigError(
      `${where}: field "${key}" must be a list of ${numLayers} entries (num_hidden_layers)`,
    );
  }
  return v.map((x, i) => {
    if (x === kinds.on) return true;
    if (x === kinds.off) return false;
    throw new ConfigError(
      `${where}: field "${key}"[${i}] is ${JSON.stringify(x)}, expected "${kinds.on}" or "${kinds.off}"`,
    );
  });
}

/** EOS ids: an integer or a list of integers, each a token id below `vocabSize`. */
export function eosIds(v: unknown, vocabSize: number, key: string, where: string): number[] {
  if (v === undefined || v === null) return [];
  const ids = Array.isArray(v) ? v : [v];
  for (const id of ids) {
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id >= vocabSize) {
      throw new ConfigError(
        `${where}: field "${key}" holds ${JSON.stringify(id)}, not a token id in 0..${vocabSize - 1} (vocab_size)`,
      );
    }
  }
  return ids as number[];
}
