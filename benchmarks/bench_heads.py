"""Head replay speed on the CPU: the bundled EAGLE-3 head (data/models/eagle3-head-target-4x256)
replayed along the bundled request log (data/prompts/stdlib_heldout_responses.jsonl, 72
requests, T = 0 and T = 1) by ``specnb.measure.replay_head``: one target pass per request (its
hidden states and distributions), then the head teacher-forced at every round start at once,
max(gamma) steps deep. Prints response tokens per second, the target and head forwards counted
by hooks, and the goal line. Goal (issue 23): at most 10 s per 1,000 response tokens on this
shared 2-core machine with one thread (the gamma grid 1 3 5 from one pass), and exactly one
target forward per request (not one per step).

    python benchmarks/bench_heads.py [--gamma G ...] [--requests N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _goals import goal_line  # noqa: E402

GOAL_S_PER_1000 = 10.0


def run(gammas=(1, 3, 5), requests: int | None = None) -> dict:
    """Replay (the first ``requests`` of) the bundled log; the figures as a dict."""
    import torch
    import transformers

    from specnb import measure as M
    from specnb import request_log
    from specnb.measure import heads

    torch.set_num_threads(1)
    transformers.logging.set_verbosity_error()
    target, _ = M.load_model(M.BUNDLED_TARGET, device="cpu", need_tokenizer=False)
    head = heads.load_head(M.BUNDLED_EAGLE3_HEAD, target)
    log = request_log.read(None)
    if requests:
        log = request_log.RequestLog(log.path, log.requests[:requests], (), log.tokenizer)
    counts = {"target": 0, "head": 0}
    hooks = [target.register_forward_hook(lambda *a: counts.__setitem__("target",
                                                                       counts["target"] + 1)),
             head.register_forward_hook(lambda *a: counts.__setitem__("head",
                                                                     counts["head"] + 1))]
    try:
        M.replay_head(log, method="eagle3", gammas=gammas[:1],
                      models={"target": target, "head": head})  # warm-up
        counts.update(target=0, head=0)
        prof, info = M.replay_head(log, method="eagle3", gammas=gammas,
                                   models={"target": target, "head": head})
    finally:
        for h in hooks:
            h.remove()
    return {**info, "target_forwards": counts["target"], "head_forwards": counts["head"],
            "tau": {g: prof.entry(g).tau for g in prof.gammas},
            "s_per_1000": 1000 * info["seconds"] / info["positions"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gamma", type=int, nargs="+", default=[1, 3, 5])
    ap.add_argument("--requests", type=int, default=None, help="the first N requests (all)")
    args = ap.parse_args(argv)
    r = run(tuple(args.gamma), args.requests)
    print(f"bundled EAGLE-3 head replay: {r['requests']} requests, {r['positions']} response "
          f"tokens, gammas {args.gamma}: {r['seconds']:.2f} s = {r['tokens_per_s']:.0f} "
          "tokens/s (one thread)")
    print(f"forwards: target {r['target_forwards']} (requests {r['requests']}), head "
          f"{r['head_forwards']} (max gamma {max(args.gamma)} per request)")
    print("tau by gamma: " + ", ".join(f"{g}: {t:.2f}" for g, t in r["tau"].items()))
    print(goal_line("seconds per 1,000 response tokens", r["s_per_1000"], GOAL_S_PER_1000, "s",
                    fmt="6.2f", at_most=True))
    one = r["target_forwards"] == r["requests"]
    print(goal_line("target forwards per request", r["target_forwards"] / r["requests"], 1.0,
                    "", fmt="6.2f", at_most=True) if one else
          f"target forwards per request  {r['target_forwards'] / r['requests']:.2f}: MISSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
