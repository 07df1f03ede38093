import { afterAll, describe, expect, it } from 'vitest';
import { goldenCase } from '../../../test/golden-dir.js';
import { CpuBackend } from '../../backend/cpu/cpu-backend.js';
import { quantizationOption } from '../../cli/load-options.js';
import { loadModel } from '../load-model.js';
import { runForward } from '../run-forward.js';
import { quantizeDequantize } from '../weights/fp8-quantize.js';

const cpu = new CpuBackend();
afterAll(() => cpu.close());

function relErr(a: number[], b: number[]): number {
  let num = 0;
  let den = 0;
  for (let i = 0; i < a.length; i++) {
    num += (a[i]! - b[i]!) ** 2;
    den += b[i]! ** 2;
  }
  return Math.sqrt(num / den);
}

describe('--quantization fp8', () => {
  it('parses vLLM-style and names bad values', () => {
    expect(quantizationOption({})).toBeNull();
    expect(quantizationOption({ quantization: 'fp8' })).toBe('fp8');
    expect(() => quantizationOption({ quantization: 'int4' })).toThrow(
      /--quantization must be one of fp8 \(got "int4"\)/,
    );
  });

  it('on the CPU: linears, embedding and LM head hold code · scale of 128 x 128 block FP8, the rest is untouched', async () => {
    const dir = goldenCase('tiny-moe');
    const plain = await loadModel(dir, { backend: cpu });
    const q = await loadModel(dir, { backend: cpu, quantization: 'fp8' });
    const l0 = (m: typeof plain) => m.weights.layers[0]!;
    const l1 = (m: typeof plain) => m.weights.layers[1]!;
    const same = (a: Parameters<typeof cpu.readF32>[0]) => cpu.readF32(a);
    // q_proj [64, 64]: one block.
    expect(same(l0(q).attn.qProj)).toEqual(quantizeDequantize(same(l0(plain).attn.qProj), 64, 64));
    // Experts [E, 2I, D]: each matrix on its own.
    const gu = l1(plain).moe!.experts.gateUp;
    const [, R, C] = gu.shape as [number, number, number];
    expect(same(l1(q).moe!.experts.gateUp)).toEqual(quantizeDequantize(same(gu), R, C));
    expect(same(l1(q).moe!.experts.gateUp)).not.toEqual(same(gu));
    // The embedding and LM head too (the head GEMM and the lookup dequantize).
    const [V, D] = plain.weights.embed.shape as [number, number];
    expect(same(q.weights.embed)).toEqual(quantizeDequantize(same(plain.weights.embed), V, D));
    expect(same(q.weights.lmHead)).toEqual(quantizeDequantize(same(plain.weights.lmHead), V, D));
    expect(same(q.weights.lmHead)).not.toEqual(same(plain.weights.lmHead));
    // Not quantized: norms, router, MSA index projections.
    expect(same(q.weights.norm)).toEqual(same(plain.weights.norm));
    expect(same(l1(q).moe!.gate)).toEqual(same(l1(plain).moe!.gate));
    expect(same(l1(q).attn.index!.qProj)).toEqual(same(l1(plain).attn.index!.qProj));
  });

  it('moves the logits of the dense golden case by quantization noise only', async () => {
    const dir = goldenCase('tiny-dense');
    const ids = [1, 5, 9, 77, 200, 3, 14, 15];
    const a = await runForward(await loadModel(dir, { backend: cpu }), ids);
    const b = await runForward(await loadModel(dir, { backend: cpu, quantization: 'fp8' }), ids);
    const err = relErr(b.logits.flat(), a.logits.flat());
    expect(err).toBeGreaterThan(0);
    expect(err).toBeLessThan(0.1);
  });

  it('refuses a checkpoint quantized otherwise (MXFP8) and names it', async () => {
    await expect(
      loadModel(goldenCase('tiny-mxfp8'), { backend: cpu, quantization: 'fp8' }),
    ).rejects.toThrow(/already quantized \(mxfp8\)/);
  });
});
