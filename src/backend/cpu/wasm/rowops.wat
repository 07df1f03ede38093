;; Per-row float32 ops of a step in 128-bit SIMD, on rows [r0, r1) (the thread pool cuts a step's
;; rows into chunks; each row is computed the same way in any chunk, so results do not depend
;; on the thread count): Gemma RMSNorm, residual add + RMSNorm, SwiGLU-OAI, elementwise add;
;; the MoE's row gather and weighted scatter-add; the KV cache's row scatter; q/k norms, RoPE
;; and the cache writes of attention in one pass.
;; Row widths must be multiples of 4; pointers are byte offsets into the shared memory; an
;; output may be its input. The float64 JS kernels in ../ops are the reference (float32
;; rounding apart). Tested by src/backend/cpu/wasm/wasm-rowops.test.ts.
(module
  (import "env" "memory" (memory 1 65536 shared))

  (func $hsum (param $v v128) (result f32)
    (f32.add
      (f32.add (f32x4.extract_lane 0 (local.get $v)) (f32x4.extract_lane 1 (local.get $v)))
      (f32.add (f32x4.extract_lane 2 (local.get $v)) (f32x4.extract_lane 3 (local.get $v)))))

  ;; e^x per lane for x <= 0 (Cephes expf: x = n*ln2 + r, degree-6 polynomial in r, times 2^n);
  ;; lanes below -87 (and -inf) give exactly 0.
  (func $exp4 (param $x v128) (result v128)
    (local $tiny v128) (local $n v128) (local $r v128) (local $p v128)
    (local.set $tiny (f32x4.lt (local.get $x) (v128.const f32x4 -87 -87 -87 -87)))
    (local.set $x (f32x4.max (local.get $x) (v128.const f32x4 -87 -87 -87 -87)))
    (local.set $n (f32x4.nearest (f32x4.mul (local.get $x)
      (v128.const f32x4 1.44269504088896341 1.44269504088896341 1.44269504088896341 1.44269504088896341))))
    (local.set $r (f32x4.sub (local.get $x) (f32x4.mul (local.get $n)
      (v128.const f32x4 0.693359375 0.693359375 0.693359375 0.693359375))))
    (local.set $r (f32x4.sub (local.get $r) (f32x4.mul (local.get $n)
      (v128.const f32x4 -2.12194440e-4 -2.12194440e-4 -2.12194440e-4 -2.12194440e-4))))
    (local.set $p (v128.const f32x4 1.9875691500e-4 1.9875691500e-4 1.9875691500e-4 1.9875691500e-4))
    (local.set $p (f32x4.add (f32x4.mul (local.get $p) (local.get $r))
      (v128.const f32x4 1.3981999507e-3 1.3981999507e-3 1.3981999507e-3 1.3981999507e-3)))
    (local.set $p (f32x4.add (f32x4.mul (local.get $p) (local.get $r))
      (v128.const f32x4 8.3334519073e-3 8.3334519073e-3 8.3334519073e-3 8.3334519073e-3)))
    (local.set $p (f32x4.add (f32x4.mul (local.get $p) (local.get $r))
      (v128.const f32x4 4.1665795894e-2 4.1665795894e-2 4.1665795894e-2 4.1665795894e-2)))
    (local.set $p (f32x4.add (f32x4.mul (local.get $p) (local.get $r))
      (v128.const f32x4 1.6666665459e-1 1.6666665459e-1 1.6666665459e-1 1.6666665459e-1)))
    (local.set $p (f32x4.add (f32x4.mul (local.get $p) (local.get $r))
      (v128.const f32x4 5.0000001201e-1 5.0000001201e-1 5.0000001201e-1 5.0000001201e-1)))
    ;; y = p*r^2 + r + 1
    (local.set $p (f32x4.add
      (f32x4.add (f32x4.mul (local.get $p) (f32x4.mul (local.get $r) (local.get $r))) (local.get $r))
      (v128.const f32x4 1 1 1 1)))
    ;; * 2^n, n in [-126, 0]: build the float's exponent field
    (local.set $p (f32x4.mul (local.get $p)
      (i32x4.shl (i32x4.add (i32x4.trunc_sat_f32x4_s (local.get $n)) (v128.const i32x4 127 127 127 127))
                 (i32.const 23))))
    (v128.andnot (local.get $p) (local.get $tiny)))

  ;; One row of n4 bytes: out = x / sqrt(mean(x²) + eps) · (1 + w).
  (func $norm_row (param $op i32) (param $xp i32) (param $w i32) (param $n4 i32) (param $eps f32)
    (local $i i32) (local $ss v128) (local $x v128) (local $inv v128)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n4)))
        (local.set $x (v128.load (i32.add (local.get $xp) (local.get $i))))
        (local.set $ss (f32x4.add (local.get $ss) (f32x4.mul (local.get $x) (local.get $x))))
        (local.set $i (i32.add (local.get $i) (i32.const 16)))
        (br $next)))
    (local.set $inv (f32x4.splat (f32.div (f32.const 1) (f32.sqrt (f32.add
      (f32.div (call $hsum (local.get $ss)) (f32.convert_i32_u (i32.shr_u (local.get $n4) (i32.const 2))))
      (local.get $eps))))))
    (local.set $i (i32.const 0))
    (block $done2
      (loop $next2
        (br_if $done2 (i32.ge_u (local.get $i) (local.get $n4)))
        (v128.store (i32.add (local.get $op) (local.get $i))
          (f32x4.mul (f32x4.mul (v128.load (i32.add (local.get $xp) (local.get $i))) (local.get $inv))
                     (f32x4.add (v128.const f32x4 1 1 1 1) (v128.load (i32.add (local.get $w) (local.get $i))))))
        (local.set $i (i32.add (local.get $i) (i32.const 16)))
        (br $next2))))

  ;; a[i] += b[i] over n4 bytes.
  (func $add_into (param $ap i32) (param $bp i32) (param $n4 i32)
    (local $i i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n4)))
        (v128.store (i32.add (local.get $ap) (local.get $i))
          (f32x4.add (v128.load (i32.add (local.get $ap) (local.get $i))) (v128.load (i32.add (local.get $bp) (local.get $i)))))
        (local.set $i (i32.add (local.get $i) (i32.const 16)))
        (br $next))))

  ;; Gemma RMSNorm of rows [r0, r1) of n values: out = x / sqrt(mean(x²) + eps) · (1 + w).
  (func (export "rms_norm") (param $out i32) (param $x i32) (param $w i32) (param $r0 i32) (param $r1 i32) (param $n i32) (param $eps f32)
    (local $r i32) (local $n4 i32)
    (local.set $n4 (i32.shl (local.get $n) (i32.const 2)))
    (local.set $r (local.get $r0))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $r) (local.get $r1)))
        (call $norm_row (i32.add (local.get $out) (i32.mul (local.get $r) (local.get $n4)))
          (i32.add (local.get $x) (i32.mul (local.get $r) (local.get $n4))) (local.get $w) (local.get $n4) (local.get $eps))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $next))))

  ;; res += x, then out = RMSNorm(res), rows [r0, r1) of n values.
  (func (export "add_rms_norm") (param $out i32) (param $res i32) (param $x i32) (param $w i32) (param $r0 i32) (param $r1 i32) (param $n i32) (param $eps f32)
    (local $r i32) (local $n4 i32) (local $off i32)
    (local.set $n4 (i32.shl (local.get $n) (i32.const 2)))
    (local.set $r (local.get $r0))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $r) (local.get $r1)))
        (local.set $off (i32.mul (local.get $r) (local.get $n4)))
        (call $add_into (i32.add (local.get $res) (local.get $off)) (i32.add (local.get $x) (local.get $off)) (local.get $n4))
        (call $norm_row (i32.add (local.get $out) (local.get $off)) (i32.add (local.get $res) (local.get $off))
          (local.get $w) (local.get $n4) (local.get $eps))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $next))))

  ;; out = a + b over rows [r0, r1) of n values.
  (func (export "add") (param $out i32) (param $a i32) (param $b i32) (param $r0 i32) (param $r1 i32) (param $n i32)
    (local $i i32) (local $end i32)
    (local.set $i (i32.mul (local.get $r0) (i32.shl (local.get $n) (i32.const 2))))
    (local.set $end (i32.mul (local.get $r1) (i32.shl (local.get $n) (i32.const 2))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $end)))
        (v128.store (i32.add (local.get $out) (local.get $i))
          (f32x4.add (v128.load (i32.add (local.get $a) (local.get $i))) (v128.load (i32.add (local.get $b) (local.get $i)))))
        (local.set $i (i32.add (local.get $i) (i32.const 16)))
        (br $next))))

  ;; SwiGLU-OAI of rows [r0, r1): gu [M, 2I] -> out [M, I]; g = min(gate, L), u = clamp(up, -L, L),
  ;; out = g·σ(α·g)·(u + 1), σ(z) from e = e^(-|z|) (never overflows): 1/(1+e) for z >= 0, e/(1+e) below.
  (func (export "swiglu") (param $out i32) (param $gu i32) (param $r0 i32) (param $r1 i32) (param $I i32) (param $alpha f32) (param $limit f32)
    (local $r i32) (local $i i32) (local $I4 i32) (local $gp i32) (local $op i32)
    (local $g v128) (local $u v128) (local $z v128) (local $e v128) (local $s v128) (local $L v128)
    (local.set $I4 (i32.shl (local.get $I) (i32.const 2)))
    (local.set $L (f32x4.splat (local.get $limit)))
    (local.set $r (local.get $r0))
    (block $rows_done
      (loop $row
        (br_if $rows_done (i32.ge_u (local.get $r) (local.get $r1)))
        (local.set $gp (i32.add (local.get $gu) (i32.mul (local.get $r) (i32.shl (local.get $I4) (i32.const 1)))))
        (local.set $op (i32.add (local.get $out) (i32.mul (local.get $r) (local.get $I4))))
        (local.set $i (i32.const 0))
        (block $done
          (loop $next
            (br_if $done (i32.ge_u (local.get $i) (local.get $I4)))
            (local.set $g (f32x4.min (v128.load (i32.add (local.get $gp) (local.get $i))) (local.get $L)))
            (local.set $u (f32x4.max (f32x4.min (v128.load (i32.add (i32.add (local.get $gp) (local.get $I4)) (local.get $i))) (local.get $L))
                                     (f32x4.neg (local.get $L))))
            (local.set $z (f32x4.mul (local.get $g) (f32x4.splat (local.get $alpha))))
            (local.set $e (call $exp4 (f32x4.neg (f32x4.abs (local.get $z)))))
            (local.set $s (f32x4.div
              (v128.bitselect (v128.const f32x4 1 1 1 1) (local.get $e) (f32x4.ge (local.get $z) (v128.const f32x4 0 0 0 0)))
              (f32x4.add (v128.const f32x4 1 1 1 1) (local.get $e))))
            (v128.store (i32.add (local.get $op) (local.get $i))
              (f32x4.mul (f32x4.mul (local.get $g) (local.get $s)) (f32x4.add (local.get $u) (v128.const f32x4 1 1 1 1))))
            (local.set $i (i32.add (local.get $i) (i32.const 16)))
            (br $next)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $row))))
;; MoE gather: dst row i = src row rows[i] for i in [0, n); rows i32 [n], rows of n4 bytes.
  (func (export "gather_rows") (param $dst i32) (param $src i32) (param $rows i32) (param $n i32) (param $n4 i32)
    (local $i i32) (local $j i32) (local $sp i32) (local $dp i32)
    (local.set $dp (local.get $dst))
    (block $rows_done
      (loop $row
        (br_if $rows_done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $sp (i32.add (local.get $src) (i32.mul (local.get $n4)
          (i32.load (i32.add (local.get $rows) (i32.shl (local.get $i) (i32.const 2)))))))
        (local.set $j (i32.const 0))
        (block $done
          (loop $next
            (br_if $done (i32.ge_u (local.get $j) (local.get $n4)))
            (v128.store (i32.add (local.get $dp) (local.get $j)) (v128.load (i32.add (local.get $sp) (local.get $j))))
            (local.set $j (i32.add (local.get $j) (i32.const 16)))
            (br $next)))
        (local.set $dp (i32.add (local.get $dp) (local.get $n4)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $row))))

  ;; MoE combine: out row rows[i] += w[i] · y row i, for i = 0, 1, .. n-1 in that order (entries
  ;; of one token keep their order). Each update is the JS reference's arithmetic exactly: the
  ;; product and the sum in float64 (f32·f32 is exact there), rounded once to float32. Two
  ;; lanes at a time; rows of n4 bytes (a multiple of 8).
  (func (export "scatter_add") (param $out i32) (param $y i32) (param $rows i32) (param $w i32) (param $n i32) (param $n4 i32)
    (local $i i32) (local $j i32) (local $op i32) (local $yp i32) (local $wv v128)
    (local.set $yp (local.get $y))
    (block $rows_done
      (loop $row
        (br_if $rows_done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $op (i32.add (local.get $out) (i32.mul (local.get $n4)
          (i32.load (i32.add (local.get $rows) (i32.shl (local.get $i) (i32.const 2)))))))
        (local.set $wv (f64x2.splat (f64.promote_f32 (f32.load (i32.add (local.get $w) (i32.shl (local.get $i) (i32.const 2)))))))
        (local.set $j (i32.const 0))
        (block $done
          (loop $next
            (br_if $done (i32.ge_u (local.get $j) (local.get $n4)))
            (v128.store64_lane 0 (i32.add (local.get $op) (local.get $j))
              (f32x4.demote_f64x2_zero (f64x2.add
                (f64x2.promote_low_f32x4 (v128.load64_zero (i32.add (local.get $op) (local.get $j))))
                (f64x2.mul (local.get $wv) (f64x2.promote_low_f32x4 (v128.load64_zero (i32.add (local.get $yp) (local.get $j))))))))
            (local.set $j (i32.add (local.get $j) (i32.const 8)))
            (br $next)))
        (local.set $yp (i32.add (local.get $yp) (local.get $n4)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $row))))
;; KV cache write: dst row rows[i] = src row i for i in [0, n); rows of n4 bytes.
  (func (export "scatter_rows") (param $dst i32) (param $src i32) (param $rows i32) (param $n i32) (param $n4 i32)
    (local $i i32) (local $j i32) (local $sp i32) (local $dp i32)
    (local.set $sp (local.get $src))
    (block $rows_done
      (loop $row
        (br_if $rows_done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $dp (i32.add (local.get $dst) (i32.mul (local.get $n4)
          (i32.load (i32.add (local.get $rows) (i32.shl (local.get $i) (i32.const 2)))))))
        (local.set $j (i32.const 0))
        (block $done
          (loop $next
            (br_if $done (i32.ge_u (local.get $j) (local.get $n4)))
            (v128.store (i32.add (local.get $dp) (local.get $j)) (v128.load (i32.add (local.get $sp) (local.get $j))))
            (local.set $j (i32.add (local.get $j) (i32.const 16)))
            (br $next)))
        (local.set $sp (i32.add (local.get $sp) (local.get $n4)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $row))))
;; n4 bytes from src to dst (n4 a multiple of 16).
  (func $copy (param $dst i32) (param $src i32) (param $n4 i32)
    (local $j i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (local.get $n4)))
        (v128.store (i32.add (local.get $dst) (local.get $j)) (v128.load (i32.add (local.get $src) (local.get $j))))
        (local.set $j (i32.add (local.get $j) (i32.const 16)))
        (br $next))))

  ;; Partial NeoX RoPE of one head at x, in place: for i < half, (a, b) = (x[i], x[i + half])
  ;; becomes (a·cos[i] − b·sin[i], b·cos[i] + a·sin[i]) with cos, sin float64 [half]: computed in
  ;; float64 and rounded once to float32, the arithmetic of ops/rope.ts's ropeNeox exactly. Two
  ;; i at a time (half even).
  (func $rope_head (param $x i32) (param $cos i32) (param $sin i32) (param $half i32)
    (local $i i32) (local $hb i32) (local $a v128) (local $b v128) (local $c v128) (local $s v128)
    (local.set $hb (i32.shl (local.get $half) (i32.const 2)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $hb)))
        (local.set $a (f64x2.promote_low_f32x4 (v128.load64_zero (i32.add (local.get $x) (local.get $i)))))
        (local.set $b (f64x2.promote_low_f32x4 (v128.load64_zero (i32.add (i32.add (local.get $x) (local.get $hb)) (local.get $i)))))
        (local.set $c (v128.load (i32.add (local.get $cos) (i32.shl (local.get $i) (i32.const 1)))))
        (local.set $s (v128.load (i32.add (local.get $sin) (i32.shl (local.get $i) (i32.const 1)))))
        (v128.store64_lane 0 (i32.add (local.get $x) (local.get $i))
          (f32x4.demote_f64x2_zero (f64x2.sub (f64x2.mul (local.get $a) (local.get $c)) (f64x2.mul (local.get $b) (local.get $s)))))
        (v128.store64_lane 0 (i32.add (i32.add (local.get $x) (local.get $hb)) (local.get $i))
          (f32x4.demote_f64x2_zero (f64x2.add (f64x2.mul (local.get $b) (local.get $c)) (f64x2.mul (local.get $a) (local.get $s)))))
        (local.set $i (i32.add (local.get $i) (i32.const 8)))
        (br $next))))

  ;; Each head of a token's row at x (heads of dh4 bytes), in place: Gemma RMSNorm with w, then
  ;; RoPE with the token's cos, sin.
  (func $norm_rope_heads (param $x i32) (param $heads i32) (param $w i32) (param $dh4 i32) (param $eps f32)
    (param $cos i32) (param $sin i32) (param $half i32)
    (local $h i32) (local $p i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $h) (local.get $heads)))
        (local.set $p (i32.add (local.get $x) (i32.mul (local.get $h) (local.get $dh4))))
        (call $norm_row (local.get $p) (local.get $p) (local.get $w) (local.get $dh4) (local.get $eps))
        (call $rope_head (local.get $p) (local.get $cos) (local.get $sin) (local.get $half))
        (local.set $h (i32.add (local.get $h) (i32.const 1)))
        (br $next))))

  ;; Attention's q/k norms, RoPE and cache writes for tokens [t0, t1): q [T, hq·dh] and k
  ;; [T, hk·dh] in place (per-head RMSNorm with qw / kw, then RoPE of the first 2·half dims from
  ;; cos, sin float64 [T, half]), then k row t (and v row t, when v is not 0) copied to cache row
  ;; slots[t] of kc (vc). Every value is what rms_norm, ropeNeox and scatter_rows give in turn.
  (func (export "norm_rope_cache") (param $q i32) (param $k i32) (param $v i32) (param $qw i32) (param $kw i32)
    (param $kc i32) (param $vc i32) (param $slots i32) (param $cos i32) (param $sin i32) (param $t0 i32) (param $t1 i32)
    (param $hq i32) (param $hk i32) (param $dh i32) (param $half i32) (param $eps f32)
    (local $t i32) (local $dh4 i32) (local $kb i32) (local $cs i32) (local $slot i32)
    (local.set $dh4 (i32.shl (local.get $dh) (i32.const 2)))
    (local.set $kb (i32.mul (local.get $hk) (local.get $dh4)))
    (local.set $t (local.get $t0))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $t) (local.get $t1)))
        (local.set $cs (i32.mul (local.get $t) (i32.shl (local.get $half) (i32.const 3))))
        (call $norm_rope_heads (i32.add (local.get $q) (i32.mul (local.get $t) (i32.mul (local.get $hq) (local.get $dh4))))
          (local.get $hq) (local.get $qw) (local.get $dh4) (local.get $eps)
          (i32.add (local.get $cos) (local.get $cs)) (i32.add (local.get $sin) (local.get $cs)) (local.get $half))
        (call $norm_rope_heads (i32.add (local.get $k) (i32.mul (local.get $t) (local.get $kb)))
          (local.get $hk) (local.get $kw) (local.get $dh4) (local.get $eps)
          (i32.add (local.get $cos) (local.get $cs)) (i32.add (local.get $sin) (local.get $cs)) (local.get $half))
        (local.set $slot (i32.mul (local.get $kb) (i32.load (i32.add (local.get $slots) (i32.shl (local.get $t) (i32.const 2))))))
        (call $copy (i32.add (local.get $kc) (local.get $slot)) (i32.add (local.get $k) (i32.mul (local.get $t) (local.get $kb))) (local.get $kb))
        (if (local.get $v)
          (then (call $copy (i32.add (local.get $vc) (local.get $slot)) (i32.add (local.get $v) (i32.mul (local.get $t) (local.get $kb))) (local.get $kb))))
        (local.set $t (i32.add (local.get $t) (i32.const 1)))
        (br $next))))

  ;; n bytes at p set to zero: memory.fill is a memset, where TypedArray.fill(0) on the shared
  ;; memory takes V8's element-by-element path (measured here: 196 KB in 43 µs against 2 µs).
  (func (export "zero") (param $p i32) (param $n i32)
    (memory.fill (local.get $p) (i32.const 0) (local.get $n)))
)
