#!/usr/bin/env bash
# The serving path on one GPU (issue 3 + 6): `serve --backend cuda` with the bundled model,
# then the project's own tools against it: bench serve (random 256 in / 128 out, 128 prompts,
# concurrency 1,16,64) and eval stop-rate on 200 held-out problems. Also the golden tiny-moe
# forward on CUDA for comparison against the float64 reference. Needs .device/ and dist/
# carried (the golden case and the held-out set are in the clone); results go to $OUT.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
IDS=$(node -e "console.log(require('./test/fixtures/golden/tiny-moe/expect.json').ids.join(','))")
node dist/cli/main.js forward --backend cuda --model test/fixtures/golden/tiny-moe --ids "$IDS" --out "$OUT/cuda-forward.json" 2>&1 | tail -3
node dist/cli/main.js serve --backend cuda --port 8000 > /tmp/serve.log 2>&1 &
SERVER=$!
for _ in $(seq 1 120); do curl -sf http://127.0.0.1:8000/health > /dev/null && break; sleep 1; done
head -3 /tmp/serve.log
node dist/cli/main.js bench serve --backend openai-chat --dataset-name random --random-input-len 256 \
  --random-output-len 128 --random-range-ratio 1 --num-prompts 128 --max-concurrency 1,16,64 \
  --ignore-eos --output-file "$OUT/bench-cuda.jsonl" 2>&1 | tail -25
node dist/cli/main.js eval stop-rate --dataset data/tiny-m3/heldout-gsm8k.jsonl --num-examples 200 \
  --max-tokens 1024 --concurrency 64 --output "$OUT/stop-cuda.jsonl" 2>&1 | tail -10
kill $SERVER; wait $SERVER 2>/dev/null
tail -3 /tmp/serve.log
