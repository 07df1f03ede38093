;; Whether this runtime has relaxed SIMD (the module validates) and whether its
;; f32x4.relaxed_madd fuses (one rounding): probe(a, b, c) = a·b + c in lane 0. With
;; a = b = 1 + 2^-12 and c = -(1 + 2^-11), a·b = 1 + 2^-11 + 2^-24: fused, the result is 2^-24;
;; unfused, a·b rounds to 1 + 2^-11 (a tie, to even) and the result is 0. Used by
;; relaxed-simd.ts; tested by wasm-packed.test.ts.
(module
  (func (export "probe") (param $a f32) (param $b f32) (param $c f32) (result f32)
    (f32x4.extract_lane 0 (f32x4.relaxed_madd (f32x4.splat (local.get $a))
      (f32x4.splat (local.get $b)) (f32x4.splat (local.get $c))))))
