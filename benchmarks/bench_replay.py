"""How fast does ``specnb replay`` go on a large request log?

Prints:
1. n-gram: read a JSON-lines log of 10,000 requests of 2,000 prompt + 500 response token ids
   (``specnb.request_log.read``) and replay it at gamma 1, 3, 5 (``specnb.replay.replay``);
   the goal (issue 21): under 60 s for the read and the replay;
2. per step, specnb's n-gram replay against calling vLLM's own
   ``_find_longest_matched_ngram_and_propose_tokens`` (numba, in the oracle's virtualenv
   ``.venv-vllm-0.33.0`` when it is there) on the same kind of sequences: vLLM's proposer does
   one O(context) scan per step, the replay one O(N log N) pass per request for every step;
3. suffix, on each backend (``specnb replay --suffix-backend``): specnb's trees compiled by
   numba (the default where numba imports) on the whole log (``--numba-requests``),
   arctic-inference's own compiled ``SuffixDecodingCache`` (``make suffix-backend``; the
   line says when it is not built) on the log's first ``--arctic-requests`` (default
   1,000), specnb's pure-Python trees on the first ``--suffix-requests`` (default 100),
   each in one process and with ``--workers`` processes (default: the cores); the time for
   10,000 extrapolated where fewer ran (the per-request cost is dominated by the request's
   own trees, so it grows about linearly); the same 60 s goal, met or MISSED per line (each
   request replayed once for all three gammas: the trees advanced once, each gamma
   speculating at its own steps); then numba on the other backends' requests in the same
   run: the ratio of per-request costs under the same load, and their tau compared;
4. draft models: teacher forcing of the bundled drafts along the bundled log (``specnb replay
   --method draft_model``'s path), response tokens per second on this CPU.

The log is synthetic and seeded: Zipf-distributed tokens from a 32,000-token vocabulary;
responses that copy spans of their prompt and of earlier responses (what n-gram and suffix
feed on) between fresh tokens. Run: .venv/bin/python benchmarks/bench_replay.py [--requests N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _goals import goal_line  # noqa: E402

from specnb import replay as R  # noqa: E402
from specnb import request_log  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ORACLE_PY = ROOT / ".venv-vllm-0.33.0" / "bin" / "python"
VOCAB = 32000


def synthetic(n: int, prompt: int, response: int, seed: int = 0):
    """``n`` (prompt ids, response ids) pairs (int64 arrays), seeded."""
    rng = np.random.default_rng(seed)
    earlier = None
    for _ in range(n):
        p = np.minimum(rng.zipf(1.2, prompt), VOCAB) - 1
        parts, have = [], 0
        while have < response:
            r = rng.random()
            if r < 0.4:
                j = int(rng.integers(0, prompt - 40))
                part = p[j:j + int(rng.integers(4, 40))]
            elif r < 0.55 and earlier is not None:
                j = int(rng.integers(0, earlier.size - 40))
                part = earlier[j:j + int(rng.integers(4, 40))]
            else:
                part = np.minimum(rng.zipf(1.2, int(rng.integers(1, 12))), VOCAB) - 1
            parts.append(part)
            have += part.size
        resp = np.concatenate(parts)[:response]
        earlier = resp
        yield p.astype(np.int64), resp.astype(np.int64)


def write_log(path: Path, n: int, prompt: int, response: int) -> None:
    with path.open("w") as f:
        for i, (p, r) in enumerate(synthetic(n, prompt, response)):
            f.write(json.dumps({"id": f"r{i}", "task": ("chat", "code")[i % 2],
                                "prompt_ids": p.tolist(), "response_ids": r.tolist()}) + "\n")


_VLLM_TIMER = r"""
import json, sys, time
import numpy as np
from vllm.v1.spec_decode.ngram_proposer import _find_longest_matched_ngram_and_propose_tokens as f
seqs = json.load(sys.stdin)
f(np.zeros(10, dtype=np.int32), 2, 5, 10**6, 3)  # compile
steps, t = 0, time.perf_counter()
for full, P, T_list in seqs:
    a = np.asarray(full, dtype=np.int32)
    for T in T_list:
        f(a[:T], 2, 5, 10**6, 3)
        steps += 1
print(json.dumps({"steps": steps, "s": time.perf_counter() - t}))
"""


def vllm_per_step(pairs, steps_by_req):
    """vLLM's own proposer timed per step on the same prefixes (None without its venv)."""
    if not ORACLE_PY.exists():
        return None
    payload = json.dumps([[np.concatenate([p, r]).tolist(), int(p.size),
                           [int(t) for t in steps]] for (p, r), steps in zip(pairs,
                                                                             steps_by_req)])
    try:
        out = subprocess.run([str(ORACLE_PY), "-c", _VLLM_TIMER], input=payload, text=True,
                             capture_output=True, timeout=600, check=True,
                             env={"VLLM_TARGET_DEVICE": "cpu", "PATH": "/usr/bin:/bin"})
    except (subprocess.SubprocessError, OSError) as exc:
        print(f"  (vLLM's proposer could not be timed: {exc})")
        return None
    d = json.loads(out.stdout.strip().splitlines()[-1])
    return d["s"] / d["steps"] * 1e6


def draft_models_tokens_per_s():
    from specnb import measure as M

    out = {}
    log = request_log.read()
    tokens = sum(r.response_len for r in log)
    for d in M.BUNDLED_DRAFTS:
        t = time.perf_counter()
        M.alpha_from_logged(None, [str(d)], gammas=[1, 3, 5], timing=False)
        out[d.name] = tokens / (time.perf_counter() - t)
    return out, tokens


def _suffix_run(sub, backend, workers):
    """(wall s, CPU s of this process and its workers, profile) of one suffix replay."""
    c0 = time.process_time() + _children_cpu()
    t0 = time.perf_counter()
    prof = R.replay(sub, "suffix", gammas=(1, 3, 5), suffix_backend=backend, workers=workers)
    return (time.perf_counter() - t0, time.process_time() + _children_cpu() - c0, prof)


def _children_cpu() -> float:
    r = os.times()
    return r.children_user + r.children_system


_NOT_HERE = {"numba": "numba does not import here (pip install 'specnb[fast]')",
             "arctic": "not built here (make suffix-backend builds arctic-inference's suffix "
                       "tree into the venv)"}


def suffix_figures(log, n, sizes, workers):
    """Section 3: each backend (``sizes``: backend -> how many of the log's first requests
    it replays) in one process and in ``workers`` processes, the time for ``n`` requests
    extrapolated (a request costs about the same wherever it is in the log: its own trees
    dominate, and the global tree's growth costs the compiled backends little more than its
    memory; the workers' rebuilding of earlier responses grows with the part's start, as it
    would in the whole run); each line met or MISSED against the 60 s goal. Then the numba
    backend on each other backend's requests in the same run (the ratio of their costs,
    the load alike) and whether their tau agree. A backend that does not import says so."""
    from specnb.replay import suffix as SX

    limit = 60.0 * n / 10000
    have = {"numba": SX.numba_version() is not None, "arctic": SX.arctic_version() is not None,
            "python": True}
    per_req = {}
    for backend in ("numba", "arctic", "python"):
        if not have[backend]:
            print(f"3. suffix, {backend} backend: {_NOT_HERE[backend]}")
            print(goal_line(f"suffix, {backend} backend: replay of {n} requests (not here)",
                            float("inf"), limit, "s"))
            continue
        label = f"suffix, {SX.backend_label(backend)} backend"
        m = min(sizes[backend], n)
        sub = request_log.RequestLog(log.path, log.requests[:m])
        if backend == "numba":  # compiled functions loaded (or compiled) before the clock
            _suffix_run(request_log.RequestLog(log.path, log.requests[:1]), backend, 1)
        for w in sorted({1, workers}):
            wall, cpu, prof = _suffix_run(sub, backend, w)
            per = wall / m
            tau = " ".join(f"{prof.entry(g).tau:.3f}" for g in prof.gammas)
            if w == 1:
                per_req[backend] = (m, per, tau)
            print(f"3. {label}, {w} process{'es' if w > 1 else ''}: {m} requests, gamma 1 3 5: "
                  f"{wall:.1f} s wall, {cpu:.1f} s CPU ({per * 1e3:.1f} ms per request); tau "
                  + tau)
            print(goal_line(f"{label} (workers {w}): replay of {n} requests (extrapolated from "
                            f"{m})", per * n, limit, "s"))
            if w == 1:
                one = wall
            else:
                print(f"   workers {w}: {one / wall:.2f} times faster than one process")
    if "numba" not in per_req:
        return
    for backend in ("arctic", "python"):
        if backend not in per_req:
            continue
        m, per, tau = per_req[backend]
        wall, _, prof = _suffix_run(request_log.RequestLog(log.path, log.requests[:m]),
                                    "numba", 1)
        ntau = " ".join(f"{prof.entry(g).tau:.3f}" for g in prof.gammas)
        print(f"   numba on {backend}'s {m} requests, one process: {wall / m * 1e3:.2f} ms per "
              f"request against {per * 1e3:.2f} ({per / (wall / m):.1f} times faster); tau "
              + ("equal" if ntau == tau else f"DIFFER (numba {ntau}, {backend} {tau})"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=10000)
    ap.add_argument("--prompt", type=int, default=2000)
    ap.add_argument("--response", type=int, default=500)
    ap.add_argument("--suffix-requests", type=int, default=100,
                    help="requests the pure-Python suffix backend replays (default 100)")
    ap.add_argument("--arctic-requests", type=int, default=1000,
                    help="requests the arctic suffix backend replays (default 1000)")
    ap.add_argument("--numba-requests", type=int, default=None,
                    help="requests the numba suffix backend replays (default: all)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                    help="processes for the --workers figures (default: the cores, "
                         f"{os.cpu_count()})")
    ap.add_argument("--no-models", action="store_true", help="skip the draft models (torch)")
    args = ap.parse_args(argv)
    n = args.requests
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (wall times "
          "grow with it; CPU times less)")
    print(f"synthetic log: {n} requests x ({args.prompt} prompt + {args.response} response) "
          "token ids")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "log.jsonl"
        t0 = time.perf_counter()
        write_log(path, n, args.prompt, args.response)
        print(f"  written in {time.perf_counter() - t0:.1f} s "
              f"({path.stat().st_size / 2 ** 20:.0f} MiB)")
        t0 = time.perf_counter()
        log = request_log.read(path, tokenizer=False)
        t_read = time.perf_counter() - t0
    print(f"1. read: {t_read:.1f} s")
    t0, c0 = time.perf_counter(), time.process_time()
    prof = R.replay(log, "ngram", gammas=(1, 3, 5), context_edges=(2100, 2300),
                    params={"prompt_lookup_min": 2, "prompt_lookup_max": 5})
    t_ng, c_ng = time.perf_counter() - t0, time.process_time() - c0
    steps = sum(prof.entry(g).counters.num_steps for g in prof.gammas)
    print(f"   ngram replay, gamma 1 3 5: {t_ng:.1f} s ({c_ng:.1f} s of CPU), {steps:,} steps "
          f"({t_ng / steps * 1e6:.2f} us per step); tau "
          + " ".join(f"{prof.entry(g).tau:.2f}" for g in prof.gammas))
    print(goal_line(f"ngram: read + replay of {n} requests", t_read + t_ng, 60.0 * n / 10000,
                    "s"))
    # 2. per step against vLLM's function on the first requests' gamma-3 steps
    k = min(20, n)
    pairs = [(r.prompt_ids, r.response_ids) for r in log.requests[:k]]
    p3 = R.check_params("ngram", {"prompt_lookup_min": 2, "prompt_lookup_max": 5})
    t0 = time.perf_counter()
    our = [s[3][0] for _, s in R.request_steps(log.requests[:k], "ngram", [3], p3)]
    ours = (time.perf_counter() - t0) / sum(len(x) for x in our) * 1e6
    theirs = vllm_per_step(pairs, our)
    print(f"2. per step (gamma 3, {k} requests, {sum(len(x) for x in our):,} steps): specnb "
          f"{ours:.1f} us" + ("" if theirs is None else
                              f", vLLM's numba proposer {theirs:.1f} us ({theirs / ours:.1f} "
                              "times specnb's)"))
    # 3. suffix on a subset per backend, extrapolated, one process and --workers
    suffix_figures(log, n, {"numba": args.numba_requests or n, "arctic": args.arctic_requests,
                            "python": args.suffix_requests}, args.workers)
    if not args.no_models:
        tps, tokens = draft_models_tokens_per_s()
        print(f"4. draft models, teacher forcing along the bundled log ({tokens} response "
              "tokens, CPU): " + ", ".join(f"{k} {v:,.0f} tokens/s" for k, v in tps.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
