#!/bin/bash
# One GPU call: generate the data there (16 cores), fine-tune from the bundled weights, export.
# Run from a folder holding training/, models/moeserve-tiny-m3/ and golden/ (see docs/tiny-model.md).
set -eo pipefail
MIN=${MIN:-4.2}  # INIT=path/to/model.safetensors to start from other weights
cd training
python3 -c "import torch, tokenizers; print('torch', torch.__version__, 'tokenizers', tokenizers.__version__, torch.cuda.get_device_name())"
time python3 gen_data.py --out /tmp/g --num ${NUM:-200000} --workers 16
python3 train.py --data /tmp/g --out "$OUT/model" --minutes "$MIN" \
  --tokenizer ../models/moeserve-tiny-m3/tokenizer.json --init "${INIT:-../models/moeserve-tiny-m3/model.safetensors}" \
  --tokens-per-batch 32768 --max-len 1024 --lr 1e-3 --warmup 50 --dense-frac 0 \
  --eval-max-new 320 --log-every 20 --golden ../golden/tiny-moe ../golden/tiny-dense
