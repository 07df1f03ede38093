;; out[M, N] = x[M, K] · w[N, K]^T in float32 with 128-bit SIMD (f32x4).
;; Pointers are byte offsets into the shared memory; K must be a multiple of 4.
;; Every output element is computed the same way whatever the tile it falls in: four lane
;; partial sums over k ≡ 0,1,2,3 (mod 4), then (l0 + l1) + (l2 + l3). So a row's result does
;; not depend on M or on which other rows share the step (batch invariance).
;; Loop nest: panels of P rows of w (kept in cache) × pairs of x rows × 4 columns (2×4 tile,
;; 8 accumulators + 6 operands = 14 vector registers). Tested by src/backend/cpu/wasm/wasm-kernels.test.ts.
(module
  (import "env" "memory" (memory 1 65536 shared))

  (func $hsum (param $v v128) (result f32)
    (f32.add
      (f32.add (f32x4.extract_lane 0 (local.get $v)) (f32x4.extract_lane 1 (local.get $v)))
      (f32.add (f32x4.extract_lane 2 (local.get $v)) (f32x4.extract_lane 3 (local.get $v)))))

  ;; 1 row × 1 column: out[op] = x row · w row.
  (func $blk11 (param $op i32) (param $xp i32) (param $wp i32) (param $K4 i32)
    (local $k i32) (local $c v128)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $k) (local.get $K4)))
        (local.set $c (f32x4.add (local.get $c)
          (f32x4.mul (v128.load (i32.add (local.get $xp) (local.get $k)))
                     (v128.load (i32.add (local.get $wp) (local.get $k))))))
        (local.set $k (i32.add (local.get $k) (i32.const 16)))
        (br $next)))
    (f32.store (local.get $op) (call $hsum (local.get $c))))

  ;; 1 row × 4 columns.
  (func $blk14 (param $op i32) (param $xp i32) (param $wp i32) (param $K4 i32)
    (local $k i32) (local $xv v128) (local $w1 i32) (local $w2 i32) (local $w3 i32)
    (local $c0 v128) (local $c1 v128) (local $c2 v128) (local $c3 v128)
    (local.set $w1 (i32.add (local.get $wp) (local.get $K4)))
    (local.set $w2 (i32.add (local.get $w1) (local.get $K4)))
    (local.set $w3 (i32.add (local.get $w2) (local.get $K4)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $k) (local.get $K4)))
        (local.set $xv (v128.load (i32.add (local.get $xp) (local.get $k))))
        (local.set $c0 (f32x4.add (local.get $c0) (f32x4.mul (local.get $xv) (v128.load (i32.add (local.get $wp) (local.get $k))))))
        (local.set $c1 (f32x4.add (local.get $c1) (f32x4.mul (local.get $xv) (v128.load (i32.add (local.get $w1) (local.get $k))))))
        (local.set $c2 (f32x4.add (local.get $c2) (f32x4.mul (local.get $xv) (v128.load (i32.add (local.get $w2) (local.get $k))))))
        (local.set $c3 (f32x4.add (local.get $c3) (f32x4.mul (local.get $xv) (v128.load (i32.add (local.get $w3) (local.get $k))))))
        (local.set $k (i32.add (local.get $k) (i32.const 16)))
        (br $next)))
    (f32.store offset=0 (local.get $op) (call $hsum (local.get $c0)))
    (f32.store offset=4 (local.get $op) (call $hsum (local.get $c1)))
    (f32.store offset=8 (local.get $op) (call $hsum (local.get $c2)))
    (f32.store offset=12 (local.get $op) (call $hsum (local.get $c3))))

  ;; 2 rows × 4 columns; $N4 is the output row stride in bytes.
  (func $blk24 (param $op i32) (param $xp i32) (param $wp i32) (param $K4 i32) (param $N4 i32)
    (local $k i32) (local $x1p i32) (local $w1 i32) (local $w2 i32) (local $w3 i32) (local $op1 i32)
    (local $a v128) (local $b v128) (local $v0 v128) (local $v1 v128) (local $v2 v128) (local $v3 v128)
    (local $c0 v128) (local $c1 v128) (local $c2 v128) (local $c3 v128)
    (local $d0 v128) (local $d1 v128) (local $d2 v128) (local $d3 v128)
    (local.set $x1p (i32.add (local.get $xp) (local.get $K4)))
    (local.set $w1 (i32.add (local.get $wp) (local.get $K4)))
    (local.set $w2 (i32.add (local.get $w1) (local.get $K4)))
    (local.set $w3 (i32.add (local.get $w2) (local.get $K4)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $k) (local.get $K4)))
        (local.set $a (v128.load (i32.add (local.get $xp) (local.get $k))))
        (local.set $b (v128.load (i32.add (local.get $x1p) (local.get $k))))
        (local.set $v0 (v128.load (i32.add (local.get $wp) (local.get $k))))
        (local.set $v1 (v128.load (i32.add (local.get $w1) (local.get $k))))
        (local.set $v2 (v128.load (i32.add (local.get $w2) (local.get $k))))
        (local.set $v3 (v128.load (i32.add (local.get $w3) (local.get $k))))
        (local.set $c0 (f32x4.add (local.get $c0) (f32x4.mul (local.get $a) (local.get $v0))))
        (local.set $c1 (f32x4.add (local.get $c1) (f32x4.mul (local.get $a) (local.get $v1))))
        (local.set $c2 (f32x4.add (local.get $c2) (f32x4.mul (local.get $a) (local.get $v2))))
        (local.set $c3 (f32x4.add (local.get $c3) (f32x4.mul (local.get $a) (local.get $v3))))
        (local.set $d0 (f32x4.add (local.get $d0) (f32x4.mul (local.get $b) (local.get $v0))))
        (local.set $d1 (f32x4.add (local.get $d1) (f32x4.mul (local.get $b) (local.get $v1))))
        (local.set $d2 (f32x4.add (local.get $d2) (f32x4.mul (local.get $b) (local.get $v2))))
        (local.set $d3 (f32x4.add (local.get $d3) (f32x4.mul (local.get $b) (local.get $v3))))
        (local.set $k (i32.add (local.get $k) (i32.const 16)))
        (br $next)))
    (local.set $op1 (i32.add (local.get $op) (local.get $N4)))
    (f32.store offset=0 (local.get $op) (call $hsum (local.get $c0)))
    (f32.store offset=4 (local.get $op) (call $hsum (local.get $c1)))
    (f32.store offset=8 (local.get $op) (call $hsum (local.get $c2)))
    (f32.store offset=12 (local.get $op) (call $hsum (local.get $c3)))
    (f32.store offset=0 (local.get $op1) (call $hsum (local.get $d0)))
    (f32.store offset=4 (local.get $op1) (call $hsum (local.get $d1)))
    (f32.store offset=8 (local.get $op1) (call $hsum (local.get $d2)))
    (f32.store offset=12 (local.get $op1) (call $hsum (local.get $d3))))

  ;; One output row i over columns [j0, j1): 1×4 tiles then single columns.
  (func $row (param $o i32) (param $x i32) (param $w i32) (param $i i32) (param $j0 i32) (param $j1 i32) (param $K4 i32) (param $N4 i32)
    (local $j i32) (local $op i32) (local $xp i32)
    (local.set $op (i32.add (i32.add (local.get $o) (i32.mul (local.get $i) (local.get $N4))) (i32.shl (local.get $j0) (i32.const 2))))
    (local.set $xp (i32.add (local.get $x) (i32.mul (local.get $i) (local.get $K4))))
    (local.set $j (local.get $j0))
    (block $done4
      (loop $next4
        (br_if $done4 (i32.gt_u (i32.add (local.get $j) (i32.const 4)) (local.get $j1)))
        (call $blk14 (local.get $op) (local.get $xp) (i32.add (local.get $w) (i32.mul (local.get $j) (local.get $K4))) (local.get $K4))
        (local.set $op (i32.add (local.get $op) (i32.const 16)))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $next4)))
    (block $done1
      (loop $next1
        (br_if $done1 (i32.ge_u (local.get $j) (local.get $j1)))
        (call $blk11 (local.get $op) (local.get $xp) (i32.add (local.get $w) (i32.mul (local.get $j) (local.get $K4))) (local.get $K4))
        (local.set $op (i32.add (local.get $op) (i32.const 4)))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $next1))))

  ;; Output rows i and i+1 over columns [j0, j1): 2×4 tiles; leftover columns row by row.
  (func $rowpair (param $o i32) (param $x i32) (param $w i32) (param $i i32) (param $j0 i32) (param $j1 i32) (param $K4 i32) (param $N4 i32)
    (local $j i32) (local $op i32) (local $xp i32)
    (local.set $op (i32.add (i32.add (local.get $o) (i32.mul (local.get $i) (local.get $N4))) (i32.shl (local.get $j0) (i32.const 2))))
    (local.set $xp (i32.add (local.get $x) (i32.mul (local.get $i) (local.get $K4))))
    (local.set $j (local.get $j0))
    (block $done4
      (loop $next4
        (br_if $done4 (i32.gt_u (i32.add (local.get $j) (i32.const 4)) (local.get $j1)))
        (call $blk24 (local.get $op) (local.get $xp) (i32.add (local.get $w) (i32.mul (local.get $j) (local.get $K4))) (local.get $K4) (local.get $N4))
        (local.set $op (i32.add (local.get $op) (i32.const 16)))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $next4)))
    (if (i32.lt_u (local.get $j) (local.get $j1))
      (then
        (call $row (local.get $o) (local.get $x) (local.get $w) (local.get $i) (local.get $j) (local.get $j1) (local.get $K4) (local.get $N4))
        (call $row (local.get $o) (local.get $x) (local.get $w) (i32.add (local.get $i) (i32.const 1)) (local.get $j) (local.get $j1) (local.get $K4) (local.get $N4)))))

  ;; $ldo: the output row stride in elements (N for a whole matmul; more for a column slice).
  (func (export "matmul") (param $o i32) (param $x i32) (param $w i32) (param $M i32) (param $N i32) (param $K i32) (param $P i32) (param $ldo i32)
    (local $K4 i32) (local $N4 i32) (local $j0 i32) (local $j1 i32) (local $i i32)
    (local.set $K4 (i32.shl (local.get $K) (i32.const 2)))
    (local.set $N4 (i32.shl (local.get $ldo) (i32.const 2)))
    (block $panels_done
      (loop $panel
        (br_if $panels_done (i32.ge_u (local.get $j0) (local.get $N)))
        (local.set $j1 (select (i32.add (local.get $j0) (local.get $P)) (local.get $N)
          (i32.lt_u (i32.add (local.get $j0) (local.get $P)) (local.get $N))))
        (local.set $i (i32.const 0))
        (block $pairs_done
          (loop $pair
            (br_if $pairs_done (i32.gt_u (i32.add (local.get $i) (i32.const 2)) (local.get $M)))
            (call $rowpair (local.get $o) (local.get $x) (local.get $w) (local.get $i) (local.get $j0) (local.get $j1) (local.get $K4) (local.get $N4))
            (local.set $i (i32.add (local.get $i) (i32.const 2)))
            (br $pair)))
        (if (i32.lt_u (local.get $i) (local.get $M))
          (then (call $row (local.get $o) (local.get $x) (local.get $w) (local.get $i) (local.get $j0) (local.get $j1) (local.get $K4) (local.get $N4))))
        (local.set $j0 (local.get $j1))
        (br $panel))))
)
