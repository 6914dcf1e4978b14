# specnb: two commands on a fresh machine with Python 3.11+ and make.
#   make test   create .venv if missing, install, run the whole test suite
#   make run    create .venv if missing, install, execute every notebook headless -> build/
# Other targets: make check (import layers and the fast tests), make lab (JupyterLab with widgets), make bench (benchmarks), make docs (docs/api from the docstrings), make clean,
#   make oracle [VLLM=0.33.0]   vLLM itself as the oracle: writes tests/cases/vllm/$(VLLM)/
#   make oracle-table [VLLM=...] its release table alone; make oracle-tables: every release's
#   make oracle-check           re-run every release with fixtures; fail if a verdict moved
#   make oracle-heads           vLLM's EAGLE-3 head code on the CPU: tests/cases/vllm/$(VLLM)/heads/
#   make suffix-backend         arctic-inference's compiled suffix tree into .venv: vLLM's own
#                               `specnb replay --method suffix` backend (optional; needs CMake, a
#                               C++20 compiler and install's torch; ARCTIC=0.3.0)
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# The torch to install first. torch==2.13.0 is the CPU build these development and CI machines
# hold on local disk (on a plain PyPI setup that version may resolve to a CUDA build). With a
# torch of your own already in .venv (e.g. a CUDA build), use an empty TORCH to keep it:
#   make TORCH= run           (pyproject only asks torch>=2.4)
TORCH  ?= torch==2.13.0
# One stamp per TORCH setting, so changing TORCH re-runs the install.
STAMP  := $(VENV)/.specnb-installed-$(subst =,_,$(subst /,_,$(if $(TORCH),$(TORCH),own-torch)))

.PHONY: install test check run lab bench docs clean distclean oracle oracle-check oracle-check-one \
	oracle-table oracle-tables oracle-heads suffix-backend

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(if $(TORCH),$(BIN)/python -m pip install -q '$(TORCH)')
	$(BIN)/python -m pip install -q -e '.[all]'
	rm -f $(VENV)/.specnb-installed*
	touch $(STAMP)

install: $(STAMP)

# Arctic Inference's SuffixDecodingCache (the C++ suffix tree vLLM's SuffixDecodingProposer calls)
# built on the CPU from its PyPI sdist (oracle/build_arctic_suffix.sh) and copied into the venv's
# site-packages as arctic_inference.suffix_decoding; specnb replay --suffix-backend arctic uses it
# (auto only where numba, in install's [all], does not import: the numba backend is faster).
# Not part of install: the numba and pure-Python backends give the same counters.
ARCTIC ?= 0.3.0
suffix-backend: install
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	sh oracle/build_arctic_suffix.sh $(BIN)/python $$tmp $(ARCTIC) && \
	site=$$($(BIN)/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])") && \
	if [ -f "$$site/arctic_inference/__init__.py" ] && [ -s "$$site/arctic_inference/__init__.py" ]; then \
	  echo "a full arctic-inference is installed in $$site: left as it is"; \
	else mkdir -p "$$site/arctic_inference" && cp -r $$tmp/arctic_inference/. "$$site/arctic_inference/" && \
	  $(BIN)/python -c "from specnb.replay import suffix as S; print('suffix backend: arctic-inference', S.arctic_version())"; fi

test: install
	sh scripts/ensure_browser.sh
	$(BIN)/lint-imports
	$(BIN)/python -m pytest

# The quick check: the import layers, then every test not marked slow (no notebooks, models,
# transformers, browser, benchmark scripts; property tests with an eighth of their examples,
# a sample of the long parametrized lists: tests/tier.py).
# Under a minute on the idle 2-core machine: python benchmarks/bench_check_tier.py prints it.
check: install
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -m "not slow"

run: install
	$(BIN)/specnb run --output build

# JupyterLab on notebooks/ at http://127.0.0.1:8888 (token printed), .venv's kernel, live
# widgets. Extra options: make lab LAB_ARGS='--ServerApp.port=8890 --no-browser'
lab: install
	SPECNB_PYTHON=$(BIN)/python sh scripts/lab.sh $(LAB_ARGS)

# Every benchmark prints its figures; a speed target's line ends in "met" or "MISSED" ("NOT met"). The
# misses are listed at the end. Timings depend on the machine and its load, so make bench
# exits 0 on a miss (rerun on an idle machine); BENCH_STRICT=1 makes a miss exit 1.
# Every script runs, whatever the one before it did: a script that exits non-zero (a crash,
# or an old-style exit 1 on a miss) is listed at the end with the misses, and only then does
# make fail (exit 1); a miss alone exits 0 unless BENCH_STRICT=1. BENCHES: the scripts to run.
BENCHES ?= $(wildcard benchmarks/bench_*.py)
bench: install
	@log=$$(mktemp); one=$$(mktemp); failed=""; \
	for f in $(BENCHES); do echo "== $$f"; \
	  $(BIN)/python $$f > "$$one" 2>&1; rc=$$?; cat "$$one"; \
	  sed "s|^|$$f: |" "$$one" >> "$$log"; \
	  if [ $$rc != 0 ]; then failed="$$failed $$f (exit $$rc)"; fi; done; \
	missed=$$(grep -cE 'MISSED|NOT met' "$$log"); \
	if [ "$$missed" -gt 0 ]; then \
	  echo "== $$missed speed target(s) MISSED on this machine:"; grep -E 'MISSED|NOT met' "$$log"; \
	  echo "   (timings depend on the machine and its load; rerun on an idle machine)"; \
	else echo "== every speed target met"; fi; \
	if [ -n "$$failed" ]; then echo "== benchmark script(s) that failed:$$failed"; fi; \
	rm -f "$$log" "$$one"; \
	if [ -n "$$failed" ]; then exit 1; fi; \
	if [ "$$missed" -gt 0 ] && [ "$(BENCH_STRICT)" = 1 ]; then exit 1; fi

# The API reference docs/api/<package>.md, generated from the packages' docstrings
# (tests/scripts/test_gen_docs.py fails until this is rerun after a docstring changes).
docs: install
	$(BIN)/python scripts/gen_docs.py

# vLLM as the oracle (oracle/README.md): its own virtualenv .venv-vllm-$(VLLM) (the CPU torch,
# the vLLM wheel with --no-deps, oracle/requirements-$(VLLM).txt or the shared
# oracle/requirements.txt), then oracle/drive.py on the corpus. VLLM names any release; the
# fixtures go to tests/cases/vllm/$(VLLM)/, the release table to specnb/vllm/versions/$(VLLM).json.
#   make oracle-table [VLLM=...]  the table alone (a light virtualenv: vLLM's Python files only)
#   make oracle-tables            the table of every release in oracle/releases.txt
#   make oracle-check             every release with fixtures: re-run into a temp folder, fail
#                                 if a verdict moved or the wheel is not the one the table names
VLLM          ?= 0.33.0
ORACLE_PY     ?= python3
ORACLE_VENV   := .venv-vllm-$(VLLM)
ORACLE_STAMP  := $(ORACLE_VENV)/.oracle-installed
ORACLE_OUT    := tests/cases/vllm/$(VLLM)
ORACLE_TABLE  := specnb/vllm/versions/$(VLLM).json
ORACLE_FLAGS  := specnb/vllm/flags/$(VLLM).json
ORACLE_ENV    := VLLM_TARGET_DEVICE=cpu HF_HUB_OFFLINE=1
# the releases with fixtures (oracle-check replays each)
ORACLE_FIXTURE_RELEASES = $(patsubst tests/cases/vllm/%/configs.jsonl,%,$(wildcard tests/cases/vllm/*/configs.jsonl))
# ORACLE_ARGS: more drive.py options, e.g. --shared /path/to/shared (default: ../shared)
ORACLE_ARGS   ?=
# ORACLE_PRUNE=1: oracle-check removes each full virtualenv after its release (disk)
ORACLE_PRUNE  ?=

$(ORACLE_STAMP): oracle/setup_venv.sh $(wildcard oracle/requirements-$(VLLM).txt)
	PYTHON=$(ORACLE_PY) sh oracle/setup_venv.sh $(VLLM)

oracle: $(ORACLE_STAMP)
	$(ORACLE_ENV) $(ORACLE_VENV)/bin/python oracle/drive.py all --out $(ORACLE_OUT) $(ORACLE_ARGS)
	$(ORACLE_ENV) $(ORACLE_VENV)/bin/python oracle/table.py --out $(ORACLE_TABLE) --flags $(ORACLE_FLAGS)
ifeq ($(VLLM),0.33.0)
	# the drivers written against 0.33.0's code: the string faults and serve lines, the n-gram / suffix proposers (V1's, and V2's n-gram kernels), the V1 scheduler
	$(ORACLE_ENV) $(ORACLE_VENV)/bin/python oracle/drive_strings.py --out $(ORACLE_OUT)
	-[ -f $(ORACLE_VENV)/arctic-suffix/VERSION ] || \
	  sh oracle/build_arctic_suffix.sh $(ORACLE_VENV)/bin/python $(ORACLE_VENV)/arctic-suffix
	$(ORACLE_ENV) $(ORACLE_VENV)/bin/python oracle/drive_proposals.py --out $(ORACLE_OUT)
	# Model Runner V2's n-gram kernels under Triton's interpreter (triton beside the venv)
	[ -d $(ORACLE_VENV)/triton-lib/triton ] || $(ORACLE_VENV)/bin/python -m pip install -q \
	  --no-deps --target $(ORACLE_VENV)/triton-lib triton==3.9.0
	TRITON_LIB=$(ORACLE_VENV)/triton-lib $(ORACLE_ENV) $(ORACLE_VENV)/bin/python \
	  oracle/drive_ngram_v2.py --out $(ORACLE_OUT)
	$(ORACLE_ENV) $(ORACLE_VENV)/bin/python oracle/drive_scheduler.py --out $(ORACLE_OUT)
endif

# vLLM's EAGLE-3 head code on one-key cases (oracle/drive_heads.py): tests/cases/vllm/$(VLLM)/heads/
oracle-heads: $(ORACLE_STAMP)
	$(ORACLE_ENV) $(ORACLE_VENV)/bin/python oracle/drive_heads.py --out $(ORACLE_OUT)/heads

oracle-table:
	@[ -f $(ORACLE_VENV)/.oracle-table ] || [ -f $(ORACLE_STAMP) ] || PYTHON=$(ORACLE_PY) sh oracle/setup_venv.sh --table $(VLLM)
	$(ORACLE_ENV) $(ORACLE_VENV)/bin/python oracle/table.py --out $(ORACLE_TABLE) --flags $(ORACLE_FLAGS)

oracle-tables:
	PYTHON=$(ORACLE_PY) sh oracle/tables.sh

oracle-check:
	@rc=0; for v in $(ORACLE_FIXTURE_RELEASES); do \
	  $(MAKE) --no-print-directory oracle-check-one VLLM=$$v || rc=1; \
	  if [ -n "$(ORACLE_PRUNE)" ]; then rm -rf .venv-vllm-$$v; fi; \
	done; exit $$rc

oracle-check-one: $(ORACLE_STAMP)
	@t0=$$(date +%s); tmp=$$(mktemp -d) && \
	$(ORACLE_ENV) $(ORACLE_VENV)/bin/python oracle/drive.py configs --out $$tmp --quiet $(ORACLE_ARGS) && \
	$(ORACLE_PY) oracle/compare.py $(ORACLE_OUT) $$tmp $(ORACLE_TABLE); rc=$$?; rm -rf $$tmp; \
	echo "oracle-check: vLLM $(VLLM) took $$(( $$(date +%s) - t0 )) s (drive and compare)"; exit $$rc

clean:
	rm -rf build .pytest_cache .hypothesis .import_linter_cache

# Remove the virtual environment too (the next make test/run reinstalls).
distclean: clean
	rm -rf $(VENV)
