#!/usr/bin/env bash
# Does training help? Train the moral bot from the embedded base on the core pack's train split,
# simulate the base and the moral bot on the core TEST split with the same seed and flows, and
# compare them. Usage: bash training/base_vs_moral.sh [OUTPUT_DIR]   (default runs/experiment)
# Rerunning continues: a trained adapter is reused and finished dialogues are kept (--resume).
set -euo pipefail
OUT=${1:-runs/experiment}
ADAPTER="$OUT/moral-smollm2"
COMMON=(--output-dir "$OUT" --seed 0 --num-dialogues 48
  --set "flows=[moraldial, sage, dit, prudence]"
  --set probes.sage_questions=10 --set probes.sage_rot_prompt=true
  --set probes.dit_dilemmas=2 --set probes.dit_orders=2 --set probes.prudence_questions=8)
resume() { [ -s "$OUT/$1/dialogues.jsonl" ] && echo --resume || true; }

[ -f "$ADAPTER/adapter_config.json" ] || moralsim train sft --preset moral-smollm2 --output-dir "$ADAPTER"
python simulate.py --name base "${COMMON[@]}" $(resume base)
python simulate.py --name moral --set "bot.adapter=$ADAPTER" "${COMMON[@]}" $(resume moral)
moralsim compare "$OUT/base" "$OUT/moral"
