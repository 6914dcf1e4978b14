"""Measure the host (CPU) cost of vLLM V0's n-gram proposer loop, for
``specnb.simulate.host`` (the constants ``V0_NGRAM_*``).

vLLM V0's ``vllm/spec_decode/ngram_worker.py`` (v0.6.x, the vLLM blog of 2024-10-17) runs, for
every sequence of a decode batch, in Python on the host (sequences under 3,072 tokens stay on
the CPU): the sequence's token list turned into a tensor, then for each n-gram size from
``ngram_prompt_lookup_max`` down to ``ngram_prompt_lookup_min`` a sliding-window compare over
the whole sequence and a ``.item()`` that reads whether it matched, stopping at the first
match. This script times the same torch operations (written here from that description, not
copied) on random token ids, per sequence length, and prints a least-squares fit

    as_tensor:  a_us + b_ns x L        (once per sequence)
    one size:   c_us + d_ns x L        (per n-gram size tried)

Process CPU time (``time.process_time``), best of 5 repetitions, one torch thread. Needs torch
(measurement only). Usage: ``.venv/bin/python scripts/measure_ngram_host.py``.
"""

from __future__ import annotations

import random
import time

import numpy as np


def _best_us(fn, n=300, reps=5):
    for _ in range(20):
        fn()
    best = float("inf")
    for _ in range(reps):
        t0 = time.process_time()
        for _ in range(n):
            fn()
        best = min(best, (time.process_time() - t0) / n * 1e6)
    return best


def main() -> int:
    import torch

    torch.set_num_threads(1)
    lengths = [250, 500, 1000, 1500, 2000, 3000]
    conv, size = [], []
    for L in lengths:
        toks = [random.randrange(128000) for _ in range(L)]
        ids = torch.as_tensor(toks, dtype=torch.long)
        conv.append(_best_us(lambda: torch.as_tensor(toks, dtype=torch.long)))

        def one(n=3):
            hit = (ids.unfold(0, n, 1)[:-1] == ids[-n:]).all(dim=-1).max(dim=-1)
            return hit.values.item()
        size.append(_best_us(one))
        print(f"L {L:5d}: as_tensor {conv[-1]:7.1f} us, one n-gram size {size[-1]:6.1f} us")
    x = np.array(lengths, dtype=float)
    for name, y in (("as_tensor", conv), ("one size", size)):
        b, a = np.polyfit(x, np.array(y), 1)
        print(f"{name}: {a:.1f} us + {b * 1e3:.1f} ns x L")
    print(f"torch {torch.__version__}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
