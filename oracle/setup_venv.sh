#!/bin/sh
# Create .venv-vllm-<version> for the oracle (oracle/README.md).
#
# usage: sh oracle/setup_venv.sh VERSION           the full virtualenv (make oracle)
#        sh oracle/setup_venv.sh --table VERSION   a light one for the release table only
#
# Full: the CPU torch from local disk, the vLLM wheel without its dependencies, then the pinned
# pure-Python dependencies that vLLM imports on the paths the oracle drives (installed with
# --no-deps so nothing pulls a CUDA torch), then the CPU platform plugin.
# --table (make oracle-table): the release's Python files only (no compiled extensions: the
# table imports vLLM's config modules alone), in a virtualenv whose other packages come from a
# shared base .venv-oracle-base-<requirements file> (torch, the pinned dependencies, the
# plugin; built once, kept). A full virtualenv already there serves the table too.
#
# The requirements: oracle/requirements-<version>.txt where a release needs its own pins, else
# oracle/requirements-<major>.<minor>.txt where a release series does (0.9: a transformers of
# its time), else one of two shared lists: oracle/requirements-transformers4.txt when the wheel's metadata names
# no transformers 5.x (it asks for <5, or predates transformers 5), oracle/requirements.txt
# otherwise. The wheel is kept in $ORACLE_WHEELS (default
# ~/.cache/specnb-oracle/wheels); its name and sha256 go to <venv>/.oracle-wheel.json.
set -eu
MODE=full
if [ "${1:-}" = "--table" ]; then MODE=table; shift; fi
V="$1"
PY="${PYTHON:-python3}"
VENV=".venv-vllm-$V"
WHEELS="${ORACLE_WHEELS:-$HOME/.cache/specnb-oracle/wheels}"
TORCH="${ORACLE_TORCH:-torch==2.13.0}"

if [ "$MODE" = table ] && [ -f "$VENV/.oracle-installed" ]; then
  echo "oracle: $VENV (full) serves the table"
  exit 0
fi

mkdir -p "$WHEELS"
if ! ls "$WHEELS"/vllm-"$V"-*.whl >/dev/null 2>&1; then
  "$PY" -m pip download -q --no-deps "vllm==$V" -d "$WHEELS"
fi
WHEEL="$(ls "$WHEELS"/vllm-"$V"-*.whl | head -1)"
REQ="oracle/requirements-$V.txt"
SERIES="oracle/requirements-$(echo "$V" | cut -d. -f1-2).txt"
[ -f "$REQ" ] || [ ! -f "$SERIES" ] || REQ="$SERIES"
if [ ! -f "$REQ" ]; then
  if "$PY" -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); m = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")][0]; import re; r = [l for l in z.read(m).decode().splitlines() if re.match(r"Requires-Dist: transformers\b", l)]; sys.exit(1 if r and re.search(r"[=!~<>]=?\s*5\.", r[0]) else 0)' "$WHEEL"; then
    REQ="oracle/requirements-transformers4.txt"
  else
    REQ="oracle/requirements.txt"
  fi
fi

# base VENV: torch, the pinned dependencies and the CPU plugin into VENV
base() {
  "$PY" -m venv "$1"
  "$1/bin/python" -m pip install -q --upgrade pip
  "$1/bin/python" -m pip install -q "$TORCH"
  "$1/bin/python" -m pip install -q --no-deps -r "$REQ"
  "$1/bin/python" oracle/install_cpu_plugin.py
}

rm -rf "$VENV"
if [ "$MODE" = full ]; then
  base "$VENV"
  "$VENV/bin/python" -m pip install -q --no-deps "$WHEEL"
else
  BASE=".venv-oracle-base-$(basename "$REQ" .txt)"
  if [ ! -f "$BASE/.oracle-base" ]; then
    rm -rf "$BASE"
    base "$BASE"
    touch "$BASE/.oracle-base"
  fi
  "$PY" -m venv --without-pip "$VENV"
  "$VENV/bin/python" - "$WHEEL" "$BASE" <<'EOF'
import sys, sysconfig, zipfile
from pathlib import Path
site = Path(sysconfig.get_paths()["purelib"])
base = Path(sys.argv[2]).resolve()
(site / "oracle_base.pth").write_text(
    str(next((base / "lib").glob("python*")) / "site-packages") + "\n")
with zipfile.ZipFile(sys.argv[1]) as z:
    z.extractall(site, [n for n in z.namelist() if not n.endswith(".so") and ".so." not in n])
EOF
fi
"$VENV/bin/python" - "$WHEEL" "$V" > "$VENV/.oracle-wheel.json" <<'EOF'
import hashlib, json, sys
from pathlib import Path
w = Path(sys.argv[1])
h = hashlib.sha256()
with w.open("rb") as fh:
    for chunk in iter(lambda: fh.read(1 << 20), b""):
        h.update(chunk)
print(json.dumps({"version": sys.argv[2], "filename": w.name, "sha256": h.hexdigest()}))
EOF
touch "$VENV/.oracle-table"
[ "$MODE" = full ] && touch "$VENV/.oracle-installed"
echo "oracle: $VENV ready (vLLM $V, $MODE, $REQ)"
