#!/bin/bash
# Tiny-model run 7 (issue 18) as one device call of at most 400 s (ends by TM_END=378 s): fine-tune the bundled run 5
# (models/moeserve-tiny-m3 of the lead's tree, checked by its sha256) on run 7's data
# (training/ as shipped in tree.tgz), then run `npm run eval:tiny`'s built JS against the new
# weights on the device's CPU (bf16, the fresh held-out set, then --quantization fp8 as time allows) while train.py's
# PyTorch eval runs on the GPU. Run from the lead's repo root; results under $OUT/tiny-model/.
T0=$(date +%s)
N=tiny-model
ROOT=$PWD
W=/tmp/$N
R=/tmp/tm-out
O="$OUT/$N"
mkdir -p "$W" "$R" "$O"
tar xzf "$ROOT/.xfer-$N/tree.tgz" -C "$W" || exit 1
[ -f "$ROOT/.device/env.sh" ] && source "$ROOT/.device/env.sh"
ln -sfn "$ROOT/node_modules" "$W/node_modules"
INIT="$ROOT/models/moeserve-tiny-m3/model.safetensors"
echo "9ffdd05af469d7eef1cf41d35b055d452e3511e8e6f11fa47e3ba372dc38eff3  $INIT" | sha256sum -c || exit 1
el() { echo $(( $(date +%s) - T0 )); }
cd "$W"
# gpu_run.sh: training ends RESERVE s before its deadline (BUDGET - 15), the reference logits
# follow, then the PyTorch eval until its timeout.
OUT=$R BUDGET=${TM_BUDGET:-340} RESERVE=${TM_RESERVE:-60} NUM=${TM_NUM:-200000} TPB=${TM_TPB:-65536} LR=1.5e-3 INIT="$INIT" \
  bash training/gpu_run.sh > "$O/gpu_run.out" 2>&1 &
GP=$!
while ! grep -q reference_done_s "$R/$N/train.out" 2>/dev/null; do
  kill -0 $GP 2>/dev/null || break
  sleep 2
done
echo "reference logits at $(el) s"
M="$R/$N/model"
if [ -f "$M/reference-logits.json" ]; then
  timeout $((${TM_END:-378} - 40 - $(el))) node dist/tools/tiny-eval.js --model "$M" --set data/tiny-m3/eval-tiny.json ${TM_LIMIT:+--limit $TM_LIMIT} \
    --output "$O/eval-tiny.json" > "$O/eval-tiny.out" 2>&1
  echo "eval bf16 exit $? at $(el) s"
  timeout $((${TM_END:-378} - 25 - $(el))) node dist/tools/tiny-eval.js --model "$M" --port 8393 \
    --set data/tiny-m3/eval-tiny-fresh.json --output "$O/eval-tiny-fresh.json" > "$O/eval-tiny-fresh.out" 2>&1
  echo "eval fresh exit $? at $(el) s"
  timeout $((${TM_END:-378} - $(el))) node dist/tools/tiny-eval.js --model "$M" --quantization fp8 --port 8392 \
    --set data/tiny-m3/eval-tiny.json ${TM_LIMIT:+--limit $TM_LIMIT} --output "$O/eval-tiny-fp8.json" > "$O/eval-tiny-fp8.out" 2>&1
  echo "eval fp8 exit $? at $(el) s"
fi
wait $GP
echo "gpu_run.sh exit $? at $(el) s"
tar czf "$O/run7.tgz" -C "$R" "$N"
cp "$R/$N/train-log.json" "$R/$N/gen.out" "$O/" 2>/dev/null
tail -25 "$O/gpu_run.out"
tail -12 "$O/eval-tiny.out" 2>/dev/null
tail -4 "$O/eval-tiny-fresh.out" 2>/dev/null
tail -12 "$O/eval-tiny-fp8.out" 2>/dev/null
echo "total $(el) s"
