#!/bin/bash
# One time-bounded GPU call for the tiny model (issue 18): generate the data there (16 cores),
# fine-tune from the int8-packed run-3 weights, export the checkpoint with its reference logits,
# then the PyTorch eval as time allows. Everything lands under $OUT/tiny-model/ and the whole
# script ends by BUDGET seconds (default 520) after it starts. DRY=1 tests it on a CPU (byte tokenizer).
# SEED: another data and batch-order seed (a continuation sees new problems); EVAL_LIMIT: the PyTorch eval's item count.
# training/gpu_run.sh, run from a folder holding training/, tokenizer/ (tokenizer.json, tokenizer_config.json),
# golden/{tiny-moe,tiny-dense} and the starting weights INIT (docs/tiny-model.md, "Run 4", "Run 5"):
# a bf16 model.safetensors as it is, or pack_init.py's int8 .pt (default init/run3-int8.pt).
# INIT=none trains a fresh model of MODEL_FLAGS' size (run 11: --hidden 384 --layers 6 --expert-width 96);
# an INIT of another size needs its MODEL_FLAGS too (run 12: --experts 32, upcycle.py's weights);
# DENSE_FRAC, WARMUP and TRAIN_FLAGS (more train.py options: --sched-from/--sched-to, --no-post) pass through.
START=$(date +%s)
BUDGET=${BUDGET:-520}
set -o pipefail
O="$OUT/tiny-model"
mkdir -p "$O"
cd "$(dirname "$0")"  # training/
left() { echo $((START + BUDGET - $(date +%s))); }
timeout 30 python3 -c "import torch, tokenizers; print('torch', torch.__version__, 'tokenizers', tokenizers.__version__, torch.cuda.get_device_name())"
INIT=${INIT:-../init/run3-int8.pt}
case "$INIT" in
  none) ;;
  *.safetensors) cp "$INIT" /tmp/tm-init.safetensors || exit 1 ;;
  *) timeout 40 python3 pack_init.py unpack "$INIT" /tmp/tm-init.safetensors || exit 1 ;;
esac
timeout 90 python3 gen_data.py --out /tmp/tm-g --num "${NUM:-200000}" --workers 16 ${SEED:+--seed $SEED} $GEN_FLAGS \
  --template ../tokenizer/tokenizer_config.json | tee "$O/gen.out" || exit 1
timeout $(($(left) - 3)) python3 train.py --data /tmp/tm-g --out "$O/model" \
  --minutes 9 --deadline $((START + BUDGET - 15)) --reserve-s "${RESERVE:-50}" --save-every-s 90 \
  --tokenizer ../tokenizer/tokenizer.json $([ "$INIT" = none ] || echo --init /tmp/tm-init.safetensors) $MODEL_FLAGS \
  --tokens-per-batch "${TPB:-65536}" --max-len 1024 --lr "${LR:-1.5e-3}" --warmup "${WARMUP:-30}" --dense-frac "${DENSE_FRAC:-0}" \
  --index-every 2 --eval-max-new 320 --log-every 20 --golden ../golden/tiny-moe ../golden/tiny-dense ${DRY:+--dry-run} \
  ${SEED:+--seed $SEED} ${EVAL_LIMIT:+--eval-limit $EVAL_LIMIT} $TRAIN_FLAGS \
  > "$O/train.out" 2>&1
echo "train.py exit $? at $(( $(date +%s) - START )) s"
grep -v '"step"' "$O/train.out" | tail -12
grep '"step"' "$O/train.out" | awk 'NR % 10 == 1' | tail -12
ls -la "$O" "$O/model"
