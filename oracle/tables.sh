#!/bin/sh
# make oracle-tables: the release table (specnb/vllm/versions/<v>.json) of every release in
# oracle/releases.txt, or of the releases named: sh oracle/tables.sh [RELEASE ...]
# Each builds a light virtualenv (oracle/setup_venv.sh --table), writes the table and removes
# that virtualenv again (a full one is kept), and the wheel it downloaded unless the release has fixtures
# (tests/cases/vllm/<v>/) or ORACLE_KEEP_WHEELS=1. Prints the seconds each release took; goes on
# past a release that fails and names the failures at the end (exit 1).
set -eu
WHEELS="${ORACLE_WHEELS:-$HOME/.cache/specnb-oracle/wheels}"
[ $# -gt 0 ] || set -- $(grep -v '^#' oracle/releases.txt | cut -d' ' -f1)
failed=""
for v in "$@"; do
  t0=$(date +%s)
  full=no; [ -f ".venv-vllm-$v/.oracle-installed" ] && full=yes
  had=no; ls "$WHEELS"/vllm-"$v"-*.whl >/dev/null 2>&1 && had=yes
  if ! make --no-print-directory oracle-table VLLM="$v"; then
    failed="$failed $v"
  fi
  [ "$full" = yes ] || rm -rf ".venv-vllm-$v"
  if [ "$had" = no ] && [ ! -d "tests/cases/vllm/$v" ] && [ -z "${ORACLE_KEEP_WHEELS:-}" ]; then
    rm -f "$WHEELS"/vllm-"$v"-*.whl
  fi
  echo "oracle-tables: vLLM $v in $(( $(date +%s) - t0 )) s"
done
if [ -n "$failed" ]; then
  echo "oracle-tables: FAILED:$failed" >&2
  exit 1
fi
