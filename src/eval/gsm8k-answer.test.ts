import { describe, expect, it } from 'vitest';
import {
  answersEqual,
  exactMatch,
  extractAnswer,
  flexibleExtract,
  goldAnswer,
  INVALID,
  strictMatch,
} from './gsm8k-answer.js';

const REF = 'She makes 9 * 2 = $<<9*2=18>>18 every day.\n#### 1,018';

describe('lm-eval gsm8k filters', () => {
  it('strict-match takes the first #### number', () => {
    expect(strictMatch('x #### 42\n#### 7')).toBe('42');
    expect(strictMatch('The answer is 42.')).toBe(INVALID);
    expect(strictMatch('#### -3.50')).toBe('-3.50');
  });

  it('flexible-extract takes the last number-like match', () => {
    expect(flexibleExtract('2 apples and 3 pears make 5.')).toBe('5.');
    expect(flexibleExtract('costs $1,200 in total')).toBe('$1,200');
    expect(flexibleExtract('#### 18\n\nQuestion 7')).toBe('7');
    expect(flexibleExtract('no digits')).toBe(INVALID);
    expect(flexibleExtract('-4 degrees')).toBe('-4');
  });

  it('exact_match ignores case, commas, dollars, the #### prefix and a final period', () => {
    expect(exactMatch('1,018', REF)).toBe(true);
    expect(exactMatch('$1018.', REF)).toBe(true);
    expect(exactMatch('1018.0', REF)).toBe(false);
    expect(exactMatch(INVALID, REF)).toBe(false);
    expect(goldAnswer(REF)).toBe('1018');
  });

  it('scores strict and flexible differently on format drift', () => {
    const drift = 'So she earns 1018 dollars.';
    expect(exactMatch(strictMatch(drift), REF)).toBe(false);
    expect(exactMatch(flexibleExtract(drift), REF)).toBe(true);
    const wrong = '#### 1018 ... or rather 17';
    expect(exactMatch(strictMatch(wrong), REF)).toBe(true);
    expect(exactMatch(flexibleExtract(wrong), REF)).toBe(false);
  });
});

describe('stop-rate answer extraction', () => {
  it('prefers #### N, falls back to the last number, compares numerically', () => {
    expect(extractAnswer('first 3 then #### 18 and 99')).toBe('18');
    expect(extractAnswer('it is 18.00')).toBe('18.00');
    expect(answersEqual('18.00', '18')).toBe(true);
    expect(answersEqual('$1,018', '1018')).toBe(true);
    expect(answersEqual(INVALID, '18')).toBe(false);
  });
});
