import { describe, expect, it } from 'vitest';
import { validateJson, type JsonSchema } from './json-schema-lite.js';

const entropy: JsonSchema = {
  type: 'object',
  properties: {
    values: { type: 'array', items: { type: 'number' } },
    base: { type: 'integer', enum: [2, 10] },
    label: { type: ['string', 'null'] },
  },
  required: ['values'],
  additionalProperties: false,
};

describe('validateJson', () => {
  it('accepts conforming values', () => {
    expect(validateJson(entropy, { values: [0.5, 0.25, 0.25], base: 2 })).toEqual([]);
    expect(validateJson(entropy, { values: [], label: null })).toEqual([]);
  });

  it('reports each violation with its path', () => {
    expect(validateJson(entropy, { values: '[0.5, 0.25, 0.25]', base: 2 })).toEqual([
      '$.values: expected array, got string',
    ]);
    expect(validateJson(entropy, { values: ['', 1], base: '' })).toEqual([
      '$.values[0]: expected number, got string',
      '$.base: expected integer, got string',
    ]);
    expect(validateJson(entropy, { base: 3, extra: 1 })).toEqual([
      '$: missing required property "values"',
      '$.base: 3 is not one of [2,10]',
      '$: unexpected property "extra"',
    ]);
    expect(validateJson(entropy, [1])).toEqual(['$: expected object, got array']);
    expect(validateJson({ type: 'integer' }, 1.5)).toEqual(['$: expected integer, got number']);
  });
});
