#!/usr/bin/env bash
# Does training help? Train the moral bot from the embedded base on the core pack's train split
# (SFT, then DPO on top of the SFT adapter), train an independent judge (the default scorer's recipe without the pack's reference answers,
# which are the moral bot's SFT targets), simulate the base and the moral bot on the core TEST
# split with the same seed, flows and judge, compare them, and draw the blind hand-read sheet.
# Usage: bash training/base_vs_moral.sh [OUTPUT_DIR]   (default runs/experiment)
# Rerunning continues: a trained adapter and judge are reused, finished dialogues are kept.
set -euo pipefail
OUT=${1:-runs/experiment}
ADAPTER="$OUT/moral-smollm2"
DPO="$OUT/moral-smollm2-dpo"
JUDGE="$OUT/judge-independent"
COMMON=(--output-dir "$OUT" --seed 0 --num-dialogues 48
  --set "flows=[moraldial, sage, sage-rot, dit, prudence]"
  --set "evaluators.agreement_model=$JUDGE"
  --set probes.sage.questions=10 --set probes.sage-rot.questions=10
  --set probes.dit.dilemmas=2 --set probes.dit.orders=2 --set probes.prudence.questions=8)
resume() { [ -s "$OUT/$1/dialogues.jsonl" ] && echo --resume || true; }

[ -f "$JUDGE/scorer_card.json" ] || moralsim train scorer --independent --output "$JUDGE"
# the judge comes first so that the SFT run's stance accuracy is read by it, not by a scorer
# that has seen the SFT targets
[ -f "$ADAPTER/adapter_config.json" ] || moralsim train sft --preset moral-smollm2 \
  --set "stance_judge=$JUDGE" --output-dir "$ADAPTER"
[ -f "$DPO/adapter_config.json" ] || moralsim train dpo --preset moral-smollm2-dpo \
  --set "sft_adapter=$ADAPTER" --set "stance_judge=$JUDGE" --output-dir "$DPO"
python simulate.py --name base "${COMMON[@]}" $(resume base)
python simulate.py --name moral --set "bot.adapter=$ADAPTER" "${COMMON[@]}" $(resume moral)
python simulate.py --name moral-dpo --set "bot.adapter=$DPO" "${COMMON[@]}" $(resume moral-dpo)
moralsim compare "$OUT/base" "$OUT/moral"
moralsim compare "$OUT/moral" "$OUT/moral-dpo"
# Every first answer and related answer of each bot (48 + 48), shuffled, without bot or score,
# for a reader; the key keeps both judges' readings (the run's independent one and the single
# classifier agreement-minilm).
python -m training.hand_read sample "$OUT/base" "$OUT/moral" "$OUT/moral-dpo" --n 48 \
  --kind first --kind related \
  --out "$OUT/hand_read/blind.jsonl" --key "$OUT/hand_read/key.json" --also agreement-minilm
echo "label $OUT/hand_read/blind.jsonl (agree/neutral/disagree per item), then:"
echo "python -m training.hand_read score --key $OUT/hand_read/key.json --labels LABELS.jsonl"
