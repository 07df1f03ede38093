import wabtInit from 'wabt';

/** WAT text → wasm bytes, with SIMD and threads (shared memory) enabled. */
export async function assembleWat(text) {
  const wabt = await wabtInit();
  const mod = wabt.parseWat('kernel.wat', text, { simd: true, threads: true });
  try {
    return new Uint8Array(mod.toBinary({}).buffer);
  } finally {
    mod.destroy();
  }
}

/**
 * The bf16-weight variant of matmul.wat, derived from its text so the two kernels cannot
 * drift apart: w is u16 [N, K] (bf16 bits), rows K·2 bytes apart; each load of 4 weights
 * widens them exactly to f32 (zero-extend to 32 bits, shift left 16). The arithmetic, and so
 * every result bit, is the f32 kernel's on the widened weights. Exported as "matmul_bf16".
 */
export function bf16Variant(text) {
  const rules = [
    // weight row offsets: K·2 bytes per row instead of K·4
    [
      /\(i32\.add \(local\.get \$(wp|w1|w2)\) \(local\.get \$K4\)\)/g,
      '(i32.add (local.get $$$1) (i32.shr_u (local.get $$K4) (i32.const 1)))',
    ],
    [
      /\(i32\.mul \(local\.get \$j\) \(local\.get \$K4\)\)/g,
      '(i32.mul (local.get $$j) (i32.shr_u (local.get $$K4) (i32.const 1)))',
    ],
    // weight loads: 4 bf16 at byte k/2, widened
    [
      /\(v128\.load \(i32\.add \(local\.get \$(wp|w1|w2|w3)\) \(local\.get \$k\)\)\)/g,
      '(i32x4.shl (v128.load16x4_u (i32.add (local.get $$$1) (i32.shr_u (local.get $$k) (i32.const 1)))) (i32.const 16))',
    ],
    [/\(export "matmul"\)/, '(export "matmul_bf16")'],
  ];
  let out = text;
  for (const [re, to] of rules) {
    const next = out.replace(re, to);
    if (next === out) throw new Error(`bf16Variant: no match for ${re}`);
    out = next;
  }
  return out;
}
