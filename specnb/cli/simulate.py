"""``specnb simulate``: what happens at my load, to my TTFT and TPOT, with and without
speculation? vLLM V1's scheduler simulated on a request log or a ``vllm bench serve``-like
load, each step timed by the serving model (:mod:`specnb.simulate`).

Exit status: 0 printed; 2 on bad input (argparse's own errors; a rate <= 0, a concurrency
< 1, lengths < 1, a token budget below one request's verify step, an acceptance profile
without the gammas simulated, a log row without lengths (ids, token counts, or text:
``--tokenizer``), ``--tokenizer`` without ``--requests``, a synthetic load that would take
more than :data:`MAX_SIM_S` to simulate (``--num-prompts``; above :data:`WARN_SIM_S` the
estimate is printed as a warning and the run goes on; with ``--engine vllm-v0`` a
``--max-num-batched-tokens`` V0 refuses to build; ``--schedule`` or
``--disable-by-batch-size`` with ``--engine sglang``): one line naming the flag or row).
With ``--engine sglang`` the line printed is SGLang's launch line
(:func:`specnb.advise.plan.sglang_launch_line`, serve note ``sglang-launch-line``; none
with ``sglang-no-algorithm``) and no vLLM schedule is simulated.
Only argparse is imported at registration.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

from . import error, light_checks, listed_twice, message, positive_int, refuse, too_large
from .plan import DTYPE_CHOICES, KV_CACHE_CHOICES

__all__ = ["register", "run", "simulate", "format_simulation", "estimate_seconds"]

#: Per-request lists of a bench file left out of ``--json`` (kept in ``--save-result``).
_LISTS = ("input_lens", "output_lens", "ttfts", "itls")

#: An optimistic bound on the simulator's speed, in request-steps (one request scheduled in
#: one engine step) per second: benchmarks/bench_simulate.py's load (1,000 requests of
#: 2,000 + 256 tokens at concurrency 64) measured about 61,000 a second with speculation off
#: and 18,000 with EAGLE-3 k = 3 (2 shared cores, under load). The estimate of a load's
#: simulation time divides a lower bound on its request-steps by it: a floor, not a forecast.
SIM_REQUEST_STEPS_PER_S = 100_000
#: A synthetic load whose simulation would take at least this long (s) is refused (exit 2).
MAX_SIM_S = 3600.0
#: Above this (s) the estimate is printed to stderr as a warning before the run.
WARN_SIM_S = 60.0


def _duration(seconds: float) -> str:
    for unit, size in (("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.2g} s"


def estimate_seconds(a) -> tuple[float, float, int]:
    """A lower bound on a synthetic load's simulation: (request-steps, seconds at
    :data:`SIM_REQUEST_STEPS_PER_S`, policies), :func:`specnb.simulate.min_request_steps` of
    the policies the run compares (:func:`_policies`; the schedule ``specnb plan`` would
    choose, not known before planning, counted at the largest ``--gamma``).

    Raises
    ------
    ValueError
        a ``--schedule`` or ``--disable-by-batch-size`` the library refuses.
    """
    from .. import simulate as M

    tok, seqs = M.default_batch_limits(a.gpu)
    seqs = a.max_num_seqs or min(seqs, a.max_num_batched_tokens or tok)
    planned = not a.no_schedule and not a.schedule
    given = None if a.no_schedule or planned else _clamped_schedule(a, _schedule_flag(a))[0]
    pols = _policies(a, M, seqs, given, method=str(a.draft).lower())
    if planned:
        pols.append(M.policy("static", k=max(a.gamma)))
    out = max(int(a.output_len), 1)  # every request alike: one request's bound, times the count
    steps = M.min_request_steps([out], pols) * int(a.num_prompts)
    return steps, steps / SIM_REQUEST_STEPS_PER_S, len(pols)


def _schedule_flag(a):
    try:
        value = json.loads(a.schedule)
    except json.JSONDecodeError as exc:
        raise ValueError(f"--schedule is not JSON ({exc.msg}): give ranges as "
                         "[[lo, hi, k], ...]") from None
    if value is None:
        raise ValueError("--schedule null: give ranges as [[lo, hi, k], ...], or --no-schedule "
                         "to simulate none")
    return value


def _clamped_schedule(a, sched):
    """``(schedule, note)``: ``--schedule`` ``sched`` with every K above num_speculative_tokens
    (the largest ``--gamma``) clamped to it, as vLLM 0.33 runs it
    (:func:`specnb.vllm.schedule.clamp_schedule`, config check's warning), and note
    ``schedule-k-clamped``; ``(sched, None)`` when no K is above it (trial 9, T9-08).
    Raises ValueError for a schedule vLLM refuses, naming ``--schedule``."""
    from ..notes import Note
    from ..vllm.schedule import SCHEDULE_CLAMPED_CODE, clamp_schedule

    top = max(a.gamma)
    try:
        rows, above = clamp_schedule(sched, top)
    except ValueError as exc:
        raise ValueError(f"--schedule {json.dumps(sched)}: {exc}") from None
    if not above:
        return sched, None
    rows = [list(r) for r in rows]
    return rows, Note(SCHEDULE_CLAMPED_CODE, f"--schedule {json.dumps(sched)}: K above "
                      f"num_speculative_tokens = {top} (the largest --gamma) in "
                      f"{', '.join(json.dumps(list(r)) for r in above)}; vLLM clamps it "
                      "(build_dynamic_sd_schedule_lookup: min(num_speculative_tokens, K)), so "
                      f"the run simulates {json.dumps(rows)}")


def _policies(a, M, max_num_seqs: int, sched, method: str | None = None) -> list:
    """The policies a run compares (one home: :func:`simulate` and :func:`estimate_seconds`):
    off, one static k per ``--gamma``, the schedule ``sched`` unless it is off or one of the
    static ones, ``disable_by_batch_size`` at the first gamma. For a ``method`` whose schedule
    vLLM drops (:func:`specnb.vllm.schedule.schedule_dropped`: suffix), neither the schedule
    nor ``disable_by_batch_size`` (a schedule too) is simulated: vLLM runs the static
    num_speculative_tokens, the static policy of the largest ``--gamma`` (note
    :func:`_dropped_note`)."""
    from ..vllm import validate_schedule
    from ..vllm.schedule import schedule_dropped

    dropped = schedule_dropped(method) is not None
    pols = [M.policy("off")] + [M.policy("static", k=g) for g in a.gamma]
    if sched is not None:  # the one schedule rule (config check's), K <= the largest --gamma
        try:
            ks = {r[2] for r in validate_schedule(sched, max(a.gamma))}
        except ValueError as exc:
            raise ValueError(f"--schedule {json.dumps(sched)}: {exc} (--gamma's largest is "
                             "num_speculative_tokens)") from None
        if any(ks) and not (len(ks) == 1 and ks <= set(a.gamma)) and not dropped:
            pols.append(M.policy("schedule", schedule=sched, max_num_seqs=max_num_seqs))
    if a.disable_by_batch_size and not dropped:
        pols.append(M.policy("disable_by_batch_size", k=a.gamma[0],
                             max_batch=a.disable_by_batch_size, max_num_seqs=max_num_seqs))
    return pols


def register(subparsers) -> argparse.ArgumentParser:
    """Add ``simulate`` to the ``specnb`` command line (sets ``func`` to :func:`run`)."""
    p = subparsers.add_parser(
        "simulate", help="simulate my load: continuous batching with and without speculation",
        description=(
            "Simulate vLLM V1's scheduler (chunked prefill, decode and verify tokens before "
            "new prefill chunks, KV blocks, preemption; with --engine vllm-v0, V0's defaults "
            "per run: chunked prefill only for a plain run of a model above 32K positions, "
            "else prompts first) on a vllm bench serve-like load or a "
            "request log, with speculation off, at static draft lengths, with vLLM's "
            "per-batch-size schedule and disable_by_batch_size; each step timed by the "
            "serving model. Prints TTFT / TPOT / throughput per policy and the verdict; "
            "--save-result writes one vllm bench serve --save-result file per policy. Exit "
            "status: 0 printed, 2 bad input."))
    p.add_argument("--gpu", required=True, metavar="NAME", help="GPU from data/gpus.csv")
    p.add_argument("--gpus", type=positive_int, default=1, metavar="N",
                   help="tensor-parallel GPUs (default 1)")
    p.add_argument("--model", required=True, metavar="NAME|CONFIG", help="the target")
    p.add_argument("--draft", required=True, metavar="METHOD|NAME|CONFIG",
                   help="ngram, suffix, eagle, eagle3, mtp, dflash, self, a catalogue model "
                        "or a draft config.json (as specnb plan)")
    p.add_argument("--draft-config", metavar="CONFIG",
                   help="an EAGLE / EAGLE-3 head's or a DFlash drafter's config.json")
    p.add_argument("--dtype", choices=DTYPE_CHOICES, default=None,
                   help="target weight dtype (default: the published checkpoint's, as vLLM "
                   "loads it: bf16, DeepSeek-V3 fp8, gpt-oss mxfp4 experts)")
    p.add_argument("--engine", default=None, metavar="NAME",
                   help="engine profile (data/engine_profiles.csv; default vllm)")
    p.add_argument("--gamma", type=positive_int, nargs="+", required=True, metavar="K",
                   help="draft lengths (num_speculative_tokens): one static policy each, and "
                        "the gammas the schedule may use")
    acc = p.add_mutually_exclusive_group(required=True)
    acc.add_argument("--tau", type=float, metavar="T",
                     help="mean acceptance length measured at the first --gamma (alpha by "
                          "Eq. 1 for the other draft lengths, with a note; "
                          "specnb.theory.tau_by_gamma, the rule plan follows too)")
    acc.add_argument("--alpha", type=float, metavar="A", help="acceptance rate (i.i.d.)")
    acc.add_argument("--acceptance-rates", type=float, nargs="+", metavar="R",
                     help="vLLM's per-position acceptance rates r1 r2 ...")
    acc.add_argument("--acceptance-profile", metavar="PROFILE.json",
                     help="per-gamma, per-context acceptance from specnb replay")
    p.add_argument("--proposal-rate", type=float, default=None, metavar="M",
                   help="ngram / suffix: share of a request's steps that carry a draft "
                        "(ngram below 1: Model Runner V1's CPU proposer, simulated and served "
                        "with VLLM_USE_V2_MODEL_RUNNER=0; V2, vLLM 0.33's default, drafts at "
                        "every step)")
    load = p.add_argument_group("load (as vllm bench serve)")
    load.add_argument("--requests", metavar="LOG.jsonl", help=(
        "a request log: the rows specnb replay reads (text, token ids, chat) or token counts "
        "(input_len / output_len, usage.prompt_tokens ...), with optional arrival times "
        "(arrival_time, timestamp or created: seconds or ISO-8601)"))
    load.add_argument("--tokenizer", default=None, metavar="PATH", help=(
        "tokenizer folder (tokenizer.json) that encodes --requests text and chat rows, as "
        "specnb replay (default: the bundled one, data/models/tokenizer, with a note)"))
    load.add_argument("--input-len", type=int, default=None, metavar="N",
                      help="prompt tokens (--random-input-len)")
    load.add_argument("--output-len", type=int, default=None, metavar="N",
                      help="output tokens, ignore_eos (--random-output-len)")
    load.add_argument("--range-ratio", type=float, default=0.0, metavar="R",
                      help="--random-range-ratio: lengths uniform in [N (1 - R), N (1 + R)]")
    load.add_argument("--num-prompts", type=int, default=1000, metavar="N",
                      help="requests (default 1000); a load that would take over an hour "
                           "to simulate is refused, over a minute warned, with the estimate")
    load.add_argument("--concurrency", type=int, default=None, metavar="C",
                      help="closed loop of C requests in flight (--max-concurrency)")
    load.add_argument("--request-rate", type=float, default=None, metavar="R",
                      help="requests per second, Poisson (with --burstiness: gamma gaps); "
                           "inf: every request at t=0 (vllm bench serve's default)")
    load.add_argument("--burstiness", type=float, default=1.0, metavar="B",
                      help="gamma shape of the gaps (default 1: Poisson)")
    eng = p.add_argument_group("engine (vllm serve flags)")
    eng.add_argument("--max-num-seqs", type=int, default=None, metavar="N",
                     help="default: vLLM 0.33's for the GPU (1024 on H100-class, 256 below), "
                          "capped at --max-num-batched-tokens as vLLM caps it")
    eng.add_argument("--max-num-batched-tokens", type=int, default=None, metavar="N",
                     help="token budget per step (default: vLLM 0.33's for vllm serve on "
                          "the GPU: 8192 on H100 / H200, 16384 at >= 160 GiB, else 2048)")
    eng.add_argument("--gpu-memory-utilization", type=float, default=None, metavar="U",
                     help="the engine's share of GPU memory: the KV blocks (default: vLLM's "
                          "0.92, vLLM 0.20+'s; with --engine sglang SGLang's default "
                          "--mem-fraction-static for the GPU)")
    eng.add_argument("--kv-cache-dtype", choices=KV_CACHE_CHOICES, default="auto",
                     help="vLLM's --kv-cache-dtype (default auto: the activation dtype, bf16 "
                          "also for fp8 weights; fp8 halves the KV bytes: twice the blocks, "
                          "and it goes into the serve line)")
    eng.add_argument("--prefix-cache-hit-rate", type=float, default=0.0, metavar="H",
                     help="share of each prompt found in the prefix cache (default 0: off)")
    pol = p.add_argument_group("policies")
    pol.add_argument("--schedule", metavar="JSON",
                     help="a num_speculative_tokens_per_batch_size schedule to simulate, "
                          "e.g. '[[1, 32, 3], [33, 1024, 0]]' (default: specnb plan's for "
                          "this setup, contexts and gammas)")
    pol.add_argument("--no-schedule", action="store_true",
                     help="leave the per-batch schedule policy out")
    pol.add_argument("--disable-by-batch-size", type=positive_int, default=None,
                     metavar="N", help="also simulate k = the first --gamma up to N "
                                       "requests per step, off above")
    p.add_argument("--seed", type=int, default=0, help="seed of the draws (default 0)")
    p.add_argument("--goal", choices=("latency", "throughput"), default="latency",
                   help="latency: mean TPOT decides; throughput: output tokens/s")
    p.add_argument("--save-result", metavar="DIR",
                   help="write one vllm bench serve --save-result file per policy into DIR")
    p.add_argument("--json", action="store_true",
                   help="print {policies, off, on, output_throughput_ratio, tpot_ratio, "
                        "ttft_ratio, ...} (per-request lists left out)")
    p.set_defaults(func=run)
    return p


def _check_flags(a) -> str | None:
    huge = too_large(*((flag, getattr(a, flag[2:].replace("-", "_"))) for flag in (
        "--input-len", "--output-len", "--num-prompts", "--concurrency", "--max-num-seqs",
        "--max-num-batched-tokens", "--seed")))  # the estimate and the draws are float64
    if huge:
        return huge
    if a.schedule is not None and a.no_schedule:
        return ("--schedule and --no-schedule contradict each other: give the schedule to "
                "simulate, or --no-schedule for none")
    if a.save_result and os.path.exists(a.save_result) and not os.path.isdir(a.save_result):
        return (f"--save-result {a.save_result!r} is a file; give a directory (one "
                "vllm bench serve result file per policy goes in it)")
    if a.requests is None:
        if a.input_len is None or a.output_len is None:
            return "give --input-len and --output-len (tokens per request), or --requests LOG"
        for flag, v in (("--input-len", a.input_len), ("--output-len", a.output_len),
                        ("--num-prompts", a.num_prompts)):
            if v < 1:
                return f"{flag} must be >= 1, got {v}"
        if a.concurrency is None and a.request_rate is None:
            return "give --concurrency (closed loop) or --request-rate (requests/s), or both"
        try:
            steps, secs, npol = estimate_seconds(a)
        except ValueError as exc:
            return message(exc, _NAMES)
        if secs > MAX_SIM_S:
            most = int(a.num_prompts * MAX_SIM_S / secs)
            return (f"--num-prompts {a.num_prompts} (x --output-len {a.output_len}): at least "
                    f"{steps:.3g} request-steps over {npol} policies, at least "
                    f"{_duration(secs)} to simulate; give --num-prompts <= {most:,} (about "
                    f"{_duration(MAX_SIM_S)})")
    elif a.input_len is not None or a.output_len is not None:
        return "--requests gives the lengths; leave out --input-len / --output-len"
    if a.tokenizer is not None and a.requests is None:
        return ("--tokenizer encodes the text rows of --requests LOG; give the log, or leave "
                "--tokenizer out")
    if a.concurrency is not None and a.concurrency < 1:
        return f"--concurrency must be >= 1, got {a.concurrency}"
    if not a.burstiness > 0:
        return f"--burstiness must be > 0, got {a.burstiness:g}"
    for flag, v in (("--max-num-seqs", a.max_num_seqs),
                    ("--max-num-batched-tokens", a.max_num_batched_tokens)):
        if v is not None and v < 1:
            return f"{flag} must be >= 1, got {v}"
    if a.max_num_seqs is not None:
        # vLLM's SchedulerConfig refuses a budget below max_num_seqs (without
        # --max-num-seqs, vLLM caps its default at the budget: engine_config)
        from ..simulate import default_batch_limits

        try:
            tok = a.max_num_batched_tokens or default_batch_limits(a.gpu)[0]
        except ValueError as exc:
            return _flag_names(str(exc).splitlines()[0])
        if tok < a.max_num_seqs:
            given = "" if a.max_num_batched_tokens else f" (vLLM's default on {a.gpu})"
            return (f"--max-num-batched-tokens {tok}{given} is below --max-num-seqs "
                    f"{a.max_num_seqs}: vLLM requires max_num_batched_tokens >= max_num_seqs")
    if a.max_num_batched_tokens is not None and a.max_num_batched_tokens < 1 + max(a.gamma):
        return (f"--max-num-batched-tokens {a.max_num_batched_tokens} is below one request's "
                f"verify step (1 + {max(a.gamma)} tokens)")
    return listed_twice(("--gamma", a.gamma))


#: Library parameter names that errors without ``param`` may spell (named as flags by
#: :data:`specnb.cli.FLAGS`).
_NAMES = ("range_ratio", "max_batch", "max_num_batched_tokens", "proposal_rate")


def _acceptance(a, M, profile=None):
    if a.acceptance_profile:
        return M.acceptance(profile=profile, proposal_rate=a.proposal_rate)
    if a.tau is not None:
        return M.acceptance(tau=a.tau, gamma=a.gamma[0], proposal_rate=a.proposal_rate)
    if a.alpha is not None:
        return M.acceptance(alpha=a.alpha, proposal_rate=a.proposal_rate)
    return M.acceptance(acceptance_rates=a.acceptance_rates, proposal_rate=a.proposal_rate)


def _plan_schedule(st, acc, workload, gammas, max_num_seqs):
    """specnb plan's schedule for this setup at the load's mean decode context."""
    import numpy as np

    from .. import serving as S
    from ..advise import serving_plan

    ctx = int(np.mean(workload.input_len) + np.mean(workload.output_len) / 2)
    top = max(1, min(max_num_seqs, workload.max_concurrency or max_num_seqs))
    taus = [acc.tau(g, ctx) for g in gammas]
    nothing = S.cannot_serve(st, [ctx], context_flag="--input-len + --output-len")
    if nothing is not None:  # simulate's flags named (T6-C5); the plan's check is the same
        raise ValueError(f"at the load's mean context {ctx}: {nothing.message}")
    p = serving_plan(st, [1, top], [ctx], list(gammas), tau=taus)
    if p.cannot_serve is not None:  # nothing fits at the load's context: say so, do not run
        raise ValueError(f"at the load's mean context {ctx}: {p.cannot_serve.message}")
    return None if p.schedule is None else [list(map(int, r)) for r in p.schedule]


def _check_profile_drafts(profile, gammas, path) -> None:
    """ValueError naming the profile and gamma when the profile's entry for a simulated gamma
    proposed no draft (its tau is undefined): nothing to simulate (T8a-09)."""
    from pathlib import Path

    for g in gammas or ():
        if g not in profile.gammas:
            continue  # the gamma check names that
        e = profile.entry(g, context=None)
        if e.counters.num_drafts == 0:
            raise ValueError(f"acceptance profile {Path(path).name} has no drafts at gamma {g} "
                             "(the replayed method proposed none): nothing to simulate; "
                             "replay a log where it drafts, or leave that gamma out")


def simulate(a) -> dict:
    """The ``--json`` dict. Raises ValueError / FileNotFoundError on bad input."""
    from .. import serving as S
    from .. import simulate as M

    st = S.setup(a.gpu, a.model, a.draft, gpus=a.gpus, dtype=a.dtype, engine=a.engine,
                 kv_dtype=a.kv_cache_dtype,
                 draft_config=a.draft_config,
                 gpu_memory_utilization=a.gpu_memory_utilization,
                 proposal_rate=1.0 if a.proposal_rate is None else a.proposal_rate)  # T9-08
    from ..advise.plan import check_v0_draft

    check_v0_draft(st)  # a draft vLLM V0 never had: bad input (T7-07)
    profile = None
    if a.acceptance_profile:
        from .. import acceptance_profile

        from ..advise.plan import check_profile_method

        profile = acceptance_profile.load(a.acceptance_profile)
        check_profile_method(profile, st.draft.method, "simulation", "simulate")  # T8a-04
        _check_profile_drafts(profile, a.gamma, a.acceptance_profile)  # T8a-09
    acc = _acceptance(a, M, profile)
    from ..advise.plan import plan_runner

    runner = plan_runner(st.draft.method, profile,  # the profile's, else vLLM's (T8a-01)
                         1.0 if a.proposal_rate is None else a.proposal_rate)
    sglang = st.engine.family == "sglang"  # sglang-moe too
    if sglang and (a.schedule or a.disable_by_batch_size):  # vLLM's per-batch-size K
        flag = "--schedule" if a.schedule else "--disable-by-batch-size"
        raise ValueError(f"{flag} with --engine sglang: SGLang runs one "
                         "--speculative-num-steps at every batch size (no "
                         "num_speculative_tokens_per_batch_size); leave it out")
    if a.requests:
        w = M.from_log(a.requests, tokenizer=a.tokenizer, request_rate=a.request_rate,
                       burstiness=a.burstiness, concurrency=a.concurrency, seed=a.seed)
    else:
        w = M.synthetic(a.num_prompts, a.input_len, a.output_len, range_ratio=a.range_ratio,
                        concurrency=a.concurrency, request_rate=a.request_rate,
                        burstiness=a.burstiness, seed=a.seed)
    kw = dict(max_num_seqs=a.max_num_seqs, max_num_batched_tokens=a.max_num_batched_tokens,
              prefix_cache_hit_rate=a.prefix_cache_hit_rate)
    off_cfg = None
    if st.engine.family == "vllm-v0":  # V0's scheduler defaults, per run (v0_engine_config)
        given = {k: v for k, v in kw.items() if v is not None}
        cfg = M.v0_engine_config(st, speculative=True, **given)
        off_cfg = M.v0_engine_config(st, speculative=False, **given)
    else:
        from ..advise.plan import served_method

        cfg = M.engine_config(st, host=M.host_cost(
            st, runner=runner, method=served_method(st.draft.method, profile)), **kw)
    sched = None
    if not a.no_schedule and not sglang:
        sched = _schedule_flag(a) if a.schedule else _plan_schedule(
            st, acc, w, a.gamma, cfg.max_num_seqs)
    clamped = None
    if a.schedule and sched is not None:  # vLLM clamps K to num_speculative_tokens (T9-08)
        sched, clamped = _clamped_schedule(a, sched)
    dropped = _dropped_note(a, st, sched, cfg.max_num_seqs)
    if dropped is not None:  # vLLM runs the static K: that is the schedule shown (T7-05)
        sched = [[1, cfg.max_num_seqs, max(a.gamma)]]
    pols = _policies(a, M, cfg.max_num_seqs, sched, method=st.draft.method)
    sim = M.simulate(st, w, pols, acceptance=acc, config=cfg, seed=a.seed,
                     off_config=off_cfg)
    cmp = sim.compare(goal=a.goal)
    saved = []
    if a.save_result:
        os.makedirs(a.save_result, exist_ok=True)
        for name, r in sim.results.items():
            path = os.path.join(a.save_result, f"{name.replace('=', '')}.json")
            with open(path, "w") as f:
                json.dump(r, f)
            saved.append(path)
    strip = lambda r: {k: v for k, v in r.items() if k not in _LISTS}  # noqa: E731
    on = cmp["on"]
    notes = _notes(a, w, profile, cmp, sim.config, off_cfg, st) + [
        n for n in (clamped, dropped) if n is not None]
    serve, serve_notes = (_serve_line(st, sim.config, pols, on, w, profile, runner)
                          if cmp["verdict"] == "pays" else (None, []))
    return {"setup": {"gpu": st.gpu.name, "gpus": st.gpus, "model": st.target.name,
                      "dtype": st.dtype, "kv_cache_dtype": st.kv_dtype,
                      "dtype_from": "--dtype" if a.dtype else "checkpoint",
                      "draft": st.draft.name, "engine": st.engine.name, "runner": runner,
                      "acceptance": sim.acceptance, "workload": w.source,
                      "max_num_seqs": sim.config.max_num_seqs,
                      "max_num_batched_tokens": sim.config.max_num_batched_tokens,
                      "num_gpu_blocks": sim.config.num_gpu_blocks},
            "policies": {n: strip(r) for n, r in sim.results.items()},
            "off": strip(sim.results["off"]), "on": strip(sim.results[on]), "on_policy": on,
            "output_throughput_ratio": cmp["output_throughput_ratio"],
            "tpot_ratio": cmp["tpot_ratio"], "ttft_ratio": cmp["ttft_ratio"],
            "verdict": cmp["verdict"], "goal": a.goal, "ratios": cmp["policies"],
            "schedule": sched, "serve": serve, "serve_notes": [n.message for n in serve_notes],
            "serve_note_codes": [n.code for n in serve_notes], "saved": saved,
            "notes": [n.message for n in notes], "note_codes": [n.code for n in notes]}


def _dropped_note(a, st, sched, max_num_seqs):
    """Note ``dynamic-schedule-disabled-for-method`` when ``--schedule`` (with more than one
    K) or ``--disable-by-batch-size`` is given for a draft method whose schedule vLLM 0.33
    drops (:func:`specnb.vllm.schedule.schedule_dropped`; trial 7, T7-05): vLLM warns and
    falls back to the static num_speculative_tokens (the largest ``--gamma``), so that is
    what is simulated, not refused (vLLM starts). None otherwise (a planned schedule is
    static already: :func:`specnb.advise.plan.static_schedule`)."""
    from ..notes import Note
    from ..vllm.schedule import SCHEDULE_DROPPED_CODE, schedule_dropped

    if st.engine.family != "vllm":
        return None
    k = max(a.gamma)
    why = schedule_dropped(st.draft.method, k)
    many = a.schedule is not None and sched is not None and len({r[2] for r in sched}) > 1
    if why is None or not (many or a.disable_by_batch_size):
        return None
    given = (f"--schedule {json.dumps(sched)}" if many else
             f"--disable-by-batch-size {a.disable_by_batch_size}")
    return Note(SCHEDULE_DROPPED_CODE, f"{why}: {given} is not what the server runs, so the "
                f"run simulates what vLLM does instead, the static k={k} policy (the largest "
                f"--gamma), for batch sizes 1..{max_num_seqs}")


#: How far below 1 the TTFT ratio may fall on a fixed-length closed loop before the lockstep
#: note is printed (notebook 10, section "Where speculation stops paying").
LOCKSTEP_TTFT_TOLERANCE = 0.1


def _notes(a, w, profile, cmp, cfg=None, off_cfg=None, st=None) -> list:
    """The run's coded notes: ``v0-defaults-per-run`` (``--engine vllm-v0``: the off run
    scheduled otherwise than the speculating ones), ``profile-context-extrapolated`` (the
    load's contexts beyond the acceptance profile's log, as ``plan`` says it),
    ``ttft-closed-loop-lockstep`` (a fixed-length closed loop moves TTFT for a reason of its
    own: notebook 10), ``fa2-multi-token-attention`` (:func:`specnb.serving.multi_token_note`
    at the load's longest context), ``tau-read-at-first-gamma`` (one --tau with several
    --gamma: :func:`specnb.theory.tau_by_gamma`, the rule plan follows too),
    ``log-text-bundled-tokenizer`` (:func:`_bundled_tokenizer_note`)."""
    import numpy as np

    from ..advise.plan import profile_context_notes
    from ..notes import Note
    from ..serving import multi_token_note

    out = []
    bundled = _bundled_tokenizer_note(a, w)
    if bundled is not None:
        out.append(bundled)
    if a.tau is not None and len(a.gamma) > 1:  # one tau, several gammas: say how it is read
        from ..theory import tau_by_gamma

        out.append(tau_by_gamma(a.tau, a.gamma)[2])
    top = int(np.max(np.asarray(w.input_len) + np.asarray(w.output_len)))
    fa2 = None if st is None else multi_token_note(st, [top])
    if fa2 is not None:
        out.append(fa2)
    if off_cfg is not None and cfg is not None and off_cfg != cfg:
        how = lambda c: ("chunked prefill, budget" if c.chunked_prefill  # noqa: E731
                         else "prompts first, budget") + f" {c.max_num_batched_tokens}"
        out.append(Note("v0-defaults-per-run",
                        f"vLLM V0's defaults per run (v0.6.3 create_engine_config): off with "
                        f"{how(off_cfg)}, speculating with {how(cfg)} (V0 turns chunked "
                        "prefill on by default above 32K positions only without speculation)"))
    if profile is not None:  # the last step drafts at context in + out - 1, as replay counts
        out += profile_context_notes(profile, [top - 1])
    fixed = not a.requests and not a.range_ratio and a.concurrency is not None
    if fixed and cmp["ttft_ratio"] < 1.0 - LOCKSTEP_TTFT_TOLERANCE:  # the lockstep lowers
        # only the speculating run's TTFT: a ratio above 1 is a real cost (longer steps)
        out.append(Note("ttft-closed-loop-lockstep",
                        f"TTFT x {cmp['ttft_ratio']:.3f} on a closed loop of fixed lengths: "
                        "without speculation a wave of requests finishes in one step, so the "
                        "next wave arrives together and waits for the whole wave's prefill; "
                        "speculation's varying accepted lengths break that lockstep. That is "
                        "not a faster prefill: give --range-ratio (e.g. 0.5) to see it go"))
    return out


def _bundled_tokenizer_note(a, w):
    """Note ``log-text-bundled-tokenizer`` when text rows of a log other than the bundled one
    were encoded with the bundled tokenizer (no ``--tokenizer``): a toy vocabulary, not the
    served model's, so the lengths are not the server's token counts. None otherwise."""
    from pathlib import Path

    from ..notes import Note
    from ..request_log import BUNDLED_LOGGED, BUNDLED_TOKENIZER

    if a.tokenizer is not None or w.tokenizer is None \
            or Path(a.requests).resolve() == BUNDLED_LOGGED.resolve():
        return None
    return Note("log-text-bundled-tokenizer",
                f"the log's text rows were encoded with the bundled tokenizer "
                f"({BUNDLED_TOKENIZER}), not the served model's: give --tokenizer (the "
                "model's tokenizer folder) for its token counts, or log prompt_ids / "
                "response_ids or usage counts")


def _serve_line(st, cfg, pols, on, workload, profile=None, runner=None):
    """The serve line of the winning policy (:func:`specnb.advise.plan.setup_serve_line`: the
    plan's flags, the weight dtype, --max-model-len of the longest request when the model's
    full length does not fit; the acceptance profile's drafter settings, as plan serves them:
    :func:`specnb.advise.plan.setup_config`) and its notes; with engine sglang SGLang's
    launch line (:func:`specnb.advise.plan.sglang_launch_line`, as ``plan --engine sglang``),
    note ``sglang-launch-line``, or none with note ``sglang-no-algorithm``."""
    import numpy as np

    from ..advise.plan import setup_config, setup_serve_line, sglang_launch, v0_no_serve_line
    from ..notes import Note

    v0 = v0_no_serve_line(st, "simulate")
    if v0 is not None:  # a V0 run: no V1 line (T6-W3)
        return None, [v0]
    pol = next(p for p in pols if p.name == on)
    sched = [list(r) for r in pol.schedule] if pol.schedule else [[1, cfg.max_num_seqs, pol.k]]
    conf, _ = setup_config(st, sched, acceptance_profile=profile)
    if conf is None:
        return None, []
    if st.engine.family == "sglang":  # SGLang's own launch line (plan's: one home)
        # the most requests the run had in flight: a closed loop's concurrency, else the cap
        running = min(cfg.max_num_seqs, workload.max_concurrency or cfg.max_num_seqs)
        longest = int(np.max(np.asarray(workload.input_len) + np.asarray(workload.output_len)))
        line, launch_notes = sglang_launch(st, conf, max_num_seqs=running, contexts=[longest])
        if line is None:
            return None, [Note("sglang-no-algorithm",
                               f"no launch line: the draft method {st.draft.method} has no "
                               "SGLang --speculative-algorithm (EAGLE, EAGLE3, STANDALONE, "
                               "NGRAM)")]
        return line, [Note("sglang-launch-line",
                           "the figures are SGLang's (engine sglang): the line is SGLang's "
                           "launch_server, one --speculative-num-steps at every batch size "
                           "(no vLLM schedule simulated); --max-num-batched-tokens is vLLM's "
                           "and is not in it")] + launch_notes
    longest = int(np.max(np.asarray(workload.input_len) + np.asarray(workload.output_len)))
    return setup_serve_line(st, conf, max_num_seqs=cfg.max_num_seqs, contexts=[longest],
                            extra_args=["--max-num-batched-tokens",
                                        str(cfg.max_num_batched_tokens)], runner=runner)


def format_simulation(r: dict) -> str:
    """The text report: one row per policy (TTFT, TPOT, ITL, throughput, ratios to off) and
    the verdict for the goal, the schedule and the serve line."""
    import pandas as pd

    su = r["setup"]
    ck = ", the checkpoint's" if su.get("dtype_from") == "checkpoint" else ""
    dt = ", ".join(([] if su.get("dtype", "bf16") == "bf16" else [f"{su['dtype']} weights{ck}"])
                   + ([] if su.get("kv_cache_dtype", "auto") == "auto"
                      else [f"KV cache {su['kv_cache_dtype']}"]))
    dt = f" ({dt})" if dt else ""
    lines = [f"{su['model']}{dt} on {su['gpus']} x {su['gpu']}, draft {su['draft']}, "
             f"{su['acceptance']}; engine {su['engine']}"
             + (f" (Model Runner {su['runner'].upper()})" if su.get("runner")
                and su["engine"] == "vllm" else "") + f"; {su['workload']}; max_num_seqs "
             f"{su['max_num_seqs']}, max_num_batched_tokens {su['max_num_batched_tokens']}, "
             f"{su['num_gpu_blocks']} KV blocks"]
    rows = []
    for name, p in r["policies"].items():
        rat = r["ratios"].get(name, {})
        rows.append({"policy": name, "mean TTFT ms": f"{p['mean_ttft_ms']:.1f}",
                     "p99 TTFT": f"{p['p99_ttft_ms']:.1f}",
                     "mean TPOT ms": f"{p['mean_tpot_ms']:.2f}", "p99 TPOT": f"{p['p99_tpot_ms']:.2f}",
                     "mean ITL ms": f"{p['mean_itl_ms']:.2f}",
                     "out tok/s": f"{p['output_throughput']:.0f}",
                     "req/s": f"{p['request_throughput']:.2f}",
                     "tau": (f"{p['spec_decode_acceptance_length']:.2f}"
                             if "spec_decode_acceptance_length" in p else "-"),
                     "TPOT x": (f"{rat['tpot_ratio']:.3f}" if rat and rat["tpot_ratio"] is not None
                                else "-"),
                     "tok/s x": f"{rat['output_throughput_ratio']:.3f}" if rat else "-",
                     "verdict": rat.get("verdict", "-")})
    lines += ["", pd.DataFrame(rows).to_string(index=False), ""]
    tpot = "-" if r["tpot_ratio"] is None else f"{r['tpot_ratio']:.3f}"
    lines.append(f"goal {r['goal']}: best policy {r['on_policy']} ({r['verdict']}): mean TPOT x "
                 f"{tpot}, mean TTFT x {r['ttft_ratio']:.3f}, output throughput x "
                 f"{r['output_throughput_ratio']:.3f} against off")
    if "disable_by_batch_size" in r["policies"]:
        lines.append("note: disable_by_batch_size is V0's rule, removed from vLLM in PR #35060 "
                     "(0.33 rejects the key): simulated as the schedule [[1, N, k], [N + 1, "
                     "max_num_seqs, 0]], which is what its serve line sets")
    if r["schedule"] is not None and "schedule" in r["policies"]:
        lines.append(f"schedule simulated: {json.dumps(r['schedule'])}")
    elif r["schedule"] is not None:
        lines.append(f"schedule {json.dumps(r['schedule'])}: one K at every batch size, the "
                     "static policy of that K above (no row of its own)")
    lines += [f"note: {n}" for n in r.get("notes", [])]
    if r["serve"]:
        lines.append(r["serve"])
    elif "sglang-no-algorithm" in r.get("serve_note_codes", []):
        lines.append("launch: none (see the note)")
    elif "v0-no-serve-line" in r.get("serve_note_codes", []):
        lines.append("serve: none (the run is vLLM V0's; a vllm serve line is V1's: see the "
                     "note)")
    else:
        lines.append("serve: leave speculative decoding off")
    lines += [f"note: {n}" for n in r.get("serve_notes", [])]
    lines += [f"saved {p}" for p in r["saved"]]
    return "\n".join(lines)


def _light_checks(a) -> None:
    """The library's own checks of flag values that live in light modules
    (:mod:`specnb.limits`, :mod:`specnb.theory`), run before the simulator and the serving
    model are imported (as ``specnb plan`` does). Raises their ValueError / TypeError."""
    from .. import theory

    light_checks(a)
    if a.alpha is not None:
        theory.tokens_per_step(a.gamma, alpha=a.alpha)
    if a.tau is not None:
        theory.tokens_per_step(a.gamma[0], tau=a.tau)  # tau is measured at the first --gamma


def run(a) -> int:
    try:
        _light_checks(a)
    except (ValueError, TypeError) as exc:
        return refuse("simulate", exc, _NAMES)
    bad = _check_flags(a)
    if bad:
        return error("simulate", bad)
    if a.requests is None:
        steps, secs, npol = estimate_seconds(a)
        if secs > WARN_SIM_S:
            print(f"specnb simulate: warning: --num-prompts {a.num_prompts}: at least "
                  f"{steps:.3g} request-steps over {npol} policies, at least {_duration(secs)} "
                  "to simulate", file=sys.stderr)
    try:
        result = simulate(a)
    except (ValueError, TypeError, OSError) as exc:
        return refuse("simulate", exc, _NAMES)
    if a.json:
        print(json.dumps(result, default=lambda x: None if isinstance(x, float)
                         and not math.isfinite(x) else x))
    else:
        print(format_simulation(result))
    sys.stdout.flush()
    return 0
