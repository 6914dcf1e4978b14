"""alpha from logged traffic against alpha counted from assisted generation, on the bundled pair
and the stored held-out responses (data/prompts/stdlib_heldout_responses.jsonl, T = 0 records):
agreement and time per (draft, gamma). Goal (issue 12): the whole (draft x gamma) grid from the
logged responses at least 20x faster than running assisted generation for each (draft, gamma)
pair, agreeing within 0.02.

Logged: ``specnb.measure.alpha_from_logged`` (one forward pass per draft over each logged prompt
+ response; at T = 0 no target pass), timed over its forward passes (``forward_pass_s``, c not
timed). Assisted: ``target.generate(assistant_model=draft)`` at fixed gamma on the same prompts,
``max_new_tokens`` = the logged response's length; alpha counted = accepted / examined draft
tokens over the streamed rounds. ``alpha_rounds`` is the same count on the rounds the logged
betas imply (exact at T = 0 when the log is the target's own greedy output); ``alpha`` pools all
positions.

    python benchmarks/bench_alpha_logged.py [--per-task N] [--gamma G ...] [--device D] [--dtype T]
"""

from __future__ import annotations

import argparse
import os

import torch
import transformers

from specnb import acceptance as acc
from specnb import measure as M

GOAL_RATIO, GOAL_DIFF = 20.0, 0.02


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-task", type=int, default=4, help="records per task (0 = all 36)")
    ap.add_argument("--gamma", type=int, nargs="+", default=[1, 2, 3, 5])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="auto")
    args = ap.parse_args()
    torch.set_num_threads(1)  # steady timings on a shared CPU (see specnb.measure.measure)
    transformers.logging.set_verbosity_error()
    dev = M.resolve_device(args.device)
    dt = M.resolve_dtype(args.dtype, dev)
    target, tok = M.load_model(M.BUNDLED_TARGET, device=dev, dtype=dt)
    drafts = {p.name: M.load_model(p, device=dev, dtype=dt, need_tokenizer=False)
              for p in M.BUNDLED_DRAFTS}
    # per_task counts records per task at each served temperature: the first N greedy ones
    records = [r for r in M.load_prompts(M.BUNDLED_LOGGED, logged=True,
                                         per_task=args.per_task or None)
               if r["temperature"] == 0]
    models = {"target": (target, tok), "drafts": drafts, "target_name": str(M.BUNDLED_TARGET)}
    # warm-up, then the logged grid (best of 3: the forward passes are short)
    logged, log_file = None, _write(records)
    try:
        for _ in range(4):
            r = M.alpha_from_logged(models=models, prompts=log_file, gammas=args.gamma,
                                    timing=False)
            if logged is None or r.config["forward_pass_s"] < logged.config["forward_pass_s"]:
                logged = r
    finally:
        os.unlink(log_file)
    t_logged = logged.config["forward_pass_s"]
    ids = M.encode_prompts(tok, records, max_new_tokens=0, context=None)
    resp = [r["response_ids"] for r in records]
    for d, _ in drafts.values():  # warm-up
        M.run_generate(target, ids[0], draft=d, gamma=2, max_new_tokens=8)
    print(f"bundled pair on {dev} ({str(dt).replace('torch.', '')}), {len(records)} logged "
          f"greedy responses ({sum(map(len, resp))} tokens), torch threads "
          f"{torch.get_num_threads()}, torch {torch.__version__}, transformers "
          f"{transformers.__version__}")
    print(f"logged: every draft x gamma ({len(drafts)} x {len(args.gamma)}) from one forward "
          f"pass per draft: {t_logged:.3f} s")
    print(f"{'draft':<12} {'gamma':>5} {'alpha_log':>9} {'alpha_rounds':>12} {'alpha_runs':>10} "
          f"{'|diff|':>7} {'runs_s':>8} {'ratio':>8}")
    ok, total_runs = True, 0.0
    for dname, (d, _) in drafts.items():
        s = logged.summary[logged.summary["draft"] == dname].set_index("gamma")
        for g in args.gamma:
            t_runs, rounds, same = 0.0, [], True
            for x, rid in zip(ids, resp):
                run = M.run_generate(target, x, draft=d, gamma=g, max_new_tokens=len(rid))
                same &= run.tokens == rid
                t_runs += run.wall_s
                rounds.append(acc.rounds_from_accept_lengths(run.accept_lengths, g, len(rid)))
            total_runs += t_runs
            a_runs = acc.alpha_from_rounds(rounds)
            diff = abs(s.loc[g, "alpha_rounds"] - a_runs)
            ratio = t_runs / t_logged
            ok &= diff <= GOAL_DIFF and ratio >= GOAL_RATIO
            print(f"{dname:<12} {g:>5} {s.loc[g, 'alpha']:>9.4f} {s.loc[g, 'alpha_rounds']:>12.4f} "
                  f"{a_runs:>10.4f} {diff:>7.4f} {t_runs:>8.3f} {ratio:>7.1f}x"
                  + ("" if same else "  (assisted output differs from the logged response)"))
    print(f"whole grid: assisted generation {total_runs:.2f} s against {t_logged:.3f} s from the "
          f"log: {total_runs / t_logged:.0f}x")
    print(f"goal: each (draft, gamma)'s assisted runs take >= {GOAL_RATIO:g}x the logged grid's "
          f"time, alpha within {GOAL_DIFF}: {'met' if ok else 'NOT met on every row'}")
    return 0


def _write(records):
    import json
    import tempfile

    f = tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8")
    with f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    return f.name


if __name__ == "__main__":
    raise SystemExit(main())
