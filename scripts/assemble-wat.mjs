import wabtInit from 'wabt';

/**
 * WAT text → wasm bytes, with SIMD, threads (shared memory), bulk memory (memory.fill) and
 * relaxed SIMD (f32x4.relaxed_madd, in the FMA variants only) enabled.
 */
export async function assembleWat(text) {
  const wabt = await wabtInit();
  const mod = wabt.parseWat('kernel.wat', text, {
    simd: true,
    threads: true,
    bulk_memory: true,
    relaxed_simd: true,
  });
  try {
    return new Uint8Array(mod.toBinary({}).buffer);
  } finally {
    mod.destroy();
  }
}

/** Applies each [pattern, replacement] in turn; a rule that matches nothing is an error (the
 * source changed under the transform). */
function applyRules(name, text, rules) {
  let out = text;
  for (const [re, to] of rules) {
    const next = out.replace(re, to);
    if (next === out) throw new Error(`${name}: no match for ${re}`);
    out = next;
  }
  return out;
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
    // (an f32 load at offset=o reads bf16 at offset=o/2)
    [
      /\(v128\.load(?: offset=(\d+))? \(i32\.add \(local\.get \$(wp|w1|w2|w3)\) \(local\.get \$k\)\)\)/g,
      (_, off, w) =>
        `(i32x4.shl (v128.load16x4_u${off ? ` offset=${Number(off) / 2}` : ''} (i32.add (local.get $${w}) (i32.shr_u (local.get $k) (i32.const 1)))) (i32.const 16))`,
    ],
    [/\(export "matmul"\)/, '(export "matmul_bf16")'],
  ];
  return applyRules('bf16Variant', text, rules);
}

/**
 * The bf16 variant of matmul-packed.wat: a block's 8 weights of one k are 16 bytes of bf16
 * bits, stored c0 c4 c1 c5 c2 c6 c3 c7 (packed-panels.ts), loaded once and widened exactly
 * to two f32x4 in two instructions: the 32-bit lanes shifted left 16 are columns 0..3, the
 * lanes with their low halves cleared (shifted right, then left, 16) columns 4..7 (a shift pair
 * rather than an AND with a mask: the 5-row tile has no register left for the mask);
 * the arithmetic, and so every result bit, is the f32 kernel's on the widened weights.
 * Exported as "matmul_packed_bf16".
 */
export function packedBf16Variant(text) {
  const rules = [
    // (an f32 block load at offset=o: the bf16 block at offset=o/2)
    [
      /\(local\.set \$lo(\d?) \(v128\.load(?: offset=(\d+))? \(local\.get \$(wk\d?)\)\)\) ;; W lo/g,
      (_, n, off, wk) =>
        `(local.set $hi${n} (v128.load${off ? ` offset=${Number(off) / 2}` : ''} (local.get $${wk})))\n` +
        `        (local.set $lo${n} (i32x4.shl (local.get $hi${n}) (i32.const 16)))`,
    ],
    [
      /\(local\.set \$hi(\d?) \(v128\.load offset=\d+ \(local\.get \$wk\d?\)\)\) ;; W hi/g,
      '(local.set $$hi$1 (i32x4.shl (i32x4.shr_u (local.get $$hi$1) (i32.const 16)) (i32.const 16)))',
    ],
    [
      /\(local\.set \$KW \(local\.get \$K4\)\)/,
      '(local.set $$KW (i32.shr_u (local.get $$K4) (i32.const 1)))',
    ],
    [/\(local\.set \$ws \(i32\.const 32\)\)/, '(local.set $$ws (i32.const 16))'],
    [/\(export "matmul_packed"\)/, '(export "matmul_packed_bf16")'],
  ];
  return oneRowMask(applyRules('packedBf16Variant', text, rules));
}

/**
 * In the 1-row tiles ($t18, $t116, $t132: the GEMV at decode B=1), columns 4..7 widened with
 * one AND (low halves cleared by a constant mask) instead of the shift pair: these tiles have
 * registers to spare, are bound by vector instructions (3 integer ones per 8 weights beside
 * 8 multiplies and 8 adds), and ran in 0.66–0.80× the time (M = 1, N 128–3,072, K 64–256).
 * The 4- and 5-row tiles keep the shifts (the 4-row tile with the mask ran 1.06× at M = 4–32;
 * the 5-row one has no register for it). Same bits.
 */
function oneRowMask(text) {
  const shifts =
    /\(i32x4\.shl \(i32x4\.shr_u \(local\.get \$(hi\d?)\) \(i32\.const 16\)\) \(i32\.const 16\)\)/g;
  const mask = '(v128.const i32x4 0xffff0000 0xffff0000 0xffff0000 0xffff0000)';
  let n = 0;
  const out = text
    .split(/(?=\n {2}\(func )/)
    .map((f) => {
      if (!/^\n {2}\(func \$t1\d+ /.test(f)) return f;
      n++;
      return f.replace(shifts, `(v128.and (local.get $$$1) ${mask})`);
    })
    .join('');
  if (n !== 3 || out === text) throw new Error('packedBf16Variant: 1-row tiles not found');
  return out;
}

/**
 * The fused multiply-add variant of a kernel's text (matmul-packed.wat, its bf16 variant,
 * attention.wat): every accumulation c + a·b, written as (f32x4.add (local.get c) (f32x4.mul
 * A B)) with A and B locals or vector loads, becomes (f32x4.relaxed_madd A B (local.get c)),
 * which V8 compiles to vfmadd231ps where the CPU has FMA3 (one rounding per step instead of
 * two; half the floating-point instructions). Other products (scales, exp's polynomial) stay
 * as they are. The sums keep their order, so every output is still the same chain whatever
 * tile or thread computes it. Export names unchanged. `allFused`: no multiply may be left.
 */
export function fmaVariant(text, allFused = true) {
  const operand =
    '\\((?:local\\.get \\$\\w+|v128\\.load(?: offset=\\d+)? (?:\\(local\\.get \\$\\w+\\)|\\(i32\\.add \\(local\\.get \\$\\w+\\) \\(local\\.get \\$\\w+\\)\\)))\\)';
  const re = new RegExp(
    `\\(f32x4\\.add \\(local\\.get (\\$\\w+)\\)\\s+\\(f32x4\\.mul (${operand})\\s+(${operand})\\)\\)`,
    'g',
  );
  const out = text.replace(re, '(f32x4.relaxed_madd $2 $3 (local.get $1))');
  if (out === text) throw new Error(`fmaVariant: no match for ${re}`);
  if (allFused && /f32x4\.mul/.test(out)) throw new Error('fmaVariant: a multiply is left unfused');
  return out;
}

/**
 * The bf16 K/V variant of attention.wat: the K and V caches hold bf16 bits (u16 rows of
 * Hkv·Dh, half the bytes of float32), so each row stride, head offset and touched width
 * halves, and each load of 4 keys' or values' elements widens them exactly to f32 (zero-extend
 * to 32 bits, shift left 16). q, the scores and the output stay float32, and the arithmetic,
 * so every result bit, is the f32 kernel's on the widened values. MSA scoring reads bf16
 * index keys the same way ($msaScores: key rows of Di·2 bytes, $Dk, where q rows keep Di·4).
 * Exported as "attention_kv16", "msa_scores_kv16" and "msa_select_kv16" (msa_pick reads no
 * keys: the f32 module's).
 */
export function kvBf16Variant(text) {
  const half = (e) => `(i32.shr_u ${e} (i32.const 1))`;
  const widen = (load) => `(i32x4.shl ${load} (i32.const 16))`;
  const rules = [
    [
      /\(local\.set \$kvW4 (\(i32\.mul \(local\.get \$Hkv\) \(local\.get \$Dh4\)\))\)/,
      (_, e) => `(local.set $kvW4 ${half(e)})`,
    ],
    [
      /\(i32\.add \(local\.get \$(k|v)\) (\(i32\.mul \(local\.get \$g\) \(local\.get \$Dh4\)\))\)/g,
      (_, kv, e) => `(i32.add (local.get $${kv}) ${half(e)})`,
    ],
    [
      /\(local\.set \$tw (\(select \(i32\.mul \(local\.get \$gpu\) \(local\.get \$Dh4\)\) \(local\.get \$Dh4\) \(i32\.eqz \(local\.get \$blocks\)\)\))\)/,
      (_, e) => `(local.set $tw ${half(e)})`,
    ],
    [
      /\(v128\.load \(i32\.add \(local\.get \$(kp|k1|k2|k3)\) \(local\.get \$i\)\)\)/g,
      (_, k) => widen(`(v128.load16x4_u (i32.add (local.get $${k}) ${half('(local.get $i)')}))`),
    ],
    [
      /\(i32\.add \(local\.get \$vb\) \(local\.get \$c\)\)/g,
      `(i32.add (local.get $vb) ${half('(local.get $c)')})`,
    ],
    [
      /\(v128\.load offset=(\d+) \(local\.get \$vp\)\)/g,
      (_, off) => widen(`(v128.load16x4_u offset=${Number(off) / 2} (local.get $vp))`),
    ],
    // $msaScores: key rows of $Dk bytes
    [/\(local \$op i32\)/, '(local $$op i32) (local $$Dk i32)'],
    [
      /\(local\.set \$Di4 \(i32\.shl \(local\.get \$Di\) \(i32\.const 2\)\)\)/,
      '$&\n    (local.set $$Dk (i32.shl (local.get $$Di) (i32.const 1)))',
    ],
    [
      /\(call \$touchKeys \(local\.get \$kc\) \(local\.get \$pt\) \(local\.get \$pos\) \(local\.get \$S\) \(local\.get \$Di4\)/,
      '(call $$touchKeys (local.get $$kc) (local.get $$pt) (local.get $$pos) (local.get $$S) (local.get $$Dk)',
    ],
    [
      /\(local\.set \$kp0 \(i32\.add \(local\.get \$kc\) \(i32\.mul \(local\.get \$Di4\)/,
      '(local.set $$kp0 (i32.add (local.get $$kc) (i32.mul (local.get $$Dk)',
    ],
    [
      /\(local\.get \$kp\)(\s+)\(local\.get \$Di4\) \(local\.get \$Di4\)/g,
      '(local.get $$kp)$1(local.get $$Dk) (local.get $$Di4)',
    ],
    [
      /\(local\.set \$kp \(i32\.add \(local\.get \$kp\) \(i32\.shl \(local\.get \$Di4\) \(i32\.const 2\)\)\)\)/g,
      '(local.set $$kp (i32.add (local.get $$kp) (i32.shl (local.get $$Dk) (i32.const 2))))',
    ],
    [
      /\(local\.set \$kp \(i32\.add \(local\.get \$kp\) \(i32\.mul \(local\.get \$Di4\) \(local\.get \$j\)\)\)\)/,
      '(local.set $$kp (i32.add (local.get $$kp) (i32.mul (local.get $$Dk) (local.get $$j))))',
    ],
    [
      /\(local\.set \$kp \(i32\.add \(local\.get \$kp\) \(local\.get \$Di4\)\)\)/g,
      '(local.set $$kp (i32.add (local.get $$kp) (local.get $$Dk)))',
    ],
    [/\(export "attention"\)/, '(export "attention_kv16")'],
    [/\(export "msa_(scores|select)"\)/g, '(export "msa_$1_kv16")'],
    [/ \(export "msa_pick"\)/, ''],
  ];
  return applyRules('kvBf16Variant', text, rules);
}
