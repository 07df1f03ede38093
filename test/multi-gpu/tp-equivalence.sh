#!/usr/bin/env bash
# GPU equivalence of the parallel layouts (issue 4): the golden tiny-moe forward on CUDA with
# --tp 2 (NCCL; and the CPU communicator) and --ep / --sp, each written to $OUT for comparison
# against the one-GPU forward with `npx tsx test/multi-gpu/compare-layouts.ts DIR` here. Needs 2 GPUs, .device/ and
# dist/ (see shared/device/README.md); the golden case is bundled in test/fixtures/golden.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
M=test/fixtures/golden/tiny-moe
IDS=$(node -e "console.log(require('./$M/expect.json').ids.join(','))")
nvidia-smi topo -m 2>&1 | head -5
run() { # name, args...
  local name=$1; shift
  local t0=$(date +%s)
  timeout 120 node dist/cli/main.js forward --backend cuda --model $M --ids "$IDS" --out "$OUT/$name.json" "$@" > "/tmp/$name.log" 2>&1
  echo "$name rc=$? $(( $(date +%s) - t0 ))s $(tail -c 400 "/tmp/$name.log" | tr '\n' ' ')"
}
run tp1
run tp2 --tp 2
run tp2-ep --tp 2 --ep
run tp2-sp --tp 2 --sp
run tp2-ep-sp --tp 2 --ep --sp
run tp2-cpucomm --tp 2 --comm cpu
ls -la "$OUT"
