#!/usr/bin/env bash
# Notebook 08 through papermill on a GPU machine with no package index (issue 17): the bundled
# pair and a pair trained there (`python -m specnb.measure.train --recipe gpu`), each with torch
# CPU threads 1 and torch's default, and dtype float32 and bfloat16 (2 x 2 x 2 = 8 runs of the
# notebook, both speculative loops each), so that the per-round slowdown seen on the H200
# (28-39 ms a round with 16 threads and bf16 against 9-15 ms with 1 thread and fp32,
# data/measured/h200_measure/) can be pinned on threads or on dtype.
#
#   bash scripts/build_wheelhouse.sh                      # here, with a package index
#   bash scripts/gpu_notebook.sh                          # there, from the repository root
#   DEVICE=cpu OUT=/tmp/nb-cpu bash scripts/gpu_notebook.sh   # self-test on a CPU, tiny sizes
#
# Needs python3 with torch, transformers, tokenizers, safetensors, pandas, numpy, matplotlib and
# pyyaml; papermill, nbclient and ipykernel come from the wheelhouse (WHEELHOUSE, default
# build/wheelhouse) with `pip install --no-index --find-links` when they are missing. No network
# (HF_HUB_OFFLINE=1). Every stage has a time cap (CAP_S per notebook run, TRAIN_MIN minutes of
# training). Writes to OUT (default /tmp/specnb-gpu-notebook):
#   run.log                 every stage's command, exit status and seconds
#   train.log               the training run's output
#   08_<pair>_threads<N>_<dtype>.ipynb   each executed notebook (outputs kept, records inside)
#   results.csv             one row per run, loop, draft, gamma, T: tau, speedup and its
#                           interval, t_round, t_target (ms), torch threads, dtype, GPU name
#   summary.md              per run and loop: median t_round, best greedy speedup
#   head_measure.json, head_replay.json   a real target with its published EAGLE-3 head (stage
#                           3b, only when HEAD_TARGET and HEAD_PATH name local folders holding the
#                           weights): `specnb measure --draft-head` (reference loop) and
#                           `replay_head` of that target's own responses to the bundled prompts
# Exit status: 0 when every notebook run succeeded, 1 otherwise (the failures are in run.log).
set -u
cd "$(dirname "$0")/.."
DEVICE="${DEVICE:-cuda}"
OUT="${OUT:-/tmp/specnb-gpu-notebook}"
PY="${PYTHON:-python3}"
WHEELS="${WHEELHOUSE:-build/wheelhouse}"
PAIR="${PAIR_DIR:-$OUT/pair}"
mkdir -p "$OUT"
export PYTHONPATH=".${PYTHONPATH:+:$PYTHONPATH}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1 MPLBACKEND=Agg
: > "$OUT/run.log"
log() { echo "$*" | tee -a "$OUT/run.log"; }

if [ "$DEVICE" = cpu ]; then
  CAP_S="${CAP_S:-900}"
  TRAIN=(--recipe smoke --device cpu --minutes "${TRAIN_MIN:-0.05}")
  SIZES=(-p per_task 1 -y "gammas: [1, 2]" -y "temperatures: [0.0]" -p max_new_tokens 8
         -p repeats 1)
  # the smoke pair has 64 positions: short prompts of the three tasks for it
  PROMPTS="$OUT/short_prompts.jsonl"
  printf '%s\n' '{"task": "code-completion", "prompt": "def add(a, b):"}' \
    '{"task": "prose", "prompt": "The file is"}' \
    '{"task": "copy-edit", "prompt": "x = 1\ny = 2\nx = 1\n"}' > "$PROMPTS"
else
  CAP_S="${CAP_S:-300}"
  TRAIN=(--recipe gpu --device "$DEVICE" --minutes "${TRAIN_MIN:-3}")
  SIZES=(-p per_task 2 -y "gammas: [1, 2, 3, 5]" -y "temperatures: [0.0, 1.0]"
         -p max_new_tokens 48 -p repeats 2)
  PROMPTS=""
fi
THREADS=(${THREADS_LIST:-1 0})   # 0: torch's default (the notebook passes None)
DTYPES=(${DTYPES_LIST:-float32 bfloat16})

log "== machine $(date -u +%FT%TZ) device $DEVICE"
nvidia-smi -L 2>/dev/null | tee -a "$OUT/run.log"
$PY -c "import torch, transformers; print('torch', torch.__version__, 'cuda', torch.version.cuda, \
'available', torch.cuda.is_available(), 'threads', torch.get_num_threads(), 'transformers', \
transformers.__version__)" 2>&1 | tee -a "$OUT/run.log"

# 1. the notebook runner, from the wheelhouse when it is missing
if ! $PY -c "import papermill, nbclient, ipykernel" 2>/dev/null; then
  if [ ! -d "$WHEELS" ]; then
    log "papermill/nbclient/ipykernel missing and no wheelhouse at $WHEELS (build it with"
    log "scripts/build_wheelhouse.sh where there is a package index, and carry it)"
    exit 2
  fi
  log "== installing papermill nbclient ipykernel from $WHEELS (--no-index)"
  $PY -m pip install --no-index --find-links "$WHEELS" papermill nbclient ipykernel \
    >> "$OUT/run.log" 2>&1 || { log "pip install from $WHEELS failed"; exit 2; }
fi

# 2. a pair trained here
log "== train: $PY -m specnb.measure.train ${TRAIN[*]} --out $PAIR"
t0=$(date +%s)
$PY -m specnb.measure.train "${TRAIN[@]}" --out "$PAIR" > "$OUT/train.log" 2>&1
log "== train: exit $? after $(( $(date +%s) - t0 )) s"
TARGET=$(ls -d "$PAIR"/target* 2>/dev/null | head -1)
DRAFT=$(ls -d "$PAIR"/draft* 2>/dev/null | head -1)

# 3. notebook 08: pair x threads x dtype
failed=0
for pair in bundled trained; do
  if [ "$pair" = trained ]; then
    if [ -z "$TARGET" ] || [ -z "$DRAFT" ]; then
      log "== trained pair missing under $PAIR: skipped"; failed=1; continue
    fi
    PAIR_ARGS=(-p target "$TARGET" -y "drafts: ['$DRAFT']")
    [ -n "$PROMPTS" ] && PAIR_ARGS+=(-p prompts "$PROMPTS")
  else
    PAIR_ARGS=()
  fi
  for threads in "${THREADS[@]}"; do
    for dtype in "${DTYPES[@]}"; do
      name="08_${pair}_threads${threads}_${dtype}"
      log "== $name (cap ${CAP_S}s)"
      t0=$(date +%s)
      timeout "$CAP_S" $PY -m papermill notebooks/08_measure_alpha.ipynb "$OUT/$name.ipynb" \
        -k python3 --no-progress-bar -p device "$DEVICE" -p dtype "$dtype" \
        -p cpu_threads "$threads" "${SIZES[@]}" "${PAIR_ARGS[@]}" >> "$OUT/run.log" 2>&1
      rc=$?
      log "== $name: exit $rc after $(( $(date +%s) - t0 )) s"
      [ "$rc" = 0 ] || failed=1
    done
  done
done

# 3b. a real target with its published EAGLE-3 head (e.g. HEAD_TARGET=/models/Llama-3.1-8B-Instruct
#     HEAD_PATH=/models/EAGLE3-LLaMA3.1-Instruct-8B): local folders only, nothing is downloaded
if [ -n "${HEAD_TARGET:-}" ] && [ -d "${HEAD_TARGET}" ] && [ -n "${HEAD_PATH:-}" ] \
    && [ -d "${HEAD_PATH}" ]; then
  log "== head: specnb measure --target $HEAD_TARGET --draft-head $HEAD_PATH (cap ${CAP_S}s)"
  t0=$(date +%s)
  timeout "$CAP_S" $PY -m specnb measure --target "$HEAD_TARGET" --draft-head "$HEAD_PATH" \
    --device "$DEVICE" --dtype "${HEAD_DTYPE:-bfloat16}" --per-task 2 --gamma 1 3 5 \
    --temperature 0 1 --max-new-tokens 64 --json --no-pld > "$OUT/head_measure.json" \
    2>> "$OUT/run.log"
  log "== head measure: exit $? after $(( $(date +%s) - t0 )) s"
  t0=$(date +%s)
  timeout "$CAP_S" $PY - "$HEAD_TARGET" "$HEAD_PATH" "$DEVICE" "$OUT" <<'PYEOF' >> "$OUT/run.log" 2>&1
import json, sys
from pathlib import Path

from specnb import measure as M
from specnb import request_log

target, head, device, out = sys.argv[1:5]
model, tok = M.load_model(target, device=device, dtype="bfloat16")
records = M.logged_responses(model, tok, M.load_prompts(per_task=4), temperatures=(0.0, 1.0),
                             max_new_tokens=128)
log = Path(out) / "head_log.jsonl"
log.write_text("".join(json.dumps({"task": r["task"], "prompt": r["prompt"],
                                   "response_ids": r["response_ids"],
                                   "temperature": r["temperature"]}) + "\n" for r in records))
prof, info = M.replay_head(request_log.read(log, tokenizer=target), method="eagle3", head=head,
                           target=target, gammas=(1, 3, 5), device=device, dtype="bfloat16")
info["tau"] = {g: prof.entry(g).tau for g in prof.gammas}
(Path(out) / "head_replay.json").write_text(json.dumps(info, indent=1))
print(json.dumps(info))
PYEOF
  log "== head replay: exit $? after $(( $(date +%s) - t0 )) s"
else
  log "== head: HEAD_TARGET / HEAD_PATH not set to local folders: the published-head run skipped"
fi

# 4. results.csv and summary.md from the records in the executed notebooks
$PY - "$OUT" <<'PYEOF' 2>&1 | tee -a "$OUT/run.log"
import re, sys
from pathlib import Path

import pandas as pd

from specnb.nb import read_records

out = Path(sys.argv[1])
try:
    import torch
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
except Exception:  # noqa: BLE001 - the name is informative only
    gpu = "unknown"
rows = []
for nb in sorted(out.glob("08_*_threads*_*.ipynb")):
    pair, threads, dtype = re.match(r"08_(\w+?)_threads(\d+)_(\w+)\.ipynb", nb.name).groups()
    rec = read_records(nb)
    if "measure.loops" not in rec:
        continue
    s = rec["measure.loops"]
    t = rec["measure.loops_timing"]
    s = s.merge(t[["loop", "draft", "t_round", "t_target"]], on=["loop", "draft"], how="left")
    s["t_round_ms"], s["t_target_ms"] = 1e3 * s.pop("t_round"), 1e3 * s.pop("t_target")
    rows.append(s.assign(pair=pair, threads="default" if threads == "0" else threads,
                         dtype=dtype, gpu=gpu))
if not rows:
    print("no notebook produced records")
    sys.exit(0)
res = pd.concat(rows, ignore_index=True)
res.to_csv(out / "results.csv", index=False)
g = res[res["temperature"] == res["temperature"].min()].groupby(
    ["pair", "threads", "dtype", "loop"], sort=False)
summ = g.agg(t_round_ms=("t_round_ms", "median"), t_target_ms=("t_target_ms", "median"),
             best_speedup=("speedup_measured", "max"), tau=("tau_measured", "max")).reset_index()
(out / "summary.md").write_text(
    f"# notebook 08 on {gpu}\n\nper run and loop (greedy): median fitted t_round and t_target "
    "(ms), best measured speedup, largest tau\n\n```\n" + summ.to_string(index=False) + "\n```\n")
print(summ.to_string(index=False))
PYEOF
log "== done: $( [ $failed = 0 ] && echo 'every run ok' || echo 'some runs FAILED (see above)')"
exit $failed
