"""The string faults and the whole ``vllm serve`` line, driven through an installed vLLM.

Run with the oracle's virtualenv::

    .venv-vllm-0.33.0/bin/python oracle/drive_strings.py --out tests/cases/vllm/0.33.0

Writes, beside ``configs.jsonl`` (oracle/drive.py):

* ``strings.jsonl``: configs whose verdict turns on pydantic's lax coercions (``"3.0"``,
  ``"1_0"``, ``"0.5"``, lists of numeric strings, a schedule of strings), on bounds vLLM checks
  for one method only (``suffix_decoding_*``), on an unknown ``quantization`` name and on a
  method word given as the model name; each judged by the same pipeline as ``configs.jsonl``
  (``drive.ConfigOracle``), in the same record format.
* ``serve.jsonl``: ``vllm serve`` lines through vLLM's own parser
  (``make_arg_parser(FlexibleArgumentParser())``): the values of the flags specnb reads, or
  the parser's error line.
The parser is ``oracle/table.py``'s :func:`table.serve_parser`, the one whose flags
``table.py --flags`` writes to ``specnb/vllm/flags/<version>.json``.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import shlex
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpus as corpus_mod  # noqa: E402
import drive  # noqa: E402

J = json.dumps
K = {"num_speculative_tokens": 3}
NG = {"method": "ngram", **K}
SUF = {"method": "suffix", "num_speculative_tokens": 8}
SYN = {"method": "ngram", "num_speculative_tokens": 2, "rejection_sample_method": "synthetic"}
SCHED = "num_speculative_tokens_per_batch_size"

STRING_CASES = [
    # pydantic lax mode: strings and floats for int fields
    ("int:3.0", {"method": "ngram", "num_speculative_tokens": "3.0"}),
    ("int:3.00", {"method": "ngram", "num_speculative_tokens": "3.00"}),
    ("int:1_0", {"method": "ngram", "num_speculative_tokens": "1_0"}),
    ("int:space", {"method": "ngram", "num_speculative_tokens": " 4 "}),
    ("int:plus", {"method": "ngram", "num_speculative_tokens": "+4"}),
    ("int:3.5", {"method": "ngram", "num_speculative_tokens": "3.5"}),
    ("int:1e1", {"method": "ngram", "num_speculative_tokens": "1e1"}),
    ("int:0x4", {"method": "ngram", "num_speculative_tokens": "0x4"}),
    ("int:1__0", {"method": "ngram", "num_speculative_tokens": "1__0"}),
    ("int:_1", {"method": "ngram", "num_speculative_tokens": "_1"}),
    ("int:007", {"method": "ngram", "num_speculative_tokens": "007"}),
    ("int:fullwidth", {"method": "ngram", "num_speculative_tokens": "\uff13"}),
    ("int:1.", {"method": "ngram", "num_speculative_tokens": "1."}),
    ("int:lookup-2.0", {**NG, "prompt_lookup_min": "2.0", "prompt_lookup_max": 5}),
    ("int:lookup-0", {**NG, "prompt_lookup_min": "0", "prompt_lookup_max": 5}),
    # floats
    ("float:0.5", {**SYN, "synthetic_acceptance_length": "1.5"}),
    ("float:1_0.5", {**SYN, "num_speculative_tokens": 20, "synthetic_acceptance_length": "1_0.5"}),
    ("float:1e0", {**SYN, "synthetic_acceptance_length": "1e0"}),
    ("float:nan", {**SYN, "synthetic_acceptance_length": "nan"}),
    ("float:.5", {**SUF, "suffix_decoding_min_token_prob": ".5"}),
    ("float:0x1", {**SUF, "suffix_decoding_min_token_prob": "0x1"}),
    ("float:bool", {**SUF, "suffix_decoding_max_spec_factor": True}),
    ("float:infinity", {**SUF, "suffix_decoding_max_spec_factor": "Infinity"}),
    # lists of numeric strings
    ("list:rates-strings", {**SYN, "synthetic_acceptance_rates": ["0.8", "0.5"]}),
    ("list:rates-bad", {**SYN, "synthetic_acceptance_rates": ["0.8", "high"]}),
    ("list:rates-ints", {**SYN, "synthetic_acceptance_rates": [1, "0"]}),
    ("sched:strings", {**NG, SCHED: [["1", "8", "3"], ["9", "512", "1"]]}),
    ("sched:floats", {**NG, SCHED: [[1.0, 8, 3], [9, 512.0, "1.0"]]}),
    ("sched:bad-string", {**NG, SCHED: [["1", "8", "three"]]}),
    ("sched:fraction", {**NG, SCHED: [[1, 8, 2.5]]}),
    ("sched:bools", {**NG, SCHED: [[True, 8, 3], [9, 512, False]]}),
    # bounds checked for one method only
    ("bound:suffix-depth-0-on-ngram", {**NG, "suffix_decoding_max_tree_depth": 0}),
    ("bound:suffix-prob-2-on-ngram", {**NG, "suffix_decoding_min_token_prob": 2.0}),
    ("bound:suffix-cached--1-on-ngram", {**NG, "suffix_decoding_max_cached_requests": -1}),
    ("bound:suffix-factor--1-on-ngram", {**NG, "suffix_decoding_max_spec_factor": -1}),
    ("bound:suffix-depth-0", {**SUF, "suffix_decoding_max_tree_depth": 0}),
    ("bound:suffix-depth-str-0", {**SUF, "suffix_decoding_max_tree_depth": "0"}),
    ("bound:suffix-depth-null-on-ngram", {**NG, "suffix_decoding_max_tree_depth": None}),
    # quantization
    ("quant:bogus-on-ngram", {**NG, "quantization": "bogus"}),
    ("quant:fp8-on-ngram", {**NG, "quantization": "fp8"}),
    # a method word as the model name
    ("word:ngram-model", {"model": "ngram", **K}),
    ("word:ngram_gpu-model", {"model": "ngram_gpu", **K}),
    ("word:suffix-model", {"model": "suffix", **K}),
    ("word:ngram_gpu-model-method", {"method": "ngram_gpu", "model": "ngram_gpu", **K}),
    ("word:suffix-model-method", {"method": "suffix", "model": "suffix", **K}),
    ("word:ngram-model-eagle", {"method": "eagle", "model": "ngram", **K}),
    ("word:suffix-model-draft", {"method": "draft_model", "model": "suffix", **K}),
    ("word:ngram_gpu-model-eagle3", {"method": "eagle3", "model": "ngram_gpu", **K}),
]

#: Serve lines (after ``vllm serve``); {standins} is the stand-in folder.
SERVE_LINES = [
    ("plain", "MODEL --speculative-config "
              "'{\"method\": \"ngram\", \"num_speculative_tokens\": 3}'"),
    ("dotted", "MODEL --speculative-config.method ngram "
               "--speculative-config.num_speculative_tokens 3"),
    ("dotted-eq", "MODEL --speculative-config.method=ngram "
                  "--speculative-config.prompt_lookup_max=5"),
    ("dotted-json-value", "MODEL --speculative-config.num_speculative_tokens_per_batch_size "
                          "'[[1, 8, 3], [9, 512, 1]]' --speculative-config.method ngram"),
    ("context", "MODEL --max-model-len 8192 --tensor-parallel-size 2 --data-parallel-size 2 "
                "--max-num-seqs 64 --kv-cache-dtype fp8 --enable-prefix-caching "
                "--quantization fp8 --enable-lora --speculative-config '{\"method\": \"ngram\"}'"),
    ("underscores", "MODEL --max_model_len 4096 --tensor_parallel_size 4"),
    ("short-tp", "MODEL -tp 2 --max-model-len=2048"),
    ("model-flag", "--model MODEL --max-model-len 4096"),
    ("no-prefix-caching", "MODEL --no-enable-prefix-caching"),
    ("structured", "MODEL --structured-outputs-config '{\"backend\": \"xgrammar\"}'"),
    ("unknown-flag", "MODEL --max-model-length 4096"),
    ("unknown-flag-2", "MODEL --speculative-model foo --num-speculative-tokens 3"),
    ("bad-int", "MODEL --max-model-len lots"),
    ("bad-json", "MODEL --speculative-config '{method: ngram}'"),
    ("bad-choice", "MODEL --kv-cache-dtype fp9"),
    ("bad-quant", "MODEL --quantization bogus"),
    ("max-model-len-k", "MODEL --max-model-len 32k"),
    ("max-model-len-auto", "MODEL --max-model-len -1"),
    ("missing-value", "MODEL --max-model-len"),
    ("dp-eq", "MODEL --data-parallel-size=4 -dp 2"),
    ("bool-value", "MODEL --enable-prefix-caching true"),
    ("two-models", "MODEL OTHER"),
    ("mnbt-k", "MODEL --max-num-batched-tokens 8k"),
    ("float-flag", "MODEL --gpu-memory-utilization 0.85 --max-num-seqs 2.5"),
    ("dotted-bad", "MODEL --speculative-config.num_speculative_tokens"),
    ("human-K", "MODEL --max-model-len 32K --max-num-batched-tokens 2.5k"),
    ("human-bad", "MODEL --max-model-len 1.5K"),
    ("auto", "MODEL --max-model-len auto"),
    ("disable-inverse", "MODEL --disable-prefix-caching --enable-log-stats"),
    ("abbrev", "MODEL --max-model 4096"),
    ("dotted-and-json", "MODEL --speculative-config '{\"method\": \"ngram\"}' "
                        "--speculative-config.num_speculative_tokens 2"),
    ("served-name-first", "--served-model-name x --max-model-len 4096"),
    ("no-model", ""),
    ("kv-int3", "MODEL --kv-cache-dtype int3"),
    ("dotted-nested-conflict", "MODEL --speculative-config.method ngram "
                               "--speculative-config.method.x 3"),
    ("dotted-list-concat", "MODEL --speculative-config.num_speculative_tokens_per_batch_size "
                           "'[[1, 8, 3]]' --speculative-config.num_speculative_tokens_per_batch_"
                           "size '[[9, 512, 1]]' --speculative-config.method ngram"),
]
#: Lines after ``python -m vllm.entrypoints.openai.api_server`` (its own parser: no
#: ``model_tag`` where ``make_arg_parser`` adds none).
API_LINES = [
    ("model-flag", "--model MODEL -tp 2"),
    ("positional", "MODEL -tp 2"),
]

#: The flags whose parsed values the fixture records (dest names).
DESTS = ("model_tag", "model", "max_model_len", "max_num_batched_tokens", "disable_log_stats",
         "tensor_parallel_size", "data_parallel_size",
         "max_num_seqs", "kv_cache_dtype", "enable_prefix_caching", "quantization",
         "enable_lora", "speculative_config", "structured_outputs_config")


def _plain(v):
    if isinstance(v, (str, int, float, bool, type(None))):
        return v
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return str(v)


def run_serve(parser, api_parser, out: Path) -> list[dict]:
    recs = []
    for cid, line, parser in [(f"serve:{c}", x, parser) for c, x in SERVE_LINES] + [
            (f"api:{c}", x, api_parser) for c, x in API_LINES]:
        argv = shlex.split(line)
        err = io.StringIO()
        rec = {"id": cid, "line": line}
        with contextlib.redirect_stderr(err):
            try:
                ns = parser.parse_args(argv)
            except SystemExit as x:
                lines = [ln for ln in err.getvalue().splitlines() if "error:" in ln]
                rec.update(verdict="rejected", exit_code=x.code,
                           message=lines[-1] if lines else err.getvalue().strip())
                recs.append(rec)
                continue
            except Exception as x:  # noqa: BLE001 (vLLM's own parser can crash)
                rec.update(verdict="rejected", exit_code=1, exception=type(x).__name__,
                           message=f"{type(x).__name__}: {x}")
                recs.append(rec)
                continue
        rec.update(verdict="accepted",
                   values={d: _plain(getattr(ns, d, None)) for d in DESTS if hasattr(ns, d)})
        recs.append(rec)
    with open(out / "serve.jsonl", "w") as fh:
        for r in recs:
            fh.write(json.dumps(r, sort_keys=True) + "\n")
    return recs


def run_strings(oracle, out: Path) -> list[dict]:
    recs = []
    for cid, cfg in STRING_CASES:
        e = corpus_mod.entry(f"string:{cid}", J(cfg), "oracle/drive_strings.py")
        r = oracle.judge(e)
        r.pop("id")
        full = {"id": e["id"], "source": e["source"], "input": e["text"], "argv": None,
                "target": e["target"], "serve_args": [], "target_dependent":
                e["target_dependent"], "note": ""}
        full.update(r)
        recs.append(full)
        print(f"{e['id']}: {r['verdict']} {r['stage']} {(r.get('message') or '')[:80]}",
              file=sys.stderr)
    with open(out / "strings.jsonl", "w") as fh:
        for r in recs:
            fh.write(json.dumps(r, sort_keys=True, default=str) + "\n")
    return recs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    import vllm

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        drive._setup_env(Path(tmp))  # noqa: SLF001
        oracle = drive.ConfigOracle(Path(tmp))
        run_strings(oracle, args.out)
        import table as table_mod

        run_serve(table_mod.serve_parser(), table_mod.serve_parser(api_server=True), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
