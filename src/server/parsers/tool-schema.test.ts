import { describe, expect, it } from 'vitest';

import { castLeaf, childSchema, kindOf } from './tool-schema.js';

describe('castLeaf', () => {
  it.each([
    ['  x ', { type: 'string' }, '  x '],
    ['null', { type: 'string' }, 'null'],
    ['null', { type: ['string', 'null'] }, null],
    ['', { type: ['integer', 'null'] }, null],
    ['none', { type: ['string', 'null'] }, 'none'],
    ['NULL', { type: 'integer' }, 'NULL'],
    [' 42 ', { type: 'integer' }, 42],
    ['4.5', { type: 'integer' }, '4.5'],
    ['3.0', { type: 'number' }, 3],
    ['-1e3', { type: 'number' }, -1000],
    ['abc', { type: 'number' }, 'abc'],
    ['ON', { type: 'boolean' }, true],
    ['0', { type: 'boolean' }, false],
    ['maybe', { type: 'boolean' }, 'maybe'],
    ['', { type: 'array' }, []],
    ['[1, 2]', { type: 'array' }, [1, 2]],
    ['{"a":1}', { type: 'object' }, { a: 1 }],
    ['7', { anyOf: [{ type: 'integer' }, { type: 'null' }] }, 7],
    ['7', undefined, '7'],
    ['7', { type: 'int' }, 7],
  ])('%j as %j -> %j', (text, schema, expected) => {
    expect(castLeaf(text, schema)).toEqual(expected);
  });
});

describe('childSchema / kindOf', () => {
  it('follows properties, additionalProperties, items, prefixItems and anyOf branches', () => {
    const s = {
      type: 'object',
      properties: { a: { type: 'integer' } },
      additionalProperties: { type: 'boolean' },
    };
    expect(childSchema(s, 'a', 0)).toEqual({ type: 'integer' });
    expect(childSchema(s, 'zz', 0)).toEqual({ type: 'boolean' });
    const arr = { type: 'array', prefixItems: [{ type: 'string' }], items: { type: 'number' } };
    expect(childSchema(arr, 'item', 0)).toEqual({ type: 'string' });
    expect(childSchema(arr, 'item', 5)).toEqual({ type: 'number' });
    const tuple = { type: 'array', prefixItems: [{ type: 'string' }, { type: 'integer' }] };
    expect(childSchema(tuple, 'item', 7)).toEqual({ type: 'integer' }); // the last entry
    const extra = { ...tuple, additionalItems: { type: 'boolean' }, items: { type: 'number' } };
    expect(childSchema(extra, 'item', 2)).toEqual({ type: 'boolean' });
    const union = {
      anyOf: [{ type: 'object', properties: { q: { type: 'string' } } }, { type: 'null' }],
    };
    expect(childSchema(union, 'q', 0)).toEqual({ type: 'string' });
    expect(kindOf({ type: 'object' })).toBe('object');
    expect(kindOf({ type: ['array', 'null'] })).toBe('unknown');
    expect(kindOf({ type: ['integer', 'null'] })).toBe('leaf');
    expect(kindOf(undefined)).toBe('unknown');
  });
});
