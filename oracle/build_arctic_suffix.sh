#!/bin/sh
# Build Arctic Inference's suffix-decoding extension (the C++ SuffixTree behind
# arctic_inference.suffix_decoding.SuffixDecodingCache, which vLLM's SuffixDecodingProposer
# calls) on a CPU, from the arctic-inference sdist on PyPI: the full package needs torch and
# CUDA ops at build time, the suffix tree only CMake, a C++20 compiler and nanobind.
# Installs DEST/arctic_inference/suffix_decoding/{__init__,cache}.py + _C*.so + VERSION, with an
# empty arctic_inference/__init__.py (oracle/drive_proposals.py puts DEST first on sys.path;
# `make suffix-backend` copies DEST/arctic_inference into specnb's venv for the replay).
#   sh oracle/build_arctic_suffix.sh VENV_PYTHON DEST [VERSION]
set -eu
PY=$1
DEST=$2
VER=${3:-0.3.0}
CACHE=${ORACLE_WHEELS:-$HOME/.cache/specnb-oracle/wheels}
mkdir -p "$CACHE"
SDIST="$CACHE/arctic_inference-$VER.tar.gz"
# the sdist alone: pip prepares its metadata by running setup.py, which imports torch, and a
# build-isolated download would build torch from source (its build requirements); so without
# isolation, in a venv that has torch (the oracle's; specnb's with the measure extra)
if [ ! -f "$SDIST" ]; then
    "$PY" -m pip download --quiet --no-deps --no-build-isolation --no-binary :all: \
        "arctic-inference==$VER" -d "$CACHE" || {
        echo "could not download the arctic-inference $VER sdist with $PY (it needs torch to" \
             "prepare its metadata); put arctic_inference-$VER.tar.gz in $CACHE" >&2; exit 1; }
fi
BUILD=$(mktemp -d)
trap 'rm -rf "$BUILD"' EXIT
tar xzf "$SDIST" -C "$BUILD"
SRC="$BUILD/arctic_inference-$VER"
"$PY" -m pip install --quiet --target "$BUILD/nb" "nanobind==2.9.2"
PYTHONPATH="$BUILD/nb" cmake -S "$SRC/csrc/suffix_decoding" -B "$BUILD/out" -G Ninja \
    -DPython_EXECUTABLE="$PY" -DCMAKE_BUILD_TYPE=Release \
    -Dnanobind_ROOT="$("$PY" -c "import sys; sys.path.insert(0, '$BUILD/nb'); import nanobind; print(nanobind.cmake_dir())")" >/dev/null
cmake --build "$BUILD/out" >/dev/null
PKG="$DEST/arctic_inference/suffix_decoding"
mkdir -p "$PKG"
: > "$DEST/arctic_inference/__init__.py"
cp "$SRC/arctic_inference/suffix_decoding/__init__.py" "$SRC/arctic_inference/suffix_decoding/cache.py" "$PKG/"
cp "$BUILD"/out/_C*.so "$PKG/"
echo "$VER" > "$DEST/VERSION"
echo "$VER" > "$PKG/VERSION"  # what specnb.replay.suffix.arctic_version reads
echo "built arctic-inference $VER suffix decoding into $DEST"
