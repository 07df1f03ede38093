#!/usr/bin/env bash
# Issue 11's measurement (docs/benchmarks/gpu-serving.md), on the GPU machine with dist/ and
# dist/gpu/ built: served TPOT / ITL / tokens per SSE event at concurrency 1/8/32/64 on dummy
# real-dimension models (3 dense + 1 MoE, 3 dense + 5 MoE; graphs, and --enforce-eager at 1
# and 8), then the bench:gpu graph step at the same batches. Results go to $OUT.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export MOESERVE_KERNEL_CACHE=/tmp/kc
serve_bench() { # name layers extra-flags concurrencies
  local name=$1 layers=$2 flags=$3 concs=$4 M=/tmp/m3-$2l
  mkdir -p $M
  node -e "import('./dist/model/weights/random-presets.js').then(m=>require('fs').writeFileSync('$M/config.json', JSON.stringify(m.withNumLayers(m.PRESETS['minimax-m3'](),$layers))))"
  node dist/cli/main.js serve --backend cuda --model $M --load-format dummy --port 8011 --max-num-seqs 64 --max-model-len 4096 $flags > "$OUT/serve-$name.log" 2>&1 &
  local S=$!
  for _ in $(seq 1 150); do curl -sf http://127.0.0.1:8011/health > /dev/null && break; sleep 1; done
  for c in $concs; do
    local n=$(( c < 4 ? 6 : 2 * c ))
    timeout 100 node dist/cli/main.js bench serve --base-url http://127.0.0.1:8011 --backend openai --dataset-name random-words --random-input-len 200 --random-output-len 256 --random-range-ratio 1 --num-prompts $n --max-concurrency $c --ignore-eos --ttft-convention vllm --extra-request-body '{"logprobs":0}' --output-file "$OUT/serve.jsonl" > /tmp/b.txt 2>&1; (echo "== $name c=$c"; cat /tmp/b.txt) >> "$OUT/bench-all.txt"
    echo "$name c=$c $(grep -E 'Output token thr|Median TPOT|Median ITL|Median TTFT|Tokens per SSE|One-token|Failed' /tmp/b.txt | sed 's/  */ /g' | tr '\n' ';')"
  done
  kill $S; wait $S 2>/dev/null
}
serve_bench 4l-graphs 4 "" "1 8 32 64"
serve_bench 4l-eager 4 "--enforce-eager" "1 8"
serve_bench 8l-graphs 8 "" "1 8 32 64"
for m in 1 5; do
  timeout 120 node dist/gpu/bench/gpu-bench.js --moe-layers $m --context 1280 --batches 1,8,32,64 --prefill 512 --skip-check --out "$OUT/gb$m" > "$OUT/gpu-bench-$m.log" 2>&1
  echo "bench:gpu moe=$m rc=$?"; grep -E "decode B=|rror" "$OUT/gpu-bench-$m.log" | head -12
done
