#!/bin/bash
# One device call for the tiny model (issue 18; docs/tiny-model.md, "Run 7"): fine-tune the bundled
# checkpoint (models/moeserve-tiny-m3 of the lead's tree, checked against TM_SHA) with
# training/gpu_run.sh on data generated there, then run `npm run eval:tiny`'s built JS against
# the new weights on the device's CPU (TM_EVALS: main = the Done-when set, fresh = the fresh
# held-out set, sealed = the sealed set, sealed2 = the second sealed set (session 9), fp8 = the main set under --quantization fp8) while train.py's PyTorch eval runs
# on the GPU. Everything ends by TM_END s; results under $OUT/tiny-model/. pack.sh writes this
# file as gpu.sh beside tree.tgz with the TM_* settings of the call in front.
T0=$(date +%s)
N=tiny-model
ROOT=$PWD
D=$(cd "$(dirname "$0")" && pwd)
W=/tmp/$N
R=/tmp/tm-out
O="$OUT/$N"
END=${TM_END:-378}
rm -rf "$W" "$R"
mkdir -p "$W" "$R" "$O"
tar xzf "$D/tree.tgz" -C "$W" || exit 1
[ -f "$ROOT/.device/env.sh" ] && source "$ROOT/.device/env.sh"
ln -sfn "$ROOT/node_modules" "$W/node_modules"
INIT="$ROOT/models/moeserve-tiny-m3/model.safetensors"
# TM_INIT: a model.safetensors shipped beside gpu.sh (a continuation of an unbundled run), checked against TM_SHA.
[ -n "$TM_INIT" ] && INIT="$D/$TM_INIT"
echo "${TM_SHA:-9ffdd05af469d7eef1cf41d35b055d452e3511e8e6f11fa47e3ba372dc38eff3}  $INIT" | sha256sum -c || exit 1
el() { echo $(( $(date +%s) - T0 )); }
cd "$W"
# gpu_run.sh: training ends RESERVE s before its deadline (BUDGET - 15), the reference logits
# follow, then the PyTorch eval until its timeout.
OUT=$R BUDGET=${TM_BUDGET:-340} RESERVE=${TM_RESERVE:-60} NUM=${TM_NUM:-200000} TPB=${TM_TPB:-65536} \
  LR=${TM_LR:-1.5e-3} SEED=$TM_SEED EVAL_LIMIT=$TM_EVAL_LIMIT INIT="$INIT" \
  bash training/gpu_run.sh > "$O/gpu_run.out" 2>&1 &
GP=$!
while ! grep -q reference_done_s "$R/$N/train.out" 2>/dev/null; do
  kill -0 $GP 2>/dev/null || break
  sleep 2
done
echo "reference logits at $(el) s"
M="$R/$N/model"
evl() {  # name, seconds kept for what follows, eval:tiny options
  local name=$1 keep=$2
  shift 2
  timeout $((END - keep - $(el))) node dist/tools/tiny-eval.js --model "$M" ${TM_LIMIT:+--limit $TM_LIMIT} "$@" \
    --output "$O/eval-tiny-$name.json" > "$O/eval-tiny-$name.out" 2>&1
  echo "eval $name exit $? at $(el) s"
}
one_eval() {
  case $1 in
    main) evl main ${TM_MAIN_KEEP:-40} --set data/tiny-m3/eval-tiny.json ;;
    fresh) evl fresh ${TM_FRESH_KEEP:-25} --port 8393 --set data/tiny-m3/eval-tiny-fresh.json ;;
    sealed) evl sealed ${TM_SEALED_KEEP:-0} --port 8394 --set data/tiny-m3/eval-tiny-sealed.json ;;
    sealed2) evl sealed2 ${TM_SEALED2_KEEP:-0} --port 8395 --set data/tiny-m3/eval-tiny-sealed2.json ;;
    fp8) evl fp8 0 --port 8392 --quantization fp8 --set data/tiny-m3/eval-tiny.json ;;
  esac
}
# TM_EVALS: names in order; '|' splits them into groups that run at the same time ('main|fresh
# sealed': the main set beside the fresh then the sealed one), each server on its own port.
if [ -f "$M/reference-logits.json" ]; then
  IFS='|' read -ra GROUPS_ <<< "${TM_EVALS:-main fresh fp8}"
  EP=()
  for g in "${GROUPS_[@]}"; do
    (for e in $g; do one_eval $e; done) &
    EP+=($!)
  done
  wait "${EP[@]}"
fi
wait $GP
echo "gpu_run.sh exit $? at $(el) s"
tar czf "$O/run.tgz" -C "$R" "$N"
cp "$R/$N/train-log.json" "$R/$N/gen.out" "$O/" 2>/dev/null
tail -25 "$O/gpu_run.out"
TE=${TM_EVALS:-main fresh fp8}
for e in ${TE//|/ }; do tail -14 "$O/eval-tiny-$e.out" 2>/dev/null; done
echo "total $(el) s"
