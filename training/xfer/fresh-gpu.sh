#!/bin/bash
# One device call of a tiny model trained in several calls (issue 18; docs/tiny-model.md, "Run 11"):
# a fresh model of MODEL_FLAGS' size (TM_INIT unset), or a continuation from the model.safetensors
# TM_INIT shipped beside this script (checked against TM_SHA). training/gpu_run.sh generates the
# data there and trains until BUDGET; no eval:tiny runs here (it runs on the CPU machine). Back
# under $OUT (at most 8 files, each under 16 MiB): gpu_run.out, train-log.json, train.out, gen.out,
# the bf16 weights split in 12 MiB parts (cat model.safetensors.part* > model.safetensors) and
# meta.tgz (config, tokenizer, reference logits, PyTorch eval replies). pack.sh writes this file
# as gpu.sh beside tree.tgz (BODY=training/xfer/fresh-gpu.sh) with the TM_* settings in front.
T0=$(date +%s)
D=$(cd "$(dirname "$0")" && pwd)
W=/tmp/fresh-tm
R=/tmp/fresh-tm-out
rm -rf "$W" "$R"
mkdir -p "$W" "$R" "$OUT"
tar xzf "$D/tree.tgz" -C "$W" || exit 1
INIT=none
if [ -n "$TM_INIT" ]; then
  INIT="$D/$TM_INIT"
  echo "$TM_SHA  $INIT" | sha256sum -c || exit 1
fi
cd "$W"
OUT=$R BUDGET=${TM_BUDGET:-400} RESERVE=${TM_RESERVE:-15} NUM=${TM_NUM:-200000} TPB=${TM_TPB:-65536} \
  LR=${TM_LR:-1.5e-3} SEED=$TM_SEED EVAL_LIMIT=${TM_EVAL_LIMIT:-1} INIT="$INIT" MODEL_FLAGS="$TM_MODEL" \
  DENSE_FRAC=${TM_DENSE_FRAC:-0} WARMUP=${TM_WARMUP:-30} TRAIN_FLAGS="$TM_TRAIN_FLAGS" \
  bash training/gpu_run.sh > "$OUT/gpu_run.out" 2>&1
echo "gpu_run.sh exit $? at $(( $(date +%s) - T0 )) s"
M="$R/tiny-model"
cp "$M/train-log.json" "$M/train.out" "$M/gen.out" "$OUT/" 2>/dev/null
sha256sum "$M/model/model.safetensors"
split -b 12M -d "$M/model/model.safetensors" "$OUT/model.safetensors.part"
(cd "$M" && tar czf "$OUT/meta.tgz" $(ls model/config.json model/tokenizer.json model/tokenizer_config.json \
  model/generation_config.json model/reference-logits.json eval-replies.jsonl 2>/dev/null))
tail -30 "$OUT/gpu_run.out"
ls -la "$OUT"
echo "total $(( $(date +%s) - T0 )) s"
