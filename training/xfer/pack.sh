#!/bin/bash
# Builds DEST/{gpu.sh,tree.tgz} for one tiny-model device call from this worktree
# (docs/tiny-model.md, "Run 7"): pack.sh DEST [TM_VAR=VALUE ...] puts the settings in front of
# tiny-gpu.sh. Run 7: pack.sh /work/main/.xfer-tiny-model (the defaults). BODY=training/xfer/fresh-gpu.sh
# pack.sh ... puts that script's body after the settings instead (run 11: a fresh, larger model in two calls).
set -e
cd "$(dirname "$0")/../.."
DEST=${1:?DEST}
shift
npm run -s build
S=$(mktemp -d)
mkdir -p "$S/tokenizer" "$S/golden" "$S/data/tiny-m3"
cp -r training "$S/" && rm -rf "$S/training/runs" "$S/training/xfer" "$S/training/__pycache__"
cp models/moeserve-tiny-m3/tokenizer.json models/moeserve-tiny-m3/tokenizer_config.json "$S/tokenizer/"
cp -r test/fixtures/golden/tiny-moe test/fixtures/golden/tiny-dense "$S/golden/"
cp data/tiny-m3/eval-tiny.json data/tiny-m3/eval-tiny-fresh.json data/tiny-m3/eval-tiny-sealed.json data/tiny-m3/eval-tiny-sealed2.json "$S/data/tiny-m3/"
cp -r dist package.json "$S/"
mkdir -p "$DEST"
tar czf "$DEST/tree.tgz" -C "$S" .
{
  echo '#!/bin/bash'
  for kv in "$@"; do echo "export $kv"; done
  tail -n +2 "${BODY:-training/xfer/tiny-gpu.sh}"
} > "$DEST/gpu.sh"
rm -rf "$S"
ls -la "$DEST"
