#!/usr/bin/env bash
# One GPU run for issue 12: `specnb measure` with CUDA and bf16 on the bundled pair, alpha from
# logged traffic (the stored responses) and its speed against assisted generation, then a larger
# pair trained on the GPU in a few minutes (`python -m specnb.measure.train --recipe gpu`) and measured
# the same way. Every stage has its own time cap and the whole run stays under a total budget
# (SPECNB_GPU_TOTAL_S, default 440 s), so the script always ends and writes what it has.
#
#   bash scripts/gpu_measure.sh                         # on the GPU machine, from the repo root
#   SPECNB_GPU_SMOKE=1 OUT=/tmp/gpu-smoke bash scripts/gpu_measure.sh   # CPU smoke test (~3 min)
#
# Needs a Python with torch, transformers, tokenizers, safetensors, pandas, numpy, pyyaml (no
# pip install: specnb runs from the checkout with PYTHONPATH=.); no network (HF_HUB_OFFLINE=1).
# PYTHON names it; default: the project's .venv/bin/python when there is one, else python3.
# The script checks first that it imports torch and transformers (exit 2 and a message if not).
# Exit status: 0 when every stage ran, 1 when any stage failed or timed out (run.log says
# which; the files of the others are still written), 2 when the Python cannot run it at all.
# Writes at most 8 flat files to $OUT:
#   run.log            every stage's command, exit status, seconds; stderr of each stage
#   bundled.json       specnb measure --json, bundled pair (target-4x256, both drafts)
#   bundled_logged.json  specnb measure --logged --json, the stored held-out responses
#   bench_logged.txt   benchmarks/bench_alpha_logged.py: logged alpha vs assisted generation
#   train.log          python -m specnb.measure.train --recipe gpu (stdout)
#   gpu_training.json  training.json of the GPU-trained pair
#   gpu_pair.json      specnb measure --json on the GPU-trained pair
#   summary.md         the figures side by side, with the GPU's name and library versions
set -u
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/specnb-gpu-out}"
mkdir -p "$OUT"
if [ -n "${PYTHON:-}" ]; then PY=$PYTHON
elif [ -x .venv/bin/python ]; then PY=.venv/bin/python
else PY=python3
fi
if ! "$PY" -c "import torch, transformers" 2>/dev/null; then
  echo "gpu_measure.sh: $PY cannot import torch and transformers; set PYTHON to an" \
       "interpreter that has them (e.g. PYTHON=.venv/bin/python after make install)" >&2
  exit 2
fi
export PYTHONPATH=".${PYTHONPATH:+:$PYTHONPATH}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=true
export PYTHONUNBUFFERED=1
TOTAL="${SPECNB_GPU_TOTAL_S:-440}"
PAIR="${SPECNB_GPU_PAIR_DIR:-/tmp/specnb-gpu-pair}"
LOGGED=data/prompts/stdlib_heldout_responses.jsonl

if [ "${SPECNB_GPU_SMOKE:-0}" = 1 ]; then
  # same stages and code paths on a CPU, tiny settings (bf16 on the CPU exercises the dtype)
  DEV=(--device cpu --dtype bfloat16)
  BUNDLED=(--per-task 1 --gamma 1 3 --temperature 0 1 --max-new-tokens 16 --repeats 1)
  LOGGED_ARGS=(--per-task 1)
  BENCH=(--per-task 1 --gamma 1 3 --dtype float32)
  TRAIN=(--recipe smoke --device cpu --minutes 0.1)
  # the smoke recipe has 64 positions, fewer than the held-out prompts need: short prompts
  SHORT=$(mktemp --suffix=.jsonl)
  printf '%s\n' '{"task": "code", "prompt": "def f(x):\n    return"}' \
    '{"task": "prose", "prompt": "# Return the number of"}' > "$SHORT"
  GPU_PAIR=(--per-task 1 --gamma 1 2 3 --temperature 0 1 --max-new-tokens 16 --repeats 1 --no-pld
            --prompts "$SHORT")
  CAP_BUNDLED=150; CAP_LOGGED=90; CAP_BENCH=150; CAP_TRAIN=120; CAP_PAIR=120
else
  DEV=(--device cuda --dtype bfloat16)
  # sizes from the 2026-11-30 H200 run: per-task 2, gamma 1 2 3 5, T 0 1 did not finish in 80 s
  # (transformers' assisted generation costs ~30 ms of host time per round there); these did,
  # in 35-50 s (data/measured/h200_measure/)
  BUNDLED=(--per-task 1 --gamma 1 3 --temperature 0 1 --max-new-tokens 32 --repeats 1)
  LOGGED_ARGS=(--per-task 0)
  # float32: the stored responses are the target's float32 greedy output; in bf16 the target's
  # own argmax differs from them at some positions, and the agreement check would test numerics
  BENCH=(--per-task 2 --gamma 1 2 3 5 --dtype float32)
  TRAIN=(--recipe gpu --device cuda --minutes "${SPECNB_GPU_TRAIN_MIN:-2.2}")
  GPU_PAIR=(--per-task 1 --gamma 1 3 5 --temperature 0 1 --max-new-tokens 48 --repeats 1 --no-pld)
  CAP_BUNDLED=100; CAP_LOGGED=30; CAP_BENCH=45; CAP_TRAIN=200; CAP_PAIR=100
fi

T0=$(date +%s)
FAILED=()
LOG="$OUT/run.log"
: > "$LOG"

# stage NAME CAP STDOUT_FILE CMD...: run CMD with stdout to STDOUT_FILE, stderr to run.log,
# capped at min(CAP, what is left of TOTAL minus 15 s for the summary); never fails the script
stage() {
  local name=$1 cap=$2 out=$3; shift 3
  local left=$(( TOTAL - ($(date +%s) - T0) - 15 ))
  if [ "$left" -lt "$cap" ]; then cap=$left; fi
  if [ "$cap" -lt 10 ]; then
    echo "== $name: skipped, no time left (total budget ${TOTAL}s)" >> "$LOG"
    FAILED+=("$name (skipped)")
    return 0
  fi
  echo "== $name (cap ${cap}s) $(date -u +%H:%M:%S): $*" >> "$LOG"
  local s=$(date +%s)
  timeout --kill-after=5 "$cap" "$@" > "$out" 2>> "$LOG"
  local rc=$?
  echo "== $name: exit $rc after $(( $(date +%s) - s ))s$([ $rc = 124 ] && echo ' (timed out)')" >> "$LOG"
  [ "$rc" = 0 ] || FAILED+=("$name")
  return 0
}

{
  echo "== machine"
  (nvidia-smi -L || echo "no nvidia-smi") 2>&1
  "$PY" -c "import sys, torch, transformers; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'available', torch.cuda.is_available(), 'transformers', transformers.__version__); print('gpu', torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)" 2>&1
} >> "$LOG"

stage bundled "$CAP_BUNDLED" "$OUT/bundled.json" \
  "$PY" -m specnb measure "${DEV[@]}" "${BUNDLED[@]}" --json --no-progress

stage bundled_logged "$CAP_LOGGED" "$OUT/bundled_logged.json" \
  "$PY" -m specnb measure --logged "$LOGGED" "${DEV[@]}" "${LOGGED_ARGS[@]}" --json --no-progress

stage bench_logged "$CAP_BENCH" "$OUT/bench_logged.txt" \
  "$PY" benchmarks/bench_alpha_logged.py "${DEV[0]}" "${DEV[1]}" "${BENCH[@]}"

rm -rf "$PAIR"
stage train "$CAP_TRAIN" "$OUT/train.log" \
  "$PY" -m specnb.measure.train "${TRAIN[@]}" --out "$PAIR"
[ -f "$PAIR/training.json" ] && cp "$PAIR/training.json" "$OUT/gpu_training.json"

TARGET=$(ls -d "$PAIR"/target* 2>/dev/null | head -1)
DRAFTS=$(ls -d "$PAIR"/draft* 2>/dev/null)
if [ -n "$TARGET" ] && [ -f "$TARGET/model.safetensors" ] && [ -n "$DRAFTS" ] \
   && ls $DRAFTS/model.safetensors > /dev/null 2>&1; then
  # shellcheck disable=SC2086
  stage gpu_pair "$CAP_PAIR" "$OUT/gpu_pair.json" \
    "$PY" -m specnb measure --target "$TARGET" --draft $DRAFTS "${DEV[@]}" "${GPU_PAIR[@]}" \
    --json --no-progress
else
  echo "== gpu_pair: skipped, the trained pair is incomplete (see train.log)" >> "$LOG"
  FAILED+=("gpu_pair (skipped)")
fi

timeout 15 "$PY" scripts/gpu_summary.py "$OUT" > "$OUT/summary.md" 2>> "$LOG" || FAILED+=(summary)
[ -n "${SHORT:-}" ] && rm -f "$SHORT"
echo "== done in $(( $(date +%s) - T0 ))s" >> "$LOG"
ls -l "$OUT" >> "$LOG"
if [ "${#FAILED[@]}" -gt 0 ]; then
  echo "gpu_measure.sh: ${#FAILED[@]} stage(s) failed: ${FAILED[*]}; see $LOG" >&2
  exit 1
fi
echo "gpu_measure.sh: every stage ran; outputs in $OUT (summary.md)" >&2
exit 0
