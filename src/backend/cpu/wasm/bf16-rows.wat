;; Cache rows rounded to bf16 in place (--kv-cache-dtype bf16 on the CPU, Bf16KvCaches):
;; each float32 of row rows[i] of `data` (rows of rowB bytes, a multiple of 16) becomes its
;; nearest bf16 (ties to even, NaN kept quiet: the bits f32ToBf16Into gives), and where
;; `copy` is not 0 its 16 bits are also stored in the half-width copy (rows of rowB/2 bytes).
;; 4 values a vector, so ~60k values of a decode step at B=32 take a few µs, not ~180 of JS.
;; Tested by bf16-kv-caches.test.ts against the scalar rounding.
(module
  (import "env" "memory" (memory 1 65536 shared))

  ;; bf16 bits of 4 float32 (in the low 16 bits of each lane)
  (func $bf16x4 (param $x v128) (result v128)
    (local $r v128)
    (local.set $r (i32x4.shr_u
      (i32x4.add (local.get $x) (i32x4.add (v128.const i32x4 0x7fff 0x7fff 0x7fff 0x7fff)
        (v128.and (i32x4.shr_u (local.get $x) (i32.const 16)) (v128.const i32x4 1 1 1 1))))
      (i32.const 16)))
    (v128.bitselect
      (v128.or (i32x4.shr_u (local.get $x) (i32.const 16)) (v128.const i32x4 0x40 0x40 0x40 0x40))
      (local.get $r)
      (i32x4.gt_s (v128.and (local.get $x) (v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff))
        (v128.const i32x4 0x7f800000 0x7f800000 0x7f800000 0x7f800000))))

  (func (export "round_bf16_rows") (param $data i32) (param $copy i32) (param $rows i32) (param $n i32)
      (param $rowB i32)
    (local $i i32) (local $j i32) (local $s i32) (local $p i32) (local $q i32) (local $r v128)
    (block $rows_done
      (loop $row
        (br_if $rows_done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $s (i32.load (i32.add (local.get $rows) (i32.shl (local.get $i) (i32.const 2)))))
        (local.set $p (i32.add (local.get $data) (i32.mul (local.get $s) (local.get $rowB))))
        (local.set $q (i32.add (local.get $copy) (i32.mul (local.get $s) (i32.shr_u (local.get $rowB) (i32.const 1)))))
        (local.set $j (i32.const 0))
        (block $done
          (loop $next
            (br_if $done (i32.ge_u (local.get $j) (local.get $rowB)))
            (local.set $r (call $bf16x4 (v128.load (i32.add (local.get $p) (local.get $j)))))
            (v128.store (i32.add (local.get $p) (local.get $j)) (i32x4.shl (local.get $r) (i32.const 16)))
            (if (local.get $copy)
              (then (v128.store64_lane 0 (i32.add (local.get $q) (i32.shr_u (local.get $j) (i32.const 1)))
                (i16x8.narrow_i32x4_u (local.get $r) (local.get $r)))))
            (local.set $j (i32.add (local.get $j) (i32.const 16)))
            (br $next)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $row)))))
