"""Drive vLLM 0.33's Model Runner V2 n-gram speculator, its own Triton kernels, on the CPU and
write what it drafts, stepped as the engine steps it, to ``ngram_v2.jsonl``.

vLLM 0.33 serves ``method: ngram`` (and ``ngram_gpu``) on Model Runner V2 by default
(``VllmConfig.use_v2_model_runner``: only ``suffix`` / ``custom_class`` send it to V1), where
``init_speculator`` builds ``NgramGPUSpeculator`` (``v1/worker/gpu/spec_decode/ngram/
speculator.py``). Its two kernels, ``_ngram_scan_kernel`` and ``_ngram_finalize_kernel``, are
read from that file (the decorated source, at its own line numbers) and run by Triton's
interpreter (``TRITON_INTERPRET=1``: numpy on the CPU, the same program). One shim: this
interpreter (triton 3.9) hands some boolean masks to its loads as int32 arrays and then
refuses them ("mask has unsupported dtype"); masks are cast to bool before the load, which
changes no value.

Run (a torch, triton and vLLM's source; ``make oracle`` does it)::

    TRITON_LIB=/path/with/triton python oracle/drive_ngram_v2.py \\
        --vllm-src /path/to/site-packages/vllm --out tests/cases/vllm/0.33.0

The corpus is ``proposals.jsonl``'s (``oracle/drive_proposals.py``), so V1 and V2 replay the
same requests. Each engine step runs the speculator once on every unfinished request (a
batch, ``idx_mapping`` 0..B-1), after the step's sampled tokens were appended (``post_update``
writes ``all_token_ids`` and ``total_len`` before ``propose``); the K drafts are verified
against the response (accepted while equal, never past its end) and the step appends
accepted + 1 tokens. ``stepped`` lines: per (settings, gamma) every request's ``[T, d, a]``
(d = K: V2 always schedules K draft tokens) and the summed counters; ``call`` lines: the
drafts for every prefix of the first requests. ``specnb.replay`` (``runner="v2"``) must give
the same integers (``tests/replay/test_oracle_ngram_v2.py``).
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import sys
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"
if os.environ.get("TRITON_LIB"):
    sys.path.insert(0, os.environ["TRITON_LIB"])

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from drive_proposals import _counters, _step_batch  # noqa: E402

SETTINGS = [(1, 1), (2, 4), (3, 5), (5, 5)]
GAMMAS = [1, 3, 5]
L = 256  # max_model_len of the driven speculator: the corpus' longest request is 210 tokens


def _shim_interpreter():
    import numpy as np
    import triton.runtime.interpreter as interp

    for name, at in (("create_masked_load", 1), ("create_masked_store", 2)):
        orig = getattr(interp.InterpreterBuilder, name)

        def patched(self, *args, _orig=orig, _at=at, **kw):
            args = list(args)
            m = args[_at]
            if m.data.dtype != np.bool_:
                args[_at] = interp.TensorHandle(m.data.astype(bool), m.dtype)
            return _orig(self, *args, **kw)

        setattr(interp.InterpreterBuilder, name, patched)


def load_kernels(vllm_src: Path):
    """vLLM's two kernels, compiled from their own file at their own line numbers."""
    import triton
    import triton.language as tl

    path = vllm_src / "v1" / "worker" / "gpu" / "spec_decode" / "ngram" / "speculator.py"
    src = path.read_text()
    lines = src.splitlines(keepends=True)
    ns = {"triton": triton, "tl": tl, "__name__": "vllm_ngram_v2"}
    for node in ast.parse(src).body:
        if isinstance(node, ast.FunctionDef) and node.name in ("_ngram_scan_kernel",
                                                                "_ngram_finalize_kernel"):
            start = node.decorator_list[0].lineno
            text = "\n" * (start - 1) + "".join(lines[start - 1:node.end_lineno])
            exec(compile(text, str(path), "exec"), ns)
    return ns["_ngram_scan_kernel"], ns["_ngram_finalize_kernel"]


def make_propose(kernels, lo, hi, k):
    """``propose(live, num_tokens, rows, sampled)`` as NgramGPUSpeculator.propose calls the
    kernels (its block size rule for max_model_len L)."""
    import torch
    import triton

    scan, fin = kernels
    block_l = 256 if L >= 1024 else 128 if L >= 256 else 64 if L >= 64 else max(
        16, triton.next_power_of_2(max(L, 1)))
    n_blocks = triton.cdiv(L, block_l)

    def propose(live, num_tokens, rows, sampled):
        b = len(live)
        tok = torch.zeros((b, L), dtype=torch.int32)
        for j, row in enumerate(rows):
            tok[j, :len(row)] = torch.tensor(row, dtype=torch.int32)
        idx = torch.arange(b, dtype=torch.int64)
        total = torch.tensor(num_tokens, dtype=torch.int32)
        num_sampled = torch.tensor([len(s) for s in sampled], dtype=torch.int32)
        last = torch.tensor([row[-1] for row in rows], dtype=torch.int64)
        scratch = torch.zeros((b, n_blocks), dtype=torch.int64)
        drafts = torch.zeros((b, k), dtype=torch.int64)
        scan[(b, n_blocks)](tok, tok.stride(0), idx, total, num_sampled, scratch,
                            scratch.stride(0), L, lo, hi, max(1, triton.next_power_of_2(hi)),
                            block_l)
        fin[(b,)](tok, tok.stride(0), idx, total, num_sampled, last, scratch, scratch.stride(0),
                  drafts, L, n_blocks, k, max(1, triton.next_power_of_2(k)),
                  max(1, triton.next_power_of_2(n_blocks)))
        return drafts.tolist()

    return propose


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vllm-src", type=Path, default=None,
                    help="vLLM's package folder (default: the installed vllm's)")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    src = a.vllm_src
    if src is None:
        import importlib.util
        src = Path(importlib.util.find_spec("vllm").origin).parent
    _shim_interpreter()
    import triton

    kernels = load_kernels(src)
    lines = [json.loads(x) for x in (a.out / "proposals.jsonl").read_text().splitlines()[:2]]
    corpus = lines[1]["requests"]
    out = [{"kind": "meta", "format": 1, "vllm": lines[0]["vllm"], "triton": triton.__version__,
            "driver": "oracle/drive_ngram_v2.py", "max_model_len": L,
            "kernels": "v1/worker/gpu/spec_decode/ngram/speculator.py"}]
    for lo, hi in SETTINGS:
        p = {"prompt_lookup_min": lo, "prompt_lookup_max": hi}
        calls = []
        prop5 = make_propose(kernels, lo, hi, 5)
        for r in corpus[:8]:
            full = r["prompt_ids"] + r["response_ids"]
            ts = list(range(1, len(full) + 1))
            drafts = prop5(ts, ts, [full[:t] for t in ts], [[full[t - 1]] for t in ts])
            calls.append({"id": r["id"], "drafts": drafts})
        out.append({"kind": "call", "k": 5, "params": p, "requests": calls})
        for g in GAMMAS:
            steps = _step_batch(corpus, make_propose(kernels, lo, hi, g), g)
            out.append({"kind": "stepped", "gamma": g, "params": p,
                        "steps": {r["id"]: s for r, s in zip(corpus, steps)},
                        "counters": _counters(steps, g)})
        print(f"ngram v2 {lo}..{hi}: done", file=sys.stderr)
    (a.out / "ngram_v2.jsonl").write_text(
        "".join(json.dumps(x, separators=(",", ":")) + "\n" for x in out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
