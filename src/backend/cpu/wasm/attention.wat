;; Paged attention (dense causal and MSA block-sparse) and MSA block scoring, float32 with
;; 128-bit SIMD, working in place on the paged KV cache. Pointers are byte offsets into the
;; shared memory.
;;
;; Token metadata `meta` is i32 [T, 2]: (position, byte offset of the sequence's page table
;; of i32 page ids). A token at position p sees blocks 0..floor(p/S); block b holds positions
;; b*S .. b*S+S-1 in page pageTable[b], and only positions <= p count.
;;
;; Every output element depends only on its token's query, position and cache (never on
;; the token range a call covers or on the other tokens of the step), and is summed in a
;; fixed order: a q*k dot is four lane partial sums over d == 0..3 (mod 4) added as
;; (l0 + l2) + (l1 + l3), whether the key is scored alone or four at a time. So results are
;; batch-invariant and identical whatever thread computes them.
;; Tested by src/backend/cpu/wasm/wasm-attention.test.ts against the float64 JS kernels.
(module
  (import "env" "memory" (memory 1 65536 shared))
  ;; the xor of the lines $touchKeys loaded: written so the loads are kept, never read
  (global $sink (mut i32) (i32.const 0))

  ;; (l0 + l2) + (l1 + l3)
  (func $hsum (param $c v128) (result f32)
    (f32.add
      (f32.add (f32x4.extract_lane 0 (local.get $c)) (f32x4.extract_lane 2 (local.get $c)))
      (f32.add (f32x4.extract_lane 1 (local.get $c)) (f32x4.extract_lane 3 (local.get $c)))))

  ;; [hsum c0, hsum c1, hsum c2, hsum c3] with the same association as $hsum.
  (func $hsum4 (param $c0 v128) (param $c1 v128) (param $c2 v128) (param $c3 v128) (result v128)
    (local $s01 v128) (local $s23 v128)
    ;; s01 = [c0.0+c0.2, c1.0+c1.2, c0.1+c0.3, c1.1+c1.3]
    (local.set $s01 (f32x4.add
      (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $c0) (local.get $c1))
      (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $c0) (local.get $c1))))
    (local.set $s23 (f32x4.add
      (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $c2) (local.get $c3))
      (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $c2) (local.get $c3))))
    ;; lanes (0, 1 of s01, 0, 1 of s23) + lanes (2, 3 of s01, 2, 3 of s23)
    (f32x4.add
      (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $s01) (local.get $s23))
      (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $s01) (local.get $s23))))

  ;; q * k over n4 bytes (n4 a multiple of 16).
  (func $dot1 (param $qp i32) (param $kp i32) (param $n4 i32) (result f32)
    (local $i i32) (local $c v128)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n4)))
        (local.set $c (f32x4.add (local.get $c)
          (f32x4.mul (v128.load (i32.add (local.get $qp) (local.get $i)))
                     (v128.load (i32.add (local.get $kp) (local.get $i))))))
        (local.set $i (i32.add (local.get $i) (i32.const 16)))
        (br $next)))
    (call $hsum (local.get $c)))

  ;; [q*k0, q*k1, q*k2, q*k3] for four keys `stride` bytes apart.
  (func $dot4 (param $qp i32) (param $kp i32) (param $stride i32) (param $n4 i32) (result v128)
    (local $i i32) (local $k1 i32) (local $k2 i32) (local $k3 i32) (local $x v128)
    (local $c0 v128) (local $c1 v128) (local $c2 v128) (local $c3 v128)
    (local.set $k1 (i32.add (local.get $kp) (local.get $stride)))
    (local.set $k2 (i32.add (local.get $k1) (local.get $stride)))
    (local.set $k3 (i32.add (local.get $k2) (local.get $stride)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n4)))
        (local.set $x (v128.load (i32.add (local.get $qp) (local.get $i))))
        (local.set $c0 (f32x4.add (local.get $c0) (f32x4.mul (local.get $x) (v128.load (i32.add (local.get $kp) (local.get $i))))))
        (local.set $c1 (f32x4.add (local.get $c1) (f32x4.mul (local.get $x) (v128.load (i32.add (local.get $k1) (local.get $i))))))
        (local.set $c2 (f32x4.add (local.get $c2) (f32x4.mul (local.get $x) (v128.load (i32.add (local.get $k2) (local.get $i))))))
        (local.set $c3 (f32x4.add (local.get $c3) (f32x4.mul (local.get $x) (v128.load (i32.add (local.get $k3) (local.get $i))))))
        (local.set $i (i32.add (local.get $i) (i32.const 16)))
        (br $next)))
    (call $hsum4 (local.get $c0) (local.get $c1) (local.get $c2) (local.get $c3)))

  ;; Visible keys of block b for a query at position pos: min(S, pos - b*S + 1).
  (func $blockLen (param $b i32) (param $pos i32) (param $S i32) (result i32)
    (local $n i32)
    (local.set $n (i32.add (i32.sub (local.get $pos) (i32.mul (local.get $b) (local.get $S))) (i32.const 1)))
    (select (local.get $S) (local.get $n) (i32.gt_s (local.get $n) (local.get $S))))

  ;; scores[i] = scale * q*k over the keys of the listed blocks, in list order; returns the count.
  (func $scores (param $qp i32) (param $kb i32) (param $pt i32) (param $pos i32) (param $S i32)
      (param $kvW4 i32) (param $Dh4 i32) (param $blist i32) (param $nbl i32) (param $sp i32) (param $scale f32)
      (result i32)
    (local $bi i32) (local $b i32) (local $cnt i32) (local $j i32) (local $kp i32) (local $n i32)
    (local $sc v128)
    (local.set $sc (f32x4.splat (local.get $scale)))
    (block $blocks_done
      (loop $block
        (br_if $blocks_done (i32.ge_u (local.get $bi) (local.get $nbl)))
        (local.set $b (i32.load (i32.add (local.get $blist) (i32.shl (local.get $bi) (i32.const 2)))))
        (local.set $cnt (call $blockLen (local.get $b) (local.get $pos) (local.get $S)))
        (local.set $kp (i32.add (local.get $kb) (i32.mul (local.get $kvW4)
          (i32.mul (i32.load (i32.add (local.get $pt) (i32.shl (local.get $b) (i32.const 2)))) (local.get $S)))))
        (local.set $j (i32.const 0))
        (block $quads_done
          (loop $quad
            (br_if $quads_done (i32.gt_s (i32.add (local.get $j) (i32.const 4)) (local.get $cnt)))
            (v128.store (i32.add (local.get $sp) (i32.shl (local.get $n) (i32.const 2)))
              (f32x4.mul (local.get $sc) (call $dot4 (local.get $qp) (local.get $kp) (local.get $kvW4) (local.get $Dh4))))
            (local.set $kp (i32.add (local.get $kp) (i32.shl (local.get $kvW4) (i32.const 2))))
            (local.set $n (i32.add (local.get $n) (i32.const 4)))
            (local.set $j (i32.add (local.get $j) (i32.const 4)))
            (br $quad)))
        (block $ones_done
          (loop $one
            (br_if $ones_done (i32.ge_s (local.get $j) (local.get $cnt)))
            (f32.store (i32.add (local.get $sp) (i32.shl (local.get $n) (i32.const 2)))
              (f32.mul (local.get $scale) (call $dot1 (local.get $qp) (local.get $kp) (local.get $Dh4))))
            (local.set $kp (i32.add (local.get $kp) (local.get $kvW4)))
            (local.set $n (i32.add (local.get $n) (i32.const 1)))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $one)))
        (local.set $bi (i32.add (local.get $bi) (i32.const 1)))
        (br $block)))
    (local.get $n))

  ;; In place: scores[0..n) <- e^(s - max); returns sum (vector lanes, then $hsum).
  ;; Needs 3 writable floats after scores[n - 1] (padded with -inf).
  ;; e^x per lane for x = s - max <= 0: Cephes expf (x = n*ln2 + r, degree-6 polynomial in r,
  ;; times 2^n); lanes below -87 (and -inf) give exactly 0. Written in the loop: a call per
  ;; four scores cost ~2% of dense attention (spilled vectors, prologue).
  (func $softmaxExp (param $sp i32) (param $n i32) (result f32)
    (local $i i32) (local $end i32) (local $m v128) (local $mx f32) (local $sum v128) (local $p v128)
    (local $x v128) (local $k v128) (local $r v128) (local $tiny v128)
    (local.set $end (i32.shl (i32.and (i32.add (local.get $n) (i32.const 3)) (i32.const -4)) (i32.const 2)))
    (f32.store offset=0 (i32.add (local.get $sp) (i32.shl (local.get $n) (i32.const 2))) (f32.const -inf))
    (f32.store offset=4 (i32.add (local.get $sp) (i32.shl (local.get $n) (i32.const 2))) (f32.const -inf))
    (f32.store offset=8 (i32.add (local.get $sp) (i32.shl (local.get $n) (i32.const 2))) (f32.const -inf))
    (local.set $m (v128.const f32x4 -inf -inf -inf -inf))
    (block $d1
      (loop $l1
        (br_if $d1 (i32.ge_u (local.get $i) (local.get $end)))
        (local.set $m (f32x4.max (local.get $m) (v128.load (i32.add (local.get $sp) (local.get $i)))))
        (local.set $i (i32.add (local.get $i) (i32.const 16)))
        (br $l1)))
    (local.set $mx (f32.max
      (f32.max (f32x4.extract_lane 0 (local.get $m)) (f32x4.extract_lane 1 (local.get $m)))
      (f32.max (f32x4.extract_lane 2 (local.get $m)) (f32x4.extract_lane 3 (local.get $m)))))
    (local.set $m (f32x4.splat (local.get $mx)))
    (local.set $i (i32.const 0))
    (block $d2
      (loop $l2
        (br_if $d2 (i32.ge_u (local.get $i) (local.get $end)))
        (local.set $x (f32x4.sub (v128.load (i32.add (local.get $sp) (local.get $i))) (local.get $m)))
        (local.set $tiny (f32x4.lt (local.get $x) (v128.const f32x4 -87 -87 -87 -87)))
        ;; pmax: max(x, -87) for every x but NaN (which stays NaN), in one instruction
        (local.set $x (f32x4.pmax (local.get $x) (v128.const f32x4 -87 -87 -87 -87)))
        (local.set $k (f32x4.nearest (f32x4.mul (local.get $x)
          (v128.const f32x4 1.44269504088896341 1.44269504088896341 1.44269504088896341 1.44269504088896341))))
        (local.set $r (f32x4.sub (local.get $x) (f32x4.mul (local.get $k)
          (v128.const f32x4 0.693359375 0.693359375 0.693359375 0.693359375))))
        (local.set $r (f32x4.sub (local.get $r) (f32x4.mul (local.get $k)
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
        ;; * 2^k, k in [-126, 0]: k + 2^23 + 127 is exact and holds k + 127 in its low bits,
        ;; shifted into the exponent field (was trunc_sat + add: V8's trunc_sat is ~8 instructions)
        (local.set $p (v128.andnot
          (f32x4.mul (local.get $p)
            (i32x4.shl (f32x4.add (local.get $k) (v128.const f32x4 8388735 8388735 8388735 8388735))
                       (i32.const 23)))
          (local.get $tiny)))
        (v128.store (i32.add (local.get $sp) (local.get $i)) (local.get $p))
        (local.set $sum (f32x4.add (local.get $sum) (local.get $p)))
        (local.set $i (i32.add (local.get $i) (i32.const 16)))
        (br $l2)))
    (call $hsum (local.get $sum)))

  ;; out[0..Dh) = sum_i p_i * v_i / denom over the listed blocks' keys, 16 dims at a time.
  (func $weighted (param $op i32) (param $vb i32) (param $pt i32) (param $pos i32) (param $S i32)
      (param $kvW4 i32) (param $Dh4 i32) (param $blist i32) (param $nbl i32) (param $sp i32) (param $denom f32)
    (local $c i32) (local $bi i32) (local $b i32) (local $cnt i32) (local $j i32) (local $vp i32) (local $pp i32)
    (local $p v128) (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128) (local $dv v128)
    (local.set $dv (f32x4.splat (local.get $denom)))
    (block $chunks_done
      (loop $chunk
        (br_if $chunks_done (i32.ge_u (local.get $c) (local.get $Dh4)))
        (local.set $a0 (v128.const i32x4 0 0 0 0))
        (local.set $a1 (v128.const i32x4 0 0 0 0))
        (local.set $a2 (v128.const i32x4 0 0 0 0))
        (local.set $a3 (v128.const i32x4 0 0 0 0))
        (local.set $pp (local.get $sp))
        (local.set $bi (i32.const 0))
        (block $blocks_done
          (loop $block
            (br_if $blocks_done (i32.ge_u (local.get $bi) (local.get $nbl)))
            (local.set $b (i32.load (i32.add (local.get $blist) (i32.shl (local.get $bi) (i32.const 2)))))
            (local.set $cnt (call $blockLen (local.get $b) (local.get $pos) (local.get $S)))
            (local.set $vp (i32.add (i32.add (local.get $vb) (local.get $c)) (i32.mul (local.get $kvW4)
              (i32.mul (i32.load (i32.add (local.get $pt) (i32.shl (local.get $b) (i32.const 2)))) (local.get $S)))))
            (local.set $j (i32.const 0))
            (block $keys_done
              (loop $key
                (br_if $keys_done (i32.ge_s (local.get $j) (local.get $cnt)))
                (local.set $p (v128.load32_splat (local.get $pp)))
                (local.set $a0 (f32x4.add (local.get $a0) (f32x4.mul (local.get $p) (v128.load offset=0 (local.get $vp)))))
                (local.set $a1 (f32x4.add (local.get $a1) (f32x4.mul (local.get $p) (v128.load offset=16 (local.get $vp)))))
                (local.set $a2 (f32x4.add (local.get $a2) (f32x4.mul (local.get $p) (v128.load offset=32 (local.get $vp)))))
                (local.set $a3 (f32x4.add (local.get $a3) (f32x4.mul (local.get $p) (v128.load offset=48 (local.get $vp)))))
                (local.set $pp (i32.add (local.get $pp) (i32.const 4)))
                (local.set $vp (i32.add (local.get $vp) (local.get $kvW4)))
                (local.set $j (i32.add (local.get $j) (i32.const 1)))
                (br $key)))
            (local.set $bi (i32.add (local.get $bi) (i32.const 1)))
            (br $block)))
        (v128.store offset=0 (i32.add (local.get $op) (local.get $c)) (f32x4.div (local.get $a0) (local.get $dv)))
        (v128.store offset=16 (i32.add (local.get $op) (local.get $c)) (f32x4.div (local.get $a1) (local.get $dv)))
        (v128.store offset=32 (i32.add (local.get $op) (local.get $c)) (f32x4.div (local.get $a2) (local.get $dv)))
        (v128.store offset=48 (i32.add (local.get $op) (local.get $c)) (f32x4.div (local.get $a3) (local.get $dv)))
        (local.set $c (i32.add (local.get $c) (i32.const 64)))
        (br $chunk))))

;; GQA pairs: the two query heads of a KV group (H = 2·Hkv) in one pass over its keys and
  ;; values, each head's arithmetic exactly that of $scores/$weighted (the same sums in the
  ;; same order), so results are the same bits as one head at a time.

  ;; For nq quads of keys (four keys `stride` bytes apart, quads 4·stride apart) from kp:
  ;; scale * [q0*k0..k3] at o0 and scale * [q1*k0..k3] at o1, both advancing ostep bytes a
  ;; quad; returns the lane-wise maxima of best0 and best1 with every quad's two vectors. Each
  ;; vector is $hsum4 of its dot's lane sums (the same shuffles, written out here), so the same
  ;; bits as one call per quad; one call per run of quads keeps the sums in registers instead
  ;; of spilling them across a call per quad and three per $hsum4 (measured: the per-quad calls
  ;; cost about as much as the loop itself, which reads keys from L1 at ~40 GB/s).
  (func $quads2 (param $q0 i32) (param $q1 i32) (param $kp i32) (param $stride i32) (param $n4 i32)
      (param $o0 i32) (param $o1 i32) (param $ostep i32) (param $sc v128) (param $nq i32)
      (param $best0 v128) (param $best1 v128) (result v128 v128)
    (local $i i32) (local $k1 i32) (local $k2 i32) (local $k3 i32) (local $x v128) (local $y v128)
    (local $w v128) (local $s01 v128) (local $s23 v128)
    (local $c0 v128) (local $c1 v128) (local $c2 v128) (local $c3 v128)
    (local $d0 v128) (local $d1 v128) (local $d2 v128) (local $d3 v128)
    (block $quads_done
      (loop $quad
        (br_if $quads_done (i32.eqz (local.get $nq)))
        (local.set $k1 (i32.add (local.get $kp) (local.get $stride)))
        (local.set $k2 (i32.add (local.get $k1) (local.get $stride)))
        (local.set $k3 (i32.add (local.get $k2) (local.get $stride)))
        (local.set $c0 (v128.const i32x4 0 0 0 0))
        (local.set $c1 (v128.const i32x4 0 0 0 0))
        (local.set $c2 (v128.const i32x4 0 0 0 0))
        (local.set $c3 (v128.const i32x4 0 0 0 0))
        (local.set $d0 (v128.const i32x4 0 0 0 0))
        (local.set $d1 (v128.const i32x4 0 0 0 0))
        (local.set $d2 (v128.const i32x4 0 0 0 0))
        (local.set $d3 (v128.const i32x4 0 0 0 0))
        (local.set $i (i32.const 0))
        (block $done
          (loop $next
            (br_if $done (i32.ge_u (local.get $i) (local.get $n4)))
            (local.set $x (v128.load (i32.add (local.get $q0) (local.get $i))))
            (local.set $y (v128.load (i32.add (local.get $q1) (local.get $i))))
            (local.set $w (v128.load (i32.add (local.get $kp) (local.get $i))))
            (local.set $c0 (f32x4.add (local.get $c0) (f32x4.mul (local.get $x) (local.get $w))))
            (local.set $d0 (f32x4.add (local.get $d0) (f32x4.mul (local.get $y) (local.get $w))))
            (local.set $w (v128.load (i32.add (local.get $k1) (local.get $i))))
            (local.set $c1 (f32x4.add (local.get $c1) (f32x4.mul (local.get $x) (local.get $w))))
            (local.set $d1 (f32x4.add (local.get $d1) (f32x4.mul (local.get $y) (local.get $w))))
            (local.set $w (v128.load (i32.add (local.get $k2) (local.get $i))))
            (local.set $c2 (f32x4.add (local.get $c2) (f32x4.mul (local.get $x) (local.get $w))))
            (local.set $d2 (f32x4.add (local.get $d2) (f32x4.mul (local.get $y) (local.get $w))))
            (local.set $w (v128.load (i32.add (local.get $k3) (local.get $i))))
            (local.set $c3 (f32x4.add (local.get $c3) (f32x4.mul (local.get $x) (local.get $w))))
            (local.set $d3 (f32x4.add (local.get $d3) (f32x4.mul (local.get $y) (local.get $w))))
            (local.set $i (i32.add (local.get $i) (i32.const 16)))
            (br $next)))
        ;; $hsum4 c0..c3 into x, then d0..d3 into y
        (local.set $s01 (f32x4.add
          (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $c0) (local.get $c1))
          (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $c0) (local.get $c1))))
        (local.set $s23 (f32x4.add
          (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $c2) (local.get $c3))
          (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $c2) (local.get $c3))))
        (local.set $x (f32x4.mul (local.get $sc) (f32x4.add
          (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $s01) (local.get $s23))
          (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $s01) (local.get $s23)))))
        (local.set $s01 (f32x4.add
          (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $d0) (local.get $d1))
          (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $d0) (local.get $d1))))
        (local.set $s23 (f32x4.add
          (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $d2) (local.get $d3))
          (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $d2) (local.get $d3))))
        (local.set $y (f32x4.mul (local.get $sc) (f32x4.add
          (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $s01) (local.get $s23))
          (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $s01) (local.get $s23)))))
        (v128.store (local.get $o0) (local.get $x))
        (v128.store (local.get $o1) (local.get $y))
        (local.set $best0 (f32x4.max (local.get $best0) (local.get $x)))
        (local.set $best1 (f32x4.max (local.get $best1) (local.get $y)))
        (local.set $o0 (i32.add (local.get $o0) (local.get $ostep)))
        (local.set $o1 (i32.add (local.get $o1) (local.get $ostep)))
        (local.set $kp (i32.add (local.get $k3) (local.get $stride)))
        (local.set $nq (i32.sub (local.get $nq) (i32.const 1)))
        (br $quad)))
    (local.get $best0) (local.get $best1))

  ;; $scores for query heads q0 and q1 of one group: scores into sp0 and sp1; returns the count.
  (func $scores2 (param $q0 i32) (param $q1 i32) (param $kb i32) (param $pt i32) (param $pos i32) (param $S i32)
      (param $kvW4 i32) (param $Dh4 i32) (param $blist i32) (param $nbl i32) (param $sp0 i32) (param $sp1 i32)
      (param $scale f32) (result i32)
    (local $bi i32) (local $b i32) (local $cnt i32) (local $j i32) (local $kp i32) (local $n i32)
    (local $sc v128)
    (local.set $sc (f32x4.splat (local.get $scale)))
    (block $blocks_done
      (loop $block
        (br_if $blocks_done (i32.ge_u (local.get $bi) (local.get $nbl)))
        (local.set $b (i32.load (i32.add (local.get $blist) (i32.shl (local.get $bi) (i32.const 2)))))
        (local.set $cnt (call $blockLen (local.get $b) (local.get $pos) (local.get $S)))
        (local.set $kp (i32.add (local.get $kb) (i32.mul (local.get $kvW4)
          (i32.mul (i32.load (i32.add (local.get $pt) (i32.shl (local.get $b) (i32.const 2)))) (local.get $S)))))
        (local.set $j (i32.const 0))
        (local.set $j (i32.and (local.get $cnt) (i32.const -4)))
        (call $quads2 (local.get $q0) (local.get $q1) (local.get $kp) (local.get $kvW4) (local.get $Dh4)
          (i32.add (local.get $sp0) (i32.shl (local.get $n) (i32.const 2)))
          (i32.add (local.get $sp1) (i32.shl (local.get $n) (i32.const 2))) (i32.const 16) (local.get $sc)
          (i32.shr_u (local.get $cnt) (i32.const 2)) (local.get $sc) (local.get $sc))
        (drop)
        (drop)
        (local.set $kp (i32.add (local.get $kp) (i32.mul (local.get $kvW4) (local.get $j))))
        (local.set $n (i32.add (local.get $n) (local.get $j)))
        (block $ones_done
          (loop $one
            (br_if $ones_done (i32.ge_s (local.get $j) (local.get $cnt)))
            (f32.store (i32.add (local.get $sp0) (i32.shl (local.get $n) (i32.const 2)))
              (f32.mul (local.get $scale) (call $dot1 (local.get $q0) (local.get $kp) (local.get $Dh4))))
            (f32.store (i32.add (local.get $sp1) (i32.shl (local.get $n) (i32.const 2)))
              (f32.mul (local.get $scale) (call $dot1 (local.get $q1) (local.get $kp) (local.get $Dh4))))
            (local.set $kp (i32.add (local.get $kp) (local.get $kvW4)))
            (local.set $n (i32.add (local.get $n) (i32.const 1)))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $one)))
        (local.set $bi (i32.add (local.get $bi) (i32.const 1)))
        (br $block)))
    (local.get $n))

  ;; $weighted for two heads of one group: out0 from weights sp0 / denom0, out1 from sp1 /
  ;; denom1, each value vector loaded once for both.
  (func $weighted2 (param $o0 i32) (param $o1 i32) (param $vb i32) (param $pt i32) (param $pos i32) (param $S i32)
      (param $kvW4 i32) (param $Dh4 i32) (param $blist i32) (param $nbl i32) (param $sp0 i32) (param $sp1 i32)
      (param $denom0 f32) (param $denom1 f32)
    (local $c i32) (local $bi i32) (local $b i32) (local $cnt i32) (local $j i32) (local $vp i32) (local $pp i32)
    (local $p v128) (local $r v128) (local $w v128)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128)
    (local $e0 v128) (local $e1 v128) (local $e2 v128) (local $e3 v128)
    (local $dv v128) (local $dw v128) (local $off1 i32)
    (local.set $dv (f32x4.splat (local.get $denom0)))
    (local.set $dw (f32x4.splat (local.get $denom1)))
    (local.set $off1 (i32.sub (local.get $sp1) (local.get $sp0)))
    (block $chunks_done
      (loop $chunk
        (br_if $chunks_done (i32.ge_u (local.get $c) (local.get $Dh4)))
        (local.set $a0 (v128.const i32x4 0 0 0 0))
        (local.set $a1 (v128.const i32x4 0 0 0 0))
        (local.set $a2 (v128.const i32x4 0 0 0 0))
        (local.set $a3 (v128.const i32x4 0 0 0 0))
        (local.set $e0 (v128.const i32x4 0 0 0 0))
        (local.set $e1 (v128.const i32x4 0 0 0 0))
        (local.set $e2 (v128.const i32x4 0 0 0 0))
        (local.set $e3 (v128.const i32x4 0 0 0 0))
        (local.set $pp (local.get $sp0))
        (local.set $bi (i32.const 0))
        (block $blocks_done
          (loop $block
            (br_if $blocks_done (i32.ge_u (local.get $bi) (local.get $nbl)))
            (local.set $b (i32.load (i32.add (local.get $blist) (i32.shl (local.get $bi) (i32.const 2)))))
            (local.set $cnt (call $blockLen (local.get $b) (local.get $pos) (local.get $S)))
            (local.set $vp (i32.add (i32.add (local.get $vb) (local.get $c)) (i32.mul (local.get $kvW4)
              (i32.mul (i32.load (i32.add (local.get $pt) (i32.shl (local.get $b) (i32.const 2)))) (local.get $S)))))
            (local.set $j (i32.const 0))
            (block $keys_done
              (loop $key
                (br_if $keys_done (i32.ge_s (local.get $j) (local.get $cnt)))
                (local.set $p (v128.load32_splat (local.get $pp)))
                (local.set $r (v128.load32_splat (i32.add (local.get $pp) (local.get $off1))))
                (local.set $w (v128.load offset=0 (local.get $vp)))
                (local.set $a0 (f32x4.add (local.get $a0) (f32x4.mul (local.get $p) (local.get $w))))
                (local.set $e0 (f32x4.add (local.get $e0) (f32x4.mul (local.get $r) (local.get $w))))
                (local.set $w (v128.load offset=16 (local.get $vp)))
                (local.set $a1 (f32x4.add (local.get $a1) (f32x4.mul (local.get $p) (local.get $w))))
                (local.set $e1 (f32x4.add (local.get $e1) (f32x4.mul (local.get $r) (local.get $w))))
                (local.set $w (v128.load offset=32 (local.get $vp)))
                (local.set $a2 (f32x4.add (local.get $a2) (f32x4.mul (local.get $p) (local.get $w))))
                (local.set $e2 (f32x4.add (local.get $e2) (f32x4.mul (local.get $r) (local.get $w))))
                (local.set $w (v128.load offset=48 (local.get $vp)))
                (local.set $a3 (f32x4.add (local.get $a3) (f32x4.mul (local.get $p) (local.get $w))))
                (local.set $e3 (f32x4.add (local.get $e3) (f32x4.mul (local.get $r) (local.get $w))))
                (local.set $pp (i32.add (local.get $pp) (i32.const 4)))
                (local.set $vp (i32.add (local.get $vp) (local.get $kvW4)))
                (local.set $j (i32.add (local.get $j) (i32.const 1)))
                (br $key)))
            (local.set $bi (i32.add (local.get $bi) (i32.const 1)))
            (br $block)))
        (v128.store offset=0 (i32.add (local.get $o0) (local.get $c)) (f32x4.div (local.get $a0) (local.get $dv)))
        (v128.store offset=16 (i32.add (local.get $o0) (local.get $c)) (f32x4.div (local.get $a1) (local.get $dv)))
        (v128.store offset=32 (i32.add (local.get $o0) (local.get $c)) (f32x4.div (local.get $a2) (local.get $dv)))
        (v128.store offset=48 (i32.add (local.get $o0) (local.get $c)) (f32x4.div (local.get $a3) (local.get $dv)))
        (v128.store offset=0 (i32.add (local.get $o1) (local.get $c)) (f32x4.div (local.get $e0) (local.get $dw)))
        (v128.store offset=16 (i32.add (local.get $o1) (local.get $c)) (f32x4.div (local.get $e1) (local.get $dw)))
        (v128.store offset=32 (i32.add (local.get $o1) (local.get $c)) (f32x4.div (local.get $e2) (local.get $dw)))
        (v128.store offset=48 (i32.add (local.get $o1) (local.get $c)) (f32x4.div (local.get $e3) (local.get $dw)))
        (local.set $c (i32.add (local.get $c) (i32.const 64)))
        (br $chunk))))

;; Reads one i32 of every 64-byte line of the listed blocks' visible rows (w bytes of each
  ;; row, rows rowB bytes apart from base), returning their xor so the loads stay. A unit's keys
  ;; and values are half rows (its KV group's Dh of Hkv·Dh), a pattern the hardware prefetchers
  ;; do not stream: the scoring and weighting passes then wait on each miss in turn (measured
  ;; 4.9 GB/s from DRAM against ~27 for sequential lines). These independent loads issue the
  ;; misses many at a time, so the passes that follow read from L2.
  (func $touch (param $base i32) (param $pt i32) (param $pos i32) (param $S i32) (param $rowB i32)
      (param $w i32) (param $blist i32) (param $nbl i32) (result i32)
    (local $bi i32) (local $b i32) (local $p i32) (local $end i32) (local $o i32) (local $acc i32)
    (block $blocks_done
      (loop $block
        (br_if $blocks_done (i32.ge_u (local.get $bi) (local.get $nbl)))
        (local.set $b (i32.load (i32.add (local.get $blist) (i32.shl (local.get $bi) (i32.const 2)))))
        (local.set $p (i32.add (local.get $base) (i32.mul (local.get $rowB)
          (i32.mul (i32.load (i32.add (local.get $pt) (i32.shl (local.get $b) (i32.const 2)))) (local.get $S)))))
        (local.set $end (i32.add (local.get $p) (i32.mul (local.get $rowB)
          (call $blockLen (local.get $b) (local.get $pos) (local.get $S)))))
        (block $rows_done
          (loop $row
            (br_if $rows_done (i32.ge_u (local.get $p) (local.get $end)))
            (local.set $o (i32.const 0))
            (block $lines_done
              (loop $line
                (br_if $lines_done (i32.ge_u (local.get $o) (local.get $w)))
                (local.set $acc (i32.xor (local.get $acc) (i32.load (i32.add (local.get $p) (local.get $o)))))
                (local.set $o (i32.add (local.get $o) (i32.const 64)))
                (br $line)))
            (local.set $p (i32.add (local.get $p) (local.get $rowB)))
            (br $row)))
        (local.set $bi (i32.add (local.get $bi) (i32.const 1)))
        (br $block)))
    (local.get $acc))

  ;; The block list of (token, KV group) into blist, ascending; returns its length.
  ;; Dense (lp = 0): 0..floor(pos/S). Sparse: the topk ids at lp, -1 skipped, insertion-sorted.
  (func $blockList (param $lp i32) (param $topk i32) (param $pos i32) (param $S i32) (param $blist i32) (result i32)
    (local $n i32) (local $i i32) (local $b i32) (local $j i32) (local $prev i32)
    (if (i32.eqz (local.get $lp))
      (then
        (local.set $n (i32.add (i32.div_u (local.get $pos) (local.get $S)) (i32.const 1)))
        (block $d
          (loop $l
            (br_if $d (i32.ge_u (local.get $i) (local.get $n)))
            (i32.store (i32.add (local.get $blist) (i32.shl (local.get $i) (i32.const 2))) (local.get $i))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br $l)))
        (return (local.get $n))))
    (block $d
      (loop $l
        (br_if $d (i32.ge_u (local.get $i) (local.get $topk)))
        (local.set $b (i32.load (i32.add (local.get $lp) (i32.shl (local.get $i) (i32.const 2)))))
        (if (i32.ge_s (local.get $b) (i32.const 0))
          (then
            ;; insert b: shift larger entries up one
            (local.set $j (local.get $n))
            (block $ins_done
              (loop $ins
                (br_if $ins_done (i32.eqz (local.get $j)))
                (local.set $prev (i32.load (i32.add (local.get $blist) (i32.shl (i32.sub (local.get $j) (i32.const 1)) (i32.const 2)))))
                (br_if $ins_done (i32.le_s (local.get $prev) (local.get $b)))
                (i32.store (i32.add (local.get $blist) (i32.shl (local.get $j) (i32.const 2))) (local.get $prev))
                (local.set $j (i32.sub (local.get $j) (i32.const 1)))
                (br $ins)))
            (i32.store (i32.add (local.get $blist) (i32.shl (local.get $j) (i32.const 2))) (local.get $b))
            (local.set $n (i32.add (local.get $n) (i32.const 1)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $l)))
    (local.get $n))

  ;; out[t, h*Dh ..] for the work units u = u0, u0 + ustep, ... < u1, unit u = (token t, KV
;; groups g0 .. g0 + gpu - 1) = (u / (Hkv/gpu), (u mod (Hkv/gpu))·gpu), gpu (groups per unit)
;; 1 or Hkv: softmax(scale * q.K^T) . V over the visible keys for each group's query heads.
;; touchOn: touch the rows first ($touch). Neither changes what any output element sums. q, out [T, H*Dh]; k, v [P, S, Hkv*Dh]; blocks [Hkv, T, topk] or 0 (dense).
;; Scratch (the caller's, one per thread): blist (i32, >= max blocks + topk), sp and sp1 (f32,
;; >= max visible keys + 4 each; sp1 holds the second head's scores of a GQA pair, H = 2·Hkv).
  (func (export "attention") (param $out i32) (param $q i32) (param $k i32) (param $v i32)
      (param $meta i32) (param $blocks i32) (param $T i32) (param $u0 i32) (param $u1 i32) (param $ustep i32)
      (param $H i32) (param $Hkv i32) (param $Dh i32) (param $S i32) (param $topk i32)
      (param $scale f32) (param $blist i32) (param $sp i32) (param $sp1 i32) (param $gpu i32) (param $touchOn i32)
    (local $u i32) (local $t i32) (local $g i32) (local $hh i32) (local $group i32) (local $pos i32) (local $pt i32)
    (local $Dh4 i32) (local $kvW4 i32) (local $nbl i32) (local $n i32) (local $h i32) (local $qo i32)
    (local $lp i32) (local $denom f32) (local $upt i32) (local $g0 i32) (local $g1 i32) (local $tw i32)
    (local.set $Dh4 (i32.shl (local.get $Dh) (i32.const 2)))
    (local.set $kvW4 (i32.mul (local.get $Hkv) (local.get $Dh4)))
    (local.set $group (i32.div_u (local.get $H) (local.get $Hkv)))
    (local.set $upt (i32.div_u (local.get $Hkv) (local.get $gpu)))
    (local.set $u (local.get $u0))
    (block $units_done
      (loop $unit
        (br_if $units_done (i32.ge_u (local.get $u) (local.get $u1)))
        (local.set $t (i32.div_u (local.get $u) (local.get $upt)))
        (local.set $g0 (i32.mul (i32.rem_u (local.get $u) (local.get $upt)) (local.get $gpu)))
        (local.set $g1 (i32.add (local.get $g0) (local.get $gpu)))
        (local.set $g (local.get $g0))
        (block $groups_done
          (loop $grp
        (br_if $groups_done (i32.ge_u (local.get $g) (local.get $g1)))
        (local.set $pos (i32.load offset=0 (i32.add (local.get $meta) (i32.shl (local.get $t) (i32.const 3)))))
        (local.set $pt (i32.load offset=4 (i32.add (local.get $meta) (i32.shl (local.get $t) (i32.const 3)))))
        (local.set $lp (select
          (i32.add (local.get $blocks) (i32.shl (i32.mul (i32.add (i32.mul (local.get $g) (local.get $T)) (local.get $t)) (local.get $topk)) (i32.const 2)))
          (i32.const 0)
          (local.get $blocks)))
        (local.set $nbl (call $blockList (local.get $lp) (local.get $topk) (local.get $pos) (local.get $S) (local.get $blist)))
        ;; Touch (caller's choice: a KV working set beyond L2) this group's half rows; dense
        ;; units of several groups (gpu > 1, one block list) touch all their groups' columns
        ;; once, at the first: whole rows, which stream (~27 GB/s against ~10 for half rows).
        ;; blist[nbl] (the caller leaves room) keeps the touched lines' xor, never read.
        (local.set $tw (select (i32.mul (local.get $gpu) (local.get $Dh4)) (local.get $Dh4) (i32.eqz (local.get $blocks))))
        (if (i32.and (local.get $touchOn)
              (i32.or (i32.ne (i32.eqz (local.get $blocks)) (i32.const 1)) (i32.eq (local.get $g) (local.get $g0))))
          (then
            (i32.store (i32.add (local.get $blist) (i32.shl (local.get $nbl) (i32.const 2)))
              (i32.xor
                (call $touch (i32.add (local.get $k) (i32.mul (local.get $g) (local.get $Dh4)))
                  (local.get $pt) (local.get $pos) (local.get $S) (local.get $kvW4) (local.get $tw) (local.get $blist) (local.get $nbl))
                (call $touch (i32.add (local.get $v) (i32.mul (local.get $g) (local.get $Dh4)))
                  (local.get $pt) (local.get $pos) (local.get $S) (local.get $kvW4) (local.get $tw) (local.get $blist) (local.get $nbl))))))
        (local.set $hh (i32.const 0))
        (if (i32.eq (local.get $group) (i32.const 2))
          (then
            (local.set $h (i32.shl (local.get $g) (i32.const 1)))
            (local.set $qo (i32.mul (i32.add (i32.mul (local.get $t) (local.get $H)) (local.get $h)) (local.get $Dh4)))
            (local.set $n (call $scores2 (i32.add (local.get $q) (local.get $qo))
              (i32.add (i32.add (local.get $q) (local.get $qo)) (local.get $Dh4))
              (i32.add (local.get $k) (i32.mul (local.get $g) (local.get $Dh4)))
              (local.get $pt) (local.get $pos) (local.get $S) (local.get $kvW4) (local.get $Dh4)
              (local.get $blist) (local.get $nbl) (local.get $sp) (local.get $sp1) (local.get $scale)))
            (local.set $denom (call $softmaxExp (local.get $sp) (local.get $n)))
            (call $weighted2 (i32.add (local.get $out) (local.get $qo))
              (i32.add (i32.add (local.get $out) (local.get $qo)) (local.get $Dh4))
              (i32.add (local.get $v) (i32.mul (local.get $g) (local.get $Dh4)))
              (local.get $pt) (local.get $pos) (local.get $S) (local.get $kvW4) (local.get $Dh4)
              (local.get $blist) (local.get $nbl) (local.get $sp) (local.get $sp1)
              (local.get $denom) (call $softmaxExp (local.get $sp1) (local.get $n)))
            (local.set $hh (local.get $group))))
        (block $heads_done
          (loop $head
            (br_if $heads_done (i32.ge_u (local.get $hh) (local.get $group)))
            (local.set $h (i32.add (i32.mul (local.get $g) (local.get $group)) (local.get $hh)))
            (local.set $qo (i32.mul (i32.add (i32.mul (local.get $t) (local.get $H)) (local.get $h)) (local.get $Dh4)))
            (local.set $n (call $scores (i32.add (local.get $q) (local.get $qo))
              (i32.add (local.get $k) (i32.mul (local.get $g) (local.get $Dh4)))
              (local.get $pt) (local.get $pos) (local.get $S) (local.get $kvW4) (local.get $Dh4)
              (local.get $blist) (local.get $nbl) (local.get $sp) (local.get $scale)))
            (local.set $denom (call $softmaxExp (local.get $sp) (local.get $n)))
            (call $weighted (i32.add (local.get $out) (local.get $qo))
              (i32.add (local.get $v) (i32.mul (local.get $g) (local.get $Dh4)))
              (local.get $pt) (local.get $pos) (local.get $S) (local.get $kvW4) (local.get $Dh4)
              (local.get $blist) (local.get $nbl) (local.get $sp) (local.get $denom))
            (local.set $hh (i32.add (local.get $hh) (i32.const 1)))
            (br $head)))
        (local.set $g (i32.add (local.get $g) (i32.const 1)))
        (br $grp)))
        (local.set $u (i32.add (local.get $u) (local.get $ustep)))
        (br $unit))))

;; One i32 load of every 64-byte line of the index keys of blocks [b0, b1) (the visible rows
;; of each: contiguous in its page), before $msaScores reads them: their misses issue many at
;; a time (a block is one 4 KB page, too short for the prefetchers to ramp up). The loads'
;; xor goes to $sink, never read.
  (func $touchKeys (param $kc i32) (param $pt i32) (param $pos i32) (param $S i32) (param $Di4 i32)
      (param $b0 i32) (param $b1 i32)
    (local $b i32) (local $p i32) (local $end i32) (local $acc i32)
    (local.set $b (local.get $b0))
    (block $blocks_done
      (loop $block
        (br_if $blocks_done (i32.ge_u (local.get $b) (local.get $b1)))
        (local.set $p (i32.add (local.get $kc) (i32.mul (local.get $Di4)
          (i32.mul (i32.load (i32.add (local.get $pt) (i32.shl (local.get $b) (i32.const 2)))) (local.get $S)))))
        (local.set $end (i32.add (local.get $p) (i32.mul (local.get $Di4)
          (call $blockLen (local.get $b) (local.get $pos) (local.get $S)))))
        (block $lines_done
          (loop $line
            (br_if $lines_done (i32.ge_u (local.get $p) (local.get $end)))
            (local.set $acc (i32.xor (local.get $acc) (i32.load (local.get $p))))
            (local.set $p (i32.add (local.get $p) (i32.const 64)))
            (br $line)))
        (local.set $b (i32.add (local.get $b) (i32.const 1)))
        (br $block)))
    (global.set $sink (i32.xor (global.get $sink) (local.get $acc))))

;; MSA block scores of one token: out[h*nbs + b] = max over the visible keys j of block b
  ;; (b0 <= b < b1) of q_h * idxK[j], for index heads h < Hi. q [Hi*Di] at qp; idxK [P, S, Di].
  ;; Heads go in pairs through $quads2 (each key vector loaded once for both; scale 1, exact),
  ;; an odd last head through $dot4: every score is the same chain of operations either way,
  ;; so a block's score does not depend on the range or the pairing that computed it.
  (func $msaScores (param $qp i32) (param $kc i32) (param $pt i32) (param $pos i32)
      (param $S i32) (param $Hi i32) (param $Di i32) (param $b0 i32) (param $b1 i32) (param $nbs i32)
      (param $out i32) (param $tmp i32)
    (local $b i32) (local $h i32) (local $cnt i32) (local $j i32) (local $kp0 i32) (local $kp i32)
    (local $Di4 i32) (local $qh i32) (local $best v128) (local $best1 v128) (local $s f32) (local $s1 f32)
    (local $op i32)
    (local.set $Di4 (i32.shl (local.get $Di) (i32.const 2)))
    (call $touchKeys (local.get $kc) (local.get $pt) (local.get $pos) (local.get $S) (local.get $Di4)
      (local.get $b0) (local.get $b1))
    (local.set $b (local.get $b0))
    (block $blocks_done
      (loop $block
        (br_if $blocks_done (i32.ge_u (local.get $b) (local.get $b1)))
        (local.set $cnt (call $blockLen (local.get $b) (local.get $pos) (local.get $S)))
        (local.set $kp0 (i32.add (local.get $kc) (i32.mul (local.get $Di4)
          (i32.mul (i32.load (i32.add (local.get $pt) (i32.shl (local.get $b) (i32.const 2)))) (local.get $S)))))
        (local.set $h (i32.const 0))
        (block $pairs_done
          (loop $pair
            (br_if $pairs_done (i32.gt_u (i32.add (local.get $h) (i32.const 2)) (local.get $Hi)))
            (local.set $qh (i32.add (local.get $qp) (i32.mul (local.get $h) (local.get $Di4))))
            (local.set $best (v128.const f32x4 -inf -inf -inf -inf))
            (local.set $best1 (v128.const f32x4 -inf -inf -inf -inf))
            (local.set $kp (local.get $kp0))
            (local.set $j (i32.const 0))
            (local.set $j (i32.and (local.get $cnt) (i32.const -4)))
            (call $quads2 (local.get $qh) (i32.add (local.get $qh) (local.get $Di4)) (local.get $kp)
              (local.get $Di4) (local.get $Di4) (local.get $tmp) (i32.add (local.get $tmp) (i32.const 16))
              (i32.const 0) (v128.const f32x4 1 1 1 1) (i32.shr_u (local.get $cnt) (i32.const 2))
              (local.get $best) (local.get $best1))
            (local.set $best1)
            (local.set $best)
            (local.set $kp (i32.add (local.get $kp) (i32.mul (local.get $Di4) (local.get $j))))
            (local.set $s (f32.max
              (f32.max (f32x4.extract_lane 0 (local.get $best)) (f32x4.extract_lane 1 (local.get $best)))
              (f32.max (f32x4.extract_lane 2 (local.get $best)) (f32x4.extract_lane 3 (local.get $best)))))
            (local.set $s1 (f32.max
              (f32.max (f32x4.extract_lane 0 (local.get $best1)) (f32x4.extract_lane 1 (local.get $best1)))
              (f32.max (f32x4.extract_lane 2 (local.get $best1)) (f32x4.extract_lane 3 (local.get $best1)))))
            (block $ones_done
              (loop $one
                (br_if $ones_done (i32.ge_s (local.get $j) (local.get $cnt)))
                (local.set $s (f32.max (local.get $s) (call $dot1 (local.get $qh) (local.get $kp) (local.get $Di4))))
                (local.set $s1 (f32.max (local.get $s1)
                  (call $dot1 (i32.add (local.get $qh) (local.get $Di4)) (local.get $kp) (local.get $Di4))))
                (local.set $kp (i32.add (local.get $kp) (local.get $Di4)))
                (local.set $j (i32.add (local.get $j) (i32.const 1)))
                (br $one)))
            (local.set $op (i32.add (local.get $out) (i32.shl (i32.add (i32.mul (local.get $h) (local.get $nbs)) (local.get $b)) (i32.const 2))))
            (f32.store (local.get $op) (local.get $s))
            (f32.store (i32.add (local.get $op) (i32.shl (local.get $nbs) (i32.const 2))) (local.get $s1))
            (local.set $h (i32.add (local.get $h) (i32.const 2)))
            (br $pair)))
        (if (i32.lt_u (local.get $h) (local.get $Hi))
          (then
            (local.set $qh (i32.add (local.get $qp) (i32.mul (local.get $h) (local.get $Di4))))
            (local.set $best (v128.const f32x4 -inf -inf -inf -inf))
            (local.set $kp (local.get $kp0))
            (local.set $j (i32.const 0))
            (block $quads_done
              (loop $quad
                (br_if $quads_done (i32.gt_s (i32.add (local.get $j) (i32.const 4)) (local.get $cnt)))
                (local.set $best (f32x4.max (local.get $best)
                  (call $dot4 (local.get $qh) (local.get $kp) (local.get $Di4) (local.get $Di4))))
                (local.set $kp (i32.add (local.get $kp) (i32.shl (local.get $Di4) (i32.const 2))))
                (local.set $j (i32.add (local.get $j) (i32.const 4)))
                (br $quad)))
            (local.set $s (f32.max
              (f32.max (f32x4.extract_lane 0 (local.get $best)) (f32x4.extract_lane 1 (local.get $best)))
              (f32.max (f32x4.extract_lane 2 (local.get $best)) (f32x4.extract_lane 3 (local.get $best)))))
            (block $ones_done
              (loop $one
                (br_if $ones_done (i32.ge_s (local.get $j) (local.get $cnt)))
                (local.set $s (f32.max (local.get $s) (call $dot1 (local.get $qh) (local.get $kp) (local.get $Di4))))
                (local.set $kp (i32.add (local.get $kp) (local.get $Di4)))
                (local.set $j (i32.add (local.get $j) (i32.const 1)))
                (br $one)))
            (f32.store (i32.add (local.get $out) (i32.shl (i32.add (i32.mul (local.get $h) (local.get $nbs)) (local.get $b)) (i32.const 2)))
              (local.get $s))))
        (local.set $b (i32.add (local.get $b) (i32.const 1)))
        (br $block))))

;; MSA block scores of the work units u = u0, u0 + ustep, ... < u1, unit u = (token t, part p)
;; = (u / parts, u mod parts): blocks [p*part, (p+1)*part) of the token's nb candidates, into
;; sc[(t*Hi + h)*nbs + b] (tokens with nb <= topk need no scores and are skipped). The first
;; phase of a selection split across threads by key ranges (msa_pick is the second); a
;; block's score is the same bits as msa_select's. Scratch tmp: 32 bytes per thread.
  (func (export "msa_scores") (param $q i32) (param $kc i32) (param $meta i32) (param $T i32)
      (param $u0 i32) (param $u1 i32) (param $ustep i32) (param $S i32) (param $Hi i32) (param $Di i32)
      (param $topk i32) (param $parts i32) (param $part i32) (param $nbs i32) (param $sc i32) (param $tmp i32)
    (local $u i32) (local $t i32) (local $b0 i32) (local $b1 i32) (local $pos i32) (local $nb i32)
    (local.set $u (local.get $u0))
    (block $units_done
      (loop $unit
        (br_if $units_done (i32.ge_u (local.get $u) (local.get $u1)))
        (local.set $t (i32.div_u (local.get $u) (local.get $parts)))
        (local.set $pos (i32.load offset=0 (i32.add (local.get $meta) (i32.shl (local.get $t) (i32.const 3)))))
        (local.set $nb (i32.add (i32.div_u (local.get $pos) (local.get $S)) (i32.const 1)))
        (local.set $b0 (i32.mul (i32.rem_u (local.get $u) (local.get $parts)) (local.get $part)))
        (local.set $b1 (i32.add (local.get $b0) (local.get $part)))
        (local.set $b1 (select (local.get $nb) (local.get $b1) (i32.gt_u (local.get $b1) (local.get $nb))))
        (if (i32.and (i32.gt_u (local.get $nb) (local.get $topk)) (i32.lt_u (local.get $b0) (local.get $b1)))
          (then
            (call $msaScores
              (i32.add (local.get $q) (i32.shl (i32.mul (i32.mul (local.get $t) (local.get $Hi)) (local.get $Di)) (i32.const 2)))
              (local.get $kc)
              (i32.load offset=4 (i32.add (local.get $meta) (i32.shl (local.get $t) (i32.const 3))))
              (local.get $pos) (local.get $S) (local.get $Hi) (local.get $Di) (local.get $b0) (local.get $b1)
              (local.get $nbs)
              (i32.add (local.get $sc) (i32.shl (i32.mul (i32.mul (local.get $t) (local.get $Hi)) (local.get $nbs)) (i32.const 2)))
              (local.get $tmp))))
        (local.set $u (i32.add (local.get $u) (local.get $ustep)))
        (br $unit))))

;; MSA block selection (ops/msa-select.ts's rule) for the work units u = u0, u0 + ustep, ...
;; < u1, unit u = token t: for each index head h < Hi, blocks 0..nb-1 (nb = floor(pos/S) + 1)
;; when nb <= topk, else the first `init` and last `local` blocks plus the best-scoring others
;; (ties to the lower index), ascending, into out[(h*T + t)*topk ..], unused slots -1. Every
;; head of a token is scored in one pass over its index keys (each block's keys read once
;; from memory for all heads). q [T, Hi*Di]; idxK [P, S, Di]. Scratch (one per thread):
;; scores (f32, >= Hi * max nb), taken (bytes, >= max nb), tmp (32 bytes).
  (func (export "msa_select") (param $q i32) (param $kc i32) (param $meta i32) (param $out i32)
      (param $T i32) (param $u0 i32) (param $u1 i32) (param $ustep i32) (param $S i32) (param $Hi i32)
      (param $Di i32) (param $topk i32) (param $init i32) (param $local i32) (param $sc i32) (param $taken i32)
      (param $tmp i32)
    (local $t i32) (local $pos i32) (local $nb i32)
    (local.set $t (local.get $u0))
    (block $units_done
      (loop $unit
        (br_if $units_done (i32.ge_u (local.get $t) (local.get $u1)))
        (local.set $pos (i32.load offset=0 (i32.add (local.get $meta) (i32.shl (local.get $t) (i32.const 3)))))
        (local.set $nb (i32.add (i32.div_u (local.get $pos) (local.get $S)) (i32.const 1)))
        (if (i32.gt_u (local.get $nb) (local.get $topk))
          (then
            (call $msaScores
              (i32.add (local.get $q) (i32.shl (i32.mul (i32.mul (local.get $t) (local.get $Hi)) (local.get $Di)) (i32.const 2)))
              (local.get $kc)
              (i32.load offset=4 (i32.add (local.get $meta) (i32.shl (local.get $t) (i32.const 3))))
              (local.get $pos) (local.get $S) (local.get $Hi) (local.get $Di) (i32.const 0) (local.get $nb)
              (local.get $nb) (local.get $sc) (local.get $tmp))))
        (call $selectToken (local.get $out) (local.get $T) (local.get $t) (local.get $nb) (local.get $Hi)
          (local.get $topk) (local.get $init) (local.get $local) (local.get $sc) (local.get $nb) (local.get $taken))
        (local.set $t (i32.add (local.get $t) (local.get $ustep)))
        (br $unit))))

;; The second phase of a split selection: for the work units u = u0, u0 + ustep, ... < u1
;; (unit = token t), msa_select's picks from the scores msa_scores left at
;; sc[(t*Hi + h)*nbs ..]. Scratch: taken (bytes, >= max nb).
  (func (export "msa_pick") (param $out i32) (param $meta i32) (param $sc i32) (param $T i32)
      (param $u0 i32) (param $u1 i32) (param $ustep i32) (param $S i32) (param $Hi i32) (param $topk i32)
      (param $init i32) (param $local i32) (param $nbs i32) (param $taken i32)
    (local $t i32)
    (local.set $t (local.get $u0))
    (block $units_done
      (loop $unit
        (br_if $units_done (i32.ge_u (local.get $t) (local.get $u1)))
        (call $selectToken (local.get $out) (local.get $T) (local.get $t)
          (i32.add (i32.div_u (i32.load (i32.add (local.get $meta) (i32.shl (local.get $t) (i32.const 3)))) (local.get $S)) (i32.const 1))
          (local.get $Hi) (local.get $topk) (local.get $init) (local.get $local)
          (i32.add (local.get $sc) (i32.shl (i32.mul (i32.mul (local.get $t) (local.get $Hi)) (local.get $nbs)) (i32.const 2)))
          (local.get $nbs) (local.get $taken))
        (local.set $t (i32.add (local.get $t) (local.get $ustep)))
        (br $unit))))

  ;; Token t's selection for every index head h < Hi from its scores sc[h*nbs + b] (b < nb;
  ;; unread when nb <= topk) into out[(h*T + t)*topk ..].
  (func $selectToken (param $out i32) (param $T i32) (param $t i32) (param $nb i32) (param $Hi i32)
      (param $topk i32) (param $init i32) (param $local i32) (param $sc i32) (param $nbs i32) (param $taken i32)
    (local $h i32) (local $dst i32) (local $b i32)
    (block $heads_done
      (loop $head
        (br_if $heads_done (i32.ge_u (local.get $h) (local.get $Hi)))
        (local.set $dst (i32.add (local.get $out) (i32.shl (i32.mul (i32.add (i32.mul (local.get $h) (local.get $T)) (local.get $t)) (local.get $topk)) (i32.const 2))))
        (if (i32.le_u (local.get $nb) (local.get $topk))
          (then
            (local.set $b (i32.const 0))
            (block $d (loop $l
              (br_if $d (i32.ge_u (local.get $b) (local.get $topk)))
              (i32.store (i32.add (local.get $dst) (i32.shl (local.get $b) (i32.const 2)))
                (select (local.get $b) (i32.const -1) (i32.lt_u (local.get $b) (local.get $nb))))
              (local.set $b (i32.add (local.get $b) (i32.const 1)))
              (br $l))))
          (else
            (call $pick (local.get $dst) (i32.add (local.get $sc) (i32.shl (i32.mul (local.get $h) (local.get $nbs)) (i32.const 2)))
              (local.get $nb) (local.get $topk) (local.get $init) (local.get $local) (local.get $taken))))
        (local.set $h (i32.add (local.get $h) (i32.const 1)))
        (br $head))))

  ;; One head's pick from its block scores sc [nb] (nb > topk) into dst [topk]; taken (bytes,
  ;; nb) is left cleared.
  (func $pick (param $dst i32) (param $sc i32) (param $nb i32) (param $topk i32) (param $init i32)
      (param $local i32) (param $taken i32)
    (local $b i32) (local $lo i32) (local $hi i32) (local $n i32) (local $best i32) (local $bs f32) (local $s f32) (local $i i32)
    (local.set $lo (select (local.get $init) (local.get $nb) (i32.lt_u (local.get $init) (local.get $nb))))
    (local.set $hi (i32.sub (local.get $nb) (local.get $local)))
    (local.set $hi (select (local.get $hi) (local.get $lo) (i32.gt_s (local.get $hi) (local.get $lo))))
    ;; forced blocks
    (local.set $b (i32.const 0))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $b) (local.get $nb)))
      (i32.store8 (i32.add (local.get $taken) (local.get $b))
        (i32.or (i32.lt_u (local.get $b) (local.get $lo)) (i32.ge_u (local.get $b) (local.get $hi))))
      (local.set $b (i32.add (local.get $b) (i32.const 1)))
      (br $l)))
    (local.set $n (i32.add (local.get $lo) (i32.sub (local.get $nb) (local.get $hi))))
    ;; best-scoring others, one pass per free slot
    (block $picked
      (loop $pick
        (br_if $picked (i32.ge_u (local.get $n) (local.get $topk)))
        (local.set $best (i32.const -1))
        (local.set $b (local.get $lo))
        (block $d (loop $l
          (br_if $d (i32.ge_u (local.get $b) (local.get $hi)))
          (if (i32.eqz (i32.load8_u (i32.add (local.get $taken) (local.get $b))))
            (then
              (local.set $s (f32.load (i32.add (local.get $sc) (i32.shl (local.get $b) (i32.const 2)))))
              (if (i32.or (i32.lt_s (local.get $best) (i32.const 0)) (f32.gt (local.get $s) (local.get $bs)))
                (then (local.set $best (local.get $b)) (local.set $bs (local.get $s))))))
          (local.set $b (i32.add (local.get $b) (i32.const 1)))
          (br $l)))
        (br_if $picked (i32.lt_s (local.get $best) (i32.const 0)))
        (i32.store8 (i32.add (local.get $taken) (local.get $best)) (i32.const 1))
        (local.set $n (i32.add (local.get $n) (i32.const 1)))
        (br $pick)))
    ;; taken blocks ascending, then -1; taken cleared
    (local.set $i (i32.const 0))
    (local.set $b (i32.const 0))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $b) (local.get $nb)))
      (if (i32.and (i32.load8_u (i32.add (local.get $taken) (local.get $b))) (i32.lt_u (local.get $i) (local.get $topk)))
        (then
          (i32.store (i32.add (local.get $dst) (i32.shl (local.get $i) (i32.const 2))) (local.get $b))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))))
      (i32.store8 (i32.add (local.get $taken) (local.get $b)) (i32.const 0))
      (local.set $b (i32.add (local.get $b) (i32.const 1)))
      (br $l)))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $i) (local.get $topk)))
      (i32.store (i32.add (local.get $dst) (i32.shl (local.get $i) (i32.const 2))) (i32.const -1))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $l))))
)
