import { describe, expect, it } from 'vitest';
import { bf16ToF32, f16ToF32, f32ToBf16, F8E4M3_TABLE } from './dtype.js';

describe('dtype conversions', () => {
  it('round-trips bf16 and rounds to nearest even', () => {
    expect(bf16ToF32(f32ToBf16(1.5))).toBe(1.5);
    expect(bf16ToF32(f32ToBf16(-3.25))).toBe(-3.25);
    // 1 + 2^-8 is halfway between bf16 neighbours 1 and 1+2^-7: ties to even (1).
    expect(bf16ToF32(f32ToBf16(1 + 2 ** -8))).toBe(1);
    expect(bf16ToF32(f32ToBf16(1 + 3 * 2 ** -8))).toBe(1 + 2 ** -6);
  });
  it('decodes f16', () => {
    expect(f16ToF32(0x3c00)).toBe(1);
    expect(f16ToF32(0xc000)).toBe(-2);
    expect(f16ToF32(0x0001)).toBe(2 ** -24);
  });
  it('decodes float8 e4m3fn', () => {
    expect(F8E4M3_TABLE[0x7e]).toBe(448);
    expect(Number.isNaN(F8E4M3_TABLE[0x7f])).toBe(true);
    expect(F8E4M3_TABLE[0x38]).toBe(1);
    expect(F8E4M3_TABLE[0x01]).toBe(2 ** -9);
    expect(Object.is(F8E4M3_TABLE[0x80], -0)).toBe(true);
  });
});
