;; out[M, N] = x[M, K] · w[N, K]^T in float32 with 128-bit SIMD, w packed in panels of 8
;; columns: element (n, k) at (floor(n/8)·K + k)·8 + n mod 8 (so the 8 weights of one k are 32
;; contiguous bytes; the packed-bf16 variant, derived by scripts/assemble-wat.mjs, reads them as
;; 16 bytes of bf16, interleaved c0 c4 c1 c5 c2 c6 c3 c7, and widens them exactly with one
;; shift, and two shifts that clear the low halves, or in the 1-row tiles one AND with a mask).
;; N must be a multiple of 8.
;; Register-blocked: 5 rows × 8 columns per tile (10 accumulators, 2 weight vectors, 1 broadcast
;; x value: 13 of the 16 vector registers V8 uses on x64; 6 rows spill in the bf16 variant and
;; halve its speed), 4×8 tiles for the rows the 5-row tiles leave, 1×8/16/32 for the last
;; M mod 4; a multiply and an add, or one FMA in the relaxed-SIMD variant. Every output
;; element is the same sequential float32 sum over k, x[k]·w[k] rounded then added in k order,
;; whatever tile or thread computes it (1×8, 1×16, 1×32, 4×8 and 5×8 tiles all do that):
;; results do not depend on M, on the row's neighbours or on the thread count. Tested by
;; src/backend/cpu/wasm/wasm-packed.test.ts.
(module
  (import "env" "memory" (memory 1 65536 shared))
  ;; the xor of the lines $touch loaded: written so the loads are kept, never read
  (global $sink (mut i32) (i32.const 0))

  ;; One i32 load of every 64-byte line of [p, end): a panel's weights, before its tiles read
  ;; them. Weights come from L3 at decode (a step reads each once); the tiles' loads, a few
  ;; between many multiply-adds, leave few misses in flight, this loop many.
  (func $touch (param $p i32) (param $end i32)
    (local $acc i32)
    (block $done
      (loop $line
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $acc (i32.xor (local.get $acc) (i32.load (local.get $p))))
        (local.set $p (i32.add (local.get $p) (i32.const 64)))
        (br $line)))
    (global.set $sink (i32.xor (global.get $sink) (local.get $acc))))

  ;; 4 rows × 8 columns (one panel block): 8 accumulators, the block's 8 weights of each k
  ;; in two vectors, x[i][k] broadcast. $op: out[i][j], $xp: x row i, $wp: the block, $ws:
  ;; weight bytes per k (32 f32, 16 bf16).
  (func $t48 (param $op i32) (param $xp i32) (param $wp i32) (param $K4 i32) (param $N4 i32) (param $ws i32)
    (local $x1 i32) (local $x2 i32) (local $x3 i32) (local $k i32) (local $wk i32)
    (local $lo v128) (local $hi v128) (local $a v128)
    (local $c00 v128) (local $c01 v128) (local $c10 v128) (local $c11 v128)
    (local $c20 v128) (local $c21 v128) (local $c30 v128) (local $c31 v128)
    (local.set $x1 (i32.add (local.get $xp) (local.get $K4)))
    (local.set $x2 (i32.add (local.get $x1) (local.get $K4)))
    (local.set $x3 (i32.add (local.get $x2) (local.get $K4)))
    (local.set $wk (local.get $wp))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $k) (local.get $K4)))
        (local.set $lo (v128.load (local.get $wk))) ;; W lo
        (local.set $hi (v128.load offset=16 (local.get $wk))) ;; W hi
        (local.set $a (v128.load32_splat (i32.add (local.get $xp) (local.get $k))))
        (local.set $c00 (f32x4.add (local.get $c00) (f32x4.mul (local.get $a) (local.get $lo))))
        (local.set $c01 (f32x4.add (local.get $c01) (f32x4.mul (local.get $a) (local.get $hi))))
        (local.set $a (v128.load32_splat (i32.add (local.get $x1) (local.get $k))))
        (local.set $c10 (f32x4.add (local.get $c10) (f32x4.mul (local.get $a) (local.get $lo))))
        (local.set $c11 (f32x4.add (local.get $c11) (f32x4.mul (local.get $a) (local.get $hi))))
        (local.set $a (v128.load32_splat (i32.add (local.get $x2) (local.get $k))))
        (local.set $c20 (f32x4.add (local.get $c20) (f32x4.mul (local.get $a) (local.get $lo))))
        (local.set $c21 (f32x4.add (local.get $c21) (f32x4.mul (local.get $a) (local.get $hi))))
        (local.set $a (v128.load32_splat (i32.add (local.get $x3) (local.get $k))))
        (local.set $c30 (f32x4.add (local.get $c30) (f32x4.mul (local.get $a) (local.get $lo))))
        (local.set $c31 (f32x4.add (local.get $c31) (f32x4.mul (local.get $a) (local.get $hi))))
        (local.set $k (i32.add (local.get $k) (i32.const 4)))
        (local.set $wk (i32.add (local.get $wk) (local.get $ws)))
        (br $next)))
    (v128.store (local.get $op) (local.get $c00))
    (v128.store offset=16 (local.get $op) (local.get $c01))
    (local.set $op (i32.add (local.get $op) (local.get $N4)))
    (v128.store (local.get $op) (local.get $c10))
    (v128.store offset=16 (local.get $op) (local.get $c11))
    (local.set $op (i32.add (local.get $op) (local.get $N4)))
    (v128.store (local.get $op) (local.get $c20))
    (v128.store offset=16 (local.get $op) (local.get $c21))
    (local.set $op (i32.add (local.get $op) (local.get $N4)))
    (v128.store (local.get $op) (local.get $c30))
    (v128.store offset=16 (local.get $op) (local.get $c31)))

  ;; 5 rows × 8 columns: 10 accumulators (more independent chains than the FMA latency
  ;; needs at two FMAs a cycle), the block's 8 weights of each k in two vectors, x[i][k] broadcast.
  (func $t58 (param $op i32) (param $xp i32) (param $wp i32) (param $K4 i32) (param $N4 i32) (param $ws i32)
    (local $x1 i32) (local $x2 i32) (local $x3 i32) (local $x4 i32) (local $k i32) (local $wk i32)
    (local $lo v128) (local $hi v128) (local $a v128)
    (local $c00 v128) (local $c01 v128) (local $c10 v128) (local $c11 v128) (local $c20 v128) (local $c21 v128) (local $c30 v128) (local $c31 v128) (local $c40 v128) (local $c41 v128)
    (local.set $x1 (i32.add (local.get $xp) (local.get $K4)))
    (local.set $x2 (i32.add (local.get $x1) (local.get $K4)))
    (local.set $x3 (i32.add (local.get $x2) (local.get $K4)))
    (local.set $x4 (i32.add (local.get $x3) (local.get $K4)))
    (local.set $wk (local.get $wp))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $k) (local.get $K4)))
        (local.set $lo (v128.load (local.get $wk))) ;; W lo
        (local.set $hi (v128.load offset=16 (local.get $wk))) ;; W hi
        (local.set $a (v128.load32_splat (i32.add (local.get $xp) (local.get $k))))
        (local.set $c00 (f32x4.add (local.get $c00) (f32x4.mul (local.get $a) (local.get $lo))))
        (local.set $c01 (f32x4.add (local.get $c01) (f32x4.mul (local.get $a) (local.get $hi))))
        (local.set $a (v128.load32_splat (i32.add (local.get $x1) (local.get $k))))
        (local.set $c10 (f32x4.add (local.get $c10) (f32x4.mul (local.get $a) (local.get $lo))))
        (local.set $c11 (f32x4.add (local.get $c11) (f32x4.mul (local.get $a) (local.get $hi))))
        (local.set $a (v128.load32_splat (i32.add (local.get $x2) (local.get $k))))
        (local.set $c20 (f32x4.add (local.get $c20) (f32x4.mul (local.get $a) (local.get $lo))))
        (local.set $c21 (f32x4.add (local.get $c21) (f32x4.mul (local.get $a) (local.get $hi))))
        (local.set $a (v128.load32_splat (i32.add (local.get $x3) (local.get $k))))
        (local.set $c30 (f32x4.add (local.get $c30) (f32x4.mul (local.get $a) (local.get $lo))))
        (local.set $c31 (f32x4.add (local.get $c31) (f32x4.mul (local.get $a) (local.get $hi))))
        (local.set $a (v128.load32_splat (i32.add (local.get $x4) (local.get $k))))
        (local.set $c40 (f32x4.add (local.get $c40) (f32x4.mul (local.get $a) (local.get $lo))))
        (local.set $c41 (f32x4.add (local.get $c41) (f32x4.mul (local.get $a) (local.get $hi))))
        (local.set $k (i32.add (local.get $k) (i32.const 4)))
        (local.set $wk (i32.add (local.get $wk) (local.get $ws)))
        (br $next)))
    (v128.store (local.get $op) (local.get $c00))
    (v128.store offset=16 (local.get $op) (local.get $c01))
    (local.set $op (i32.add (local.get $op) (local.get $N4)))
    (v128.store (local.get $op) (local.get $c10))
    (v128.store offset=16 (local.get $op) (local.get $c11))
    (local.set $op (i32.add (local.get $op) (local.get $N4)))
    (v128.store (local.get $op) (local.get $c20))
    (v128.store offset=16 (local.get $op) (local.get $c21))
    (local.set $op (i32.add (local.get $op) (local.get $N4)))
    (v128.store (local.get $op) (local.get $c30))
    (v128.store offset=16 (local.get $op) (local.get $c31))
    (local.set $op (i32.add (local.get $op) (local.get $N4)))
    (v128.store (local.get $op) (local.get $c40))
    (v128.store offset=16 (local.get $op) (local.get $c41)))

  ;; 1 row × 8 columns.
  (func $t18 (param $op i32) (param $xp i32) (param $wp i32) (param $K4 i32) (param $ws i32)
    (local $k i32) (local $wk i32) (local $lo v128) (local $hi v128) (local $a v128)
    (local $c0 v128) (local $c1 v128)
    (local.set $wk (local.get $wp))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $k) (local.get $K4)))
        (local.set $lo (v128.load (local.get $wk))) ;; W lo
        (local.set $hi (v128.load offset=16 (local.get $wk))) ;; W hi
        (local.set $a (v128.load32_splat (i32.add (local.get $xp) (local.get $k))))
        (local.set $c0 (f32x4.add (local.get $c0) (f32x4.mul (local.get $a) (local.get $lo))))
        (local.set $c1 (f32x4.add (local.get $c1) (f32x4.mul (local.get $a) (local.get $hi))))
        (local.set $k (i32.add (local.get $k) (i32.const 4)))
        (local.set $wk (i32.add (local.get $wk) (local.get $ws)))
        (br $next)))
    (v128.store (local.get $op) (local.get $c0))
    (v128.store offset=16 (local.get $op) (local.get $c1)))

  ;; 1 row × 16 columns (two adjacent blocks, $KB bytes apart): 4 accumulator chains.
  (func $t116 (param $op i32) (param $xp i32) (param $wp i32) (param $K4 i32) (param $ws i32) (param $KB i32)
    (local $k i32) (local $wk i32) (local $wk2 i32) (local $lo v128) (local $hi v128) (local $lo2 v128) (local $hi2 v128) (local $a v128)
    (local $c0 v128) (local $c1 v128) (local $c2 v128) (local $c3 v128)
    (local.set $wk (local.get $wp))
    (local.set $wk2 (i32.add (local.get $wp) (local.get $KB)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $k) (local.get $K4)))
        (local.set $lo (v128.load (local.get $wk))) ;; W lo
        (local.set $hi (v128.load offset=16 (local.get $wk))) ;; W hi
        (local.set $lo2 (v128.load (local.get $wk2))) ;; W lo
        (local.set $hi2 (v128.load offset=16 (local.get $wk2))) ;; W hi
        (local.set $a (v128.load32_splat (i32.add (local.get $xp) (local.get $k))))
        (local.set $c0 (f32x4.add (local.get $c0) (f32x4.mul (local.get $a) (local.get $lo))))
        (local.set $c1 (f32x4.add (local.get $c1) (f32x4.mul (local.get $a) (local.get $hi))))
        (local.set $c2 (f32x4.add (local.get $c2) (f32x4.mul (local.get $a) (local.get $lo2))))
        (local.set $c3 (f32x4.add (local.get $c3) (f32x4.mul (local.get $a) (local.get $hi2))))
        (local.set $wk2 (i32.add (local.get $wk2) (local.get $ws)))
        (local.set $k (i32.add (local.get $k) (i32.const 4)))
        (local.set $wk (i32.add (local.get $wk) (local.get $ws)))
        (br $next)))
    (v128.store (local.get $op) (local.get $c0))
    (v128.store offset=16 (local.get $op) (local.get $c1))
    (v128.store offset=32 (local.get $op) (local.get $c2))
    (v128.store offset=48 (local.get $op) (local.get $c3)))

  ;; 1 row × 32 columns (four adjacent blocks, $KB bytes apart): 8 accumulator chains, so a
  ;; GEMV (M = 1) is not bound by the add latency of 4 chains.
  (func $t132 (param $op i32) (param $xp i32) (param $wp i32) (param $K4 i32) (param $ws i32) (param $KB i32)
    (local $k i32) (local $wk i32) (local $wk2 i32) (local $wk3 i32) (local $wk4 i32) (local $a v128)
    (local $lo v128) (local $hi v128) (local $lo2 v128) (local $hi2 v128) (local $lo3 v128) (local $hi3 v128) (local $lo4 v128) (local $hi4 v128)
    (local $c0 v128) (local $c1 v128) (local $c2 v128) (local $c3 v128) (local $c4 v128) (local $c5 v128) (local $c6 v128) (local $c7 v128)
    (local.set $wk (local.get $wp))
    (local.set $wk2 (i32.add (local.get $wp) (local.get $KB)))
    (local.set $wk3 (i32.add (local.get $wk2) (local.get $KB)))
    (local.set $wk4 (i32.add (local.get $wk3) (local.get $KB)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $k) (local.get $K4)))
        (local.set $a (v128.load32_splat (i32.add (local.get $xp) (local.get $k))))
        (local.set $lo (v128.load (local.get $wk))) ;; W lo
        (local.set $hi (v128.load offset=16 (local.get $wk))) ;; W hi
        (local.set $c0 (f32x4.add (local.get $c0) (f32x4.mul (local.get $a) (local.get $lo))))
        (local.set $c1 (f32x4.add (local.get $c1) (f32x4.mul (local.get $a) (local.get $hi))))
        (local.set $lo2 (v128.load (local.get $wk2))) ;; W lo
        (local.set $hi2 (v128.load offset=16 (local.get $wk2))) ;; W hi
        (local.set $c2 (f32x4.add (local.get $c2) (f32x4.mul (local.get $a) (local.get $lo2))))
        (local.set $c3 (f32x4.add (local.get $c3) (f32x4.mul (local.get $a) (local.get $hi2))))
        (local.set $lo3 (v128.load (local.get $wk3))) ;; W lo
        (local.set $hi3 (v128.load offset=16 (local.get $wk3))) ;; W hi
        (local.set $c4 (f32x4.add (local.get $c4) (f32x4.mul (local.get $a) (local.get $lo3))))
        (local.set $c5 (f32x4.add (local.get $c5) (f32x4.mul (local.get $a) (local.get $hi3))))
        (local.set $lo4 (v128.load (local.get $wk4))) ;; W lo
        (local.set $hi4 (v128.load offset=16 (local.get $wk4))) ;; W hi
        (local.set $c6 (f32x4.add (local.get $c6) (f32x4.mul (local.get $a) (local.get $lo4))))
        (local.set $c7 (f32x4.add (local.get $c7) (f32x4.mul (local.get $a) (local.get $hi4))))
        (local.set $k (i32.add (local.get $k) (i32.const 4)))
        (local.set $wk (i32.add (local.get $wk) (local.get $ws)))
        (local.set $wk2 (i32.add (local.get $wk2) (local.get $ws)))
        (local.set $wk3 (i32.add (local.get $wk3) (local.get $ws)))
        (local.set $wk4 (i32.add (local.get $wk4) (local.get $ws)))
        (br $next)))
    (v128.store (local.get $op) (local.get $c0))
    (v128.store offset=16 (local.get $op) (local.get $c1))
    (v128.store offset=32 (local.get $op) (local.get $c2))
    (v128.store offset=48 (local.get $op) (local.get $c3))
    (v128.store offset=64 (local.get $op) (local.get $c4))
    (v128.store offset=80 (local.get $op) (local.get $c5))
    (v128.store offset=96 (local.get $op) (local.get $c6))
    (v128.store offset=112 (local.get $op) (local.get $c7)))

  ;; Output row i over columns [j0, j1) (multiples of 8): 1×32 tiles, then 1×16, then 1×8.
  (func $row (param $o i32) (param $x i32) (param $w i32) (param $i i32) (param $j0 i32) (param $j1 i32) (param $K4 i32) (param $N4 i32) (param $KW i32) (param $ws i32)
    (local $j i32) (local $op i32) (local $xp i32)
    (local.set $op (i32.add (i32.add (local.get $o) (i32.mul (local.get $i) (local.get $N4))) (i32.shl (local.get $j0) (i32.const 2))))
    (local.set $xp (i32.add (local.get $x) (i32.mul (local.get $i) (local.get $K4))))
    (local.set $j (local.get $j0))
    (block $done32
      (loop $next32
        (br_if $done32 (i32.gt_u (i32.add (local.get $j) (i32.const 32)) (local.get $j1)))
        (call $t132 (local.get $op) (local.get $xp) (i32.add (local.get $w) (i32.mul (local.get $j) (local.get $KW)))
          (local.get $K4) (local.get $ws) (i32.shl (local.get $KW) (i32.const 3)))
        (local.set $op (i32.add (local.get $op) (i32.const 128)))
        (local.set $j (i32.add (local.get $j) (i32.const 32)))
        (br $next32)))
    (block $done16
      (loop $next16
        (br_if $done16 (i32.gt_u (i32.add (local.get $j) (i32.const 16)) (local.get $j1)))
        (call $t116 (local.get $op) (local.get $xp) (i32.add (local.get $w) (i32.mul (local.get $j) (local.get $KW)))
          (local.get $K4) (local.get $ws) (i32.shl (local.get $KW) (i32.const 3)))
        (local.set $op (i32.add (local.get $op) (i32.const 64)))
        (local.set $j (i32.add (local.get $j) (i32.const 16)))
        (br $next16)))
    (if (i32.lt_u (local.get $j) (local.get $j1))
      (then (call $t18 (local.get $op) (local.get $xp) (i32.add (local.get $w) (i32.mul (local.get $j) (local.get $KW)))
        (local.get $K4) (local.get $ws)))))

  ;; Rows [i, i + 4) over columns [j0, j1): 4×8 tiles.
  (func $rows4 (param $o i32) (param $x i32) (param $w i32) (param $i i32) (param $j0 i32) (param $j1 i32) (param $K4 i32) (param $N4 i32) (param $KW i32) (param $ws i32)
    (local $j i32) (local $op i32) (local $xp i32)
    (local.set $op (i32.add (i32.add (local.get $o) (i32.mul (local.get $i) (local.get $N4))) (i32.shl (local.get $j0) (i32.const 2))))
    (local.set $xp (i32.add (local.get $x) (i32.mul (local.get $i) (local.get $K4))))
    (local.set $j (local.get $j0))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (local.get $j1)))
        (call $t48 (local.get $op) (local.get $xp) (i32.add (local.get $w) (i32.mul (local.get $j) (local.get $KW)))
          (local.get $K4) (local.get $N4) (local.get $ws))
        (local.set $op (i32.add (local.get $op) (i32.const 32)))
        (local.set $j (i32.add (local.get $j) (i32.const 8)))
        (br $next))))

  ;; Rows [i, i + 5) over columns [j0, j1): 5×8 tiles.
  (func $rows5 (param $o i32) (param $x i32) (param $w i32) (param $i i32) (param $j0 i32) (param $j1 i32) (param $K4 i32) (param $N4 i32) (param $KW i32) (param $ws i32)
    (local $j i32) (local $op i32) (local $xp i32)
    (local.set $op (i32.add (i32.add (local.get $o) (i32.mul (local.get $i) (local.get $N4))) (i32.shl (local.get $j0) (i32.const 2))))
    (local.set $xp (i32.add (local.get $x) (i32.mul (local.get $i) (local.get $K4))))
    (local.set $j (local.get $j0))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (local.get $j1)))
        (call $t58 (local.get $op) (local.get $xp) (i32.add (local.get $w) (i32.mul (local.get $j) (local.get $KW)))
          (local.get $K4) (local.get $N4) (local.get $ws))
        (local.set $op (i32.add (local.get $op) (i32.const 32)))
        (local.set $j (i32.add (local.get $j) (i32.const 8)))
        (br $next))))

  ;; $P: columns per cache panel (a multiple of 8); $ldo: the output row stride in elements.
  ;; $w may point at any block (column j0 of the packed matrix starts j0·K elements in).
  (func (export "matmul_packed") (param $o i32) (param $x i32) (param $w i32) (param $M i32) (param $N i32) (param $K i32) (param $P i32) (param $ldo i32)
    (local $K4 i32) (local $N4 i32) (local $KW i32) (local $ws i32) (local $j0 i32) (local $j1 i32) (local $i i32) (local $M4 i32)
    (local.set $K4 (i32.shl (local.get $K) (i32.const 2)))
    (local.set $N4 (i32.shl (local.get $ldo) (i32.const 2)))
    (local.set $KW (local.get $K4)) ;; KW: weight bytes per column
    (local.set $ws (i32.const 32)) ;; WS: weight bytes per k of a block
    ;; $M4: the rows the 5-row tiles cover (from row 0): the most that leaves the 4-row tiles
    ;; a multiple of 4 (so only M mod 4 rows, if any, go to the 1-row tiles)
    (local.set $M4 (local.get $M))
    (block $m4
      (loop $fit
        (br_if $m4 (i32.lt_u (local.get $M4) (i32.const 5)))
        (br_if $m4 (i32.eqz (i32.rem_u (i32.rem_u (local.get $M4) (i32.const 5)) (i32.const 4))))
        (local.set $M4 (i32.sub (local.get $M4) (i32.const 4)))
        (br $fit)))
    (block $panels_done
      (loop $panel
        (br_if $panels_done (i32.ge_u (local.get $j0) (local.get $N)))
        (local.set $j1 (select (i32.add (local.get $j0) (local.get $P)) (local.get $N)
          (i32.lt_u (i32.add (local.get $j0) (local.get $P)) (local.get $N))))
        ;; from 4 rows (a GEMV's one pass over the weights streams; touching it costs a pass)
        (if (i32.ge_u (local.get $M) (i32.const 4))
          (then (call $touch (i32.add (local.get $w) (i32.mul (local.get $j0) (local.get $KW)))
            (i32.add (local.get $w) (i32.mul (local.get $j1) (local.get $KW))))))
        (local.set $i (i32.const 0))
        (block $big_done
          (loop $big
            (br_if $big_done (i32.gt_u (i32.add (local.get $i) (i32.const 5)) (local.get $M4)))
            (call $rows5 (local.get $o) (local.get $x) (local.get $w) (local.get $i) (local.get $j0) (local.get $j1) (local.get $K4) (local.get $N4) (local.get $KW) (local.get $ws))
            (local.set $i (i32.add (local.get $i) (i32.const 5)))
            (br $big)))
        (block $quads_done
          (loop $quad
            (br_if $quads_done (i32.gt_u (i32.add (local.get $i) (i32.const 4)) (local.get $M)))
            (call $rows4 (local.get $o) (local.get $x) (local.get $w) (local.get $i) (local.get $j0) (local.get $j1) (local.get $K4) (local.get $N4) (local.get $KW) (local.get $ws))
            (local.set $i (i32.add (local.get $i) (i32.const 4)))
            (br $quad)))
        (block $rows_done
          (loop $row1
            (br_if $rows_done (i32.ge_u (local.get $i) (local.get $M)))
            (call $row (local.get $o) (local.get $x) (local.get $w) (local.get $i) (local.get $j0) (local.get $j1) (local.get $K4) (local.get $N4) (local.get $KW) (local.get $ws))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br $row1)))
        (local.set $j0 (local.get $j1))
        (br $panel))))
)
