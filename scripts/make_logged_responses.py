"""Write data/prompts/stdlib_heldout_responses.jsonl: the bundled target's own responses to all
held-out prompts, greedy (T = 0) and sampled (T = 1, seeded), 64 new tokens each, as a request
log would hold them (``specnb.measure.logged_responses``). Generated once and committed; the
provenance is in data/prompts/README.md. CPU, float32, one thread.

    .venv/bin/python scripts/make_logged_responses.py [OUT]
"""

from __future__ import annotations

import json
import sys

import torch
import transformers

from specnb import measure as M


def main(out: str | None = None) -> int:
    torch.set_num_threads(1)
    transformers.logging.set_verbosity_error()
    target, tok = M.load_model(M.BUNDLED_TARGET, device="cpu", dtype="float32")
    prompts = M.load_prompts()
    records = M.logged_responses(target, tok, prompts, temperatures=(0.0, 1.0),
                                 max_new_tokens=64, seed=0)
    path = out or M.BUNDLED_LOGGED
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"wrote {len(records)} records to {path} (torch {torch.__version__}, transformers "
          f"{transformers.__version__})")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
