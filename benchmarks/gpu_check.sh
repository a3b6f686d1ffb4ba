#!/usr/bin/env bash
# One prepared GPU check (~5 minutes on an H200, capped at GPU_CHECK_SECONDS, default 540 s).
#
# Writes random-initialised models of the real shapes into a temporary folder
# (benchmarks/random_model.py: throughput does not depend on weights when replies run to
# max_new_tokens), then runs on CUDA in bfloat16, each step under `timeout`:
#   1. generate_throughput, SmolLM2-135M shape, batch 1 / 8 / 64 / 256, 60 new tokens
#   2. simulate_throughput, 64 dialogues in process, live scoring (random MiniLM-L6
#      cross-encoder + sentence encoder; the safety index uses numpy where faiss is missing)
#   3. sft_step, 135M shape, batch 8 x 256 tokens, if trl and datasets import (else skipped)
#   4. generate_throughput, SmolLM2-1.7B shape (last: the largest folder to write)
# Results (one log per step, summary.txt with the tables) go to "$OUT" if set, else
# ./gpu-results. Run from the repository root:
#
#   bash benchmarks/gpu_check.sh
#
# Environment: PYTHON (default python3); CHAT_TOKENIZER / MINILM_TOKENIZER: real tokenizer
# folders to copy (else synthetic ones: prompt token counts differ, see random_model.py);
# GPU_CHECK_SECONDS: the overall budget; steps that would not fit are cut or skipped;
# GPU_CHECK_DEVICE / GPU_CHECK_DTYPE (default cuda / bfloat16) to try the plumbing elsewhere.
set -u

PY=${PYTHON:-python3}
DEVICE=${GPU_CHECK_DEVICE:-cuda} DTYPE=${GPU_CHECK_DTYPE:-bfloat16}
RESULTS=${OUT:-./gpu-results}
BUDGET=${GPU_CHECK_SECONDS:-540}
mkdir -p "$RESULTS"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export PYTHONPATH=. MORALSIM_CACHE="$WORK/cache" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export HF_HUB_DISABLE_PROGRESS_BARS=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
SUMMARY="$RESULTS/summary.txt"
START=$(date +%s)
: >"$SUMMARY"

# step NAME LIMIT_SECONDS COMMAND...: run under timeout (cut to what is left of the budget),
# log to $RESULTS/NAME.log, copy the log's last lines (the tables) into summary.txt.
step() {
  local name=$1 limit=$2
  shift 2
  local left=$((BUDGET - ($(date +%s) - START)))
  if ((left < 30)); then
    echo "== $name: skipped, ${left} s of the budget left" | tee -a "$SUMMARY"
    return 1
  fi
  ((limit > left)) && limit=$left
  local t0 rc
  t0=$(date +%s)
  timeout "$limit" "$@" >"$RESULTS/$name.log" 2>&1
  rc=$?
  {
    echo "== $name: rc $rc in $(($(date +%s) - t0)) s (limit $limit s)"
    grep -v -e "Loading weights" -e "Writing model" -e "Warning" -e "warnings.warn" \
      "$RESULTS/$name.log" | tail -n 12
    echo
  } | tee -a "$SUMMARY"
  return $rc
}

tokenizer_arg() { [ -n "${1:-}" ] && echo "--tokenizer $1"; }

step environment 60 bash -c "nvidia-smi; $PY -c '
import importlib, sys, torch
print(sys.version.split()[0], \"torch\", torch.__version__, \"cuda\", torch.cuda.is_available(),
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else \"-\")
for name in (\"transformers\", \"tokenizers\", \"peft\", \"accelerate\", \"sentence_transformers\",
             \"trl\", \"datasets\", \"faiss\", \"ray\", \"yaml\", \"pydantic\"):
    try:
        print(name, getattr(importlib.import_module(name), \"__version__\", \"?\"))
    except Exception as exc:
        print(name, \"MISSING\", type(exc).__name__)
import agents.hf, evaluators.stack, simulators.inprocess, scenarios.pack
print(\"project imports ok\")
'"

M135="$WORK/smollm2-135m" M17="$WORK/smollm2-1.7b"
CLS="$WORK/minilm-classifier" ENC="$WORK/minilm-encoder"
# shellcheck disable=SC2046
step build-135m 120 "$PY" benchmarks/random_model.py --shape smollm2-135m --out "$M135" \
  $(tokenizer_arg "${CHAT_TOKENIZER:-}")
# shellcheck disable=SC2046
step build-minilm 120 bash -c "$PY benchmarks/random_model.py --shape minilm-l6-classifier \
  --out '$CLS' $(tokenizer_arg "${MINILM_TOKENIZER:-}") && $PY benchmarks/random_model.py \
  --shape minilm-l6-encoder --out '$ENC' $(tokenizer_arg "${MINILM_TOKENIZER:-}")"

step generate-135m 200 "$PY" benchmarks/generate_throughput.py --model "$M135" \
  --device "$DEVICE" --dtype "$DTYPE" --batch-sizes 1 8 64 256 --reps 2 --max-new-tokens 60

step simulate-135m-64 200 "$PY" benchmarks/simulate_throughput.py --dialogues 64 \
  --max-new-tokens 40 --device "$DEVICE" --dtype "$DTYPE" --model "$M135" --scorer "$CLS" \
  --encoder "$ENC"

if "$PY" -c "import trl, datasets" >/dev/null 2>&1; then
  step sft-step-135m 180 "$PY" benchmarks/sft_step.py --model "$M135" --device "$DEVICE" \
    --dtype "$DTYPE" --batch-size 8 --max-length 256 --steps 20 --warmup 3 --block 5
else
  echo "== sft-step-135m: skipped, trl or datasets does not import here (see the docstring" \
    "of benchmarks/sft_step.py for bringing them offline)" | tee -a "$SUMMARY"
fi

# shellcheck disable=SC2046
step build-1.7b 180 "$PY" benchmarks/random_model.py --shape smollm2-1.7b --out "$M17" \
  $(tokenizer_arg "${CHAT_TOKENIZER:-}") &&
  step generate-1.7b 200 "$PY" benchmarks/generate_throughput.py --model "$M17" \
    --device "$DEVICE" --dtype "$DTYPE" --batch-sizes 1 8 64 256 --reps 2 --max-new-tokens 60

echo "== total $(($(date +%s) - START)) s; results in $RESULTS" | tee -a "$SUMMARY"
