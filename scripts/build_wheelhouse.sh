#!/usr/bin/env bash
# Build a wheelhouse of what `scripts/gpu_notebook.sh` needs to run a notebook through papermill
# on a machine with no package index: papermill, nbclient, ipykernel and everything they depend
# on, as wheels for the GPU machine's Python and platform (default CPython 3.12 on x86-64 Linux,
# what data/measured/h200_measure/run.log shows). Compiled dependencies (pyzmq, tornado, psutil,
# debugpy, aiohttp ...) come as manylinux wheels for that Python; the rest are pure Python.
# torch, transformers, pandas and matplotlib are not included: the GPU machine has them.
#
#   bash scripts/build_wheelhouse.sh                  # -> build/wheelhouse (ignored by git)
#   PYVER=3.11 WHEELHOUSE=/tmp/wh bash scripts/build_wheelhouse.sh
#
# Then carry the folder and install there with
#   pip install --no-index --find-links build/wheelhouse papermill nbclient ipykernel
# The script fails when the wheelhouse exceeds LIMIT_MIB (default 60).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${WHEELHOUSE:-build/wheelhouse}"
PYVER="${PYVER:-3.12}"
PLATFORM="${PLATFORM:-manylinux2014_x86_64}"
LIMIT_MIB="${LIMIT_MIB:-60}"
PIP="${PIP:-python3 -m pip}"
PKGS=(papermill nbclient ipykernel)
mkdir -p "$OUT"
$PIP download --quiet --dest "$OUT" --only-binary=:all: --python-version "$PYVER" \
  --platform "$PLATFORM" --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
  --platform linux_x86_64 --implementation cp "${PKGS[@]}"
size_kib=$(du -sk "$OUT" | cut -f1)
n=$(ls "$OUT"/*.whl | wc -l)
echo "wheelhouse $OUT: $n wheels, $((size_kib / 1024)) MiB for CPython $PYVER ($PLATFORM)"
if [ "$size_kib" -gt $((LIMIT_MIB * 1024)) ]; then
  echo "wheelhouse is over $LIMIT_MIB MiB" >&2
  exit 1
fi
