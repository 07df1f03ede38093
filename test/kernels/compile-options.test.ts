import { describe, expect, it } from 'vitest';
import { compileOptions } from '../../src/backend/cuda/kernel-cache.js';

// Kernels using Hopper-only instructions (wgmma) compile for the arch-specific target; every
// other file keeps the plain architecture, so its cubin cache names do not change.
describe('NVRTC compile options', () => {
  it('compiles the wgmma prefill kernel for sm_90a on sm_90 only', () => {
    expect(compileOptions('sm_90', 'attention-prefill-wg')).toContain('-arch=sm_90a');
    expect(compileOptions('sm_90', 'attention-prefill')).toContain('-arch=sm_90');
    expect(compileOptions('sm_90')).toEqual(compileOptions('sm_90', 'norm'));
    expect(compileOptions('sm_100', 'attention-prefill-wg')).toContain('-arch=sm_100');
  });
  it('compiles the wgmma FP8 decode GEMM for sm_90a on sm_90 only', () => {
    expect(compileOptions('sm_90', 'fp8-wgmma')).toContain('-arch=sm_90a');
    expect(compileOptions('sm_90', 'fp8-gemv')).toContain('-arch=sm_90');
    expect(compileOptions('sm_90', 'fp8-gemv')).not.toContain('-arch=sm_90a');
    expect(compileOptions('sm_100', 'fp8-wgmma')).toContain('-arch=sm_100');
  });
});
