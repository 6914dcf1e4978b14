#!/bin/sh
# Create .venv-vllm-<version>: the CPU torch from local disk, the vLLM wheel without its
# dependencies, then the pinned pure-Python dependencies that vLLM imports on the paths the
# oracle drives (oracle/requirements-<version>.txt; installed with --no-deps so nothing pulls a
# CUDA torch). The wheel is kept in $ORACLE_WHEELS (default ~/.cache/specnb-oracle/wheels).
# usage: sh oracle/setup_venv.sh VERSION
set -eu
V="$1"
PY="${PYTHON:-python3}"
VENV=".venv-vllm-$V"
WHEELS="${ORACLE_WHEELS:-$HOME/.cache/specnb-oracle/wheels}"
TORCH="${ORACLE_TORCH:-torch==2.13.0}"
REQ="oracle/requirements-$V.txt"
if [ ! -f "$REQ" ]; then
  REQ="$(ls oracle/requirements-*.txt | sort -V | tail -1)"
  echo "oracle: no $REQ for vLLM $V; trying $REQ (add oracle/requirements-$V.txt, see oracle/README.md)" >&2
fi
rm -rf "$VENV"
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q "$TORCH"
mkdir -p "$WHEELS"
if ! ls "$WHEELS"/vllm-"$V"-*.whl >/dev/null 2>&1; then
  "$VENV/bin/python" -m pip download -q --no-deps "vllm==$V" -d "$WHEELS"
fi
"$VENV/bin/python" -m pip install -q --no-deps "$(ls "$WHEELS"/vllm-"$V"-*.whl | head -1)"
"$VENV/bin/python" -m pip install -q --no-deps -r "$REQ"
"$VENV/bin/python" oracle/install_cpu_plugin.py
touch "$VENV/.oracle-installed"
echo "oracle: $VENV ready (vLLM $V)"
