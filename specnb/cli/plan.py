"""``specnb plan``: will speculation pay at my batch sizes and contexts, with which gamma, and
the vLLM schedule that says so.

Exit status: 0 printed; 2 on bad input (argparse's own errors, an unknown GPU, model, draft or
engine, tau > gamma + 1, a rate outside [0, 1], a proposal rate outside (0, 1] or given for a
draft that proposes for every sequence, a negative --input-len or an --output-len below 1, a
--gpu-memory-utilization outside (0, 1], a calibration CSV with a missing column or a
non-positive time, a draft whose vocabulary cannot match the target's, a --draft-config that
is not the --draft method's head; --topk below 1 or on an engine without trees,
--num-draft-tokens below 2 or above the 1 + topk + (gamma - 1) topk^2 nodes SGLang's tree
builder can fill (with topk 1 SGLang runs gamma + 1 and the plan notes it), --routing-skew outside [0, 0.95]; a bench file without the keys a bench calibration needs,
mixed models in one calibration set). Only argparse and :mod:`specnb.memory` are imported at
registration; numpy and pandas inside the command. An --input-len above a --context is refused
(exit 2); when nothing fits in memory (the weights, or one sequence at every context) the
first line says so and no schedule or serve line follows (exit 0).
"""

from __future__ import annotations

import argparse
import json
import sys

from ..memory import DTYPE_BYTES
from .._numbers import number_text
from . import error, light_checks, listed_twice, refuse, too_large

__all__ = ["register", "run", "plan", "format_plan"]

#: Weight dtypes a --dtype flag takes: :data:`specnb.serving.DTYPES`, i.e. the one dtype
#: table :data:`specnb.memory.DTYPE_BYTES` without fp32 (read from memory so that registration
#: does not import the serving model and pandas) and without mxfp4, a checkpoint's own layout
#: (gpt-oss), taken when --dtype is not given (:func:`specnb.serving.setup`).
DTYPE_CHOICES = tuple(d for d in DTYPE_BYTES if d not in ("fp32", "mxfp4"))

#: vLLM's --kv-cache-dtype values the model times: the vLLM names of
#: :data:`specnb.serving.KV_CACHE_DTYPES` (kept here so that registration imports no pandas).
KV_CACHE_CHOICES = ("auto", "bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2")

#: Largest --batch: specnb.serving.MAX_BATCH_SEARCH (the schedule and the crossover evaluate
#: every batch size 1..max; kept here so that registration imports no numpy).
MAX_BATCH = 65536
#: specnb.serving.MAX_GRID_CELLS (batch sizes x contexts x gammas), likewise.
MAX_GRID_CELLS = 2 ** 24


def register(subparsers) -> argparse.ArgumentParser:
    """Add ``plan`` to the ``specnb`` command line (sets ``func`` to :func:`run`)."""
    p = subparsers.add_parser(
        "plan", help="will speculation pay at my batch sizes and contexts? (step-time model)",
        description=(
            "Predict the speedup of speculative decoding for every batch size, context and "
            "draft length with a roofline step-time model (specnb.serving), mark the best "
            "gamma per batch, and print vLLM's num_speculative_tokens_per_batch_size "
            "schedule and a vllm serve line. Defaults come from published data "
            "(SpecDecode-Bench's fitted constants); --calibrate fits them to your own "
            "measured step times. Exit status: 0 printed, 2 bad input."))
    p.add_argument("--gpu", required=True, metavar="NAME",
                   help="GPU from data/gpus.csv, e.g. H100-SXM, H200, A100-SXM-80GB, L40S "
                        "(case-insensitive)")
    p.add_argument("--gpus", type=int, default=1, metavar="N",
                   help="tensor-parallel GPUs (default 1)")
    p.add_argument("--model", required=True, metavar="NAME|CONFIG",
                   help="target: a catalogue model (e.g. Llama-3.1-8B) or a Hugging Face "
                        "config.json")
    p.add_argument("--draft", required=True, metavar="METHOD|NAME|CONFIG",
                   help="ngram, suffix, eagle, eagle3, mtp, dflash, self, a catalogue model or a "
                        "draft config.json")
    p.add_argument("--draft-kv-budget", type=int, default=None, metavar="K",
                   help="the draft reads at most K context tokens (sparse KV, StreamingLLM)")
    p.add_argument("--dtype", choices=DTYPE_CHOICES, default=None,
                   help="target weight dtype (default: the published checkpoint's, as vLLM "
                   "loads it: bf16, DeepSeek-V3 fp8, gpt-oss mxfp4 experts)")
    p.add_argument("--draft-dtype", choices=DTYPE_CHOICES, default=None,
                   help="draft weight dtype (default: as vLLM loads it, the draft's own "
                   "checkpoint's: a head or unquantized draft model in bf16 whatever --dtype "
                   "says; mtp: the target's)")
    p.add_argument("--kv-cache-dtype", choices=KV_CACHE_CHOICES, default="auto",
                   help="vLLM's --kv-cache-dtype (default auto, vLLM's: the activation dtype, "
                        "bf16 also for fp8 weights; fp8 halves the KV bytes and goes into the "
                        "serve line)")
    p.add_argument("--context", type=int, nargs="+", required=True, metavar="S",
                   help="context lengths in tokens (KV cache per sequence); one above the "
                        "model's max_position_embeddings is modelled with a note")
    p.add_argument("--batch", type=int, nargs="+", required=True, metavar="B",
                   help="batch sizes (concurrent sequences per step)")
    p.add_argument("--gamma", type=int, nargs="+", required=True, metavar="G",
                   help="draft lengths (num_speculative_tokens) to compare")
    acc = p.add_mutually_exclusive_group()  # one is needed, or --calibrate-bench's tau
    acc.add_argument("--alpha", type=float, metavar="A",
                     help="acceptance rate; tau by Leviathan Eq. 1")
    acc.add_argument("--tau", type=float, nargs="+", metavar="T",
                     help="mean acceptance length: one per --gamma, or one value measured "
                          "at the first --gamma (the others by Eq. 1's alpha, with a note; "
                          "specnb.theory.tau_by_gamma, as simulate reads it)")
    acc.add_argument("--acceptance-profile", metavar="PROFILE.json",
                     help="tau per context bucket and gamma (and the proposal rate for "
                          "ngram / suffix) from `specnb replay LOG --out PROFILE.json`")
    acc.add_argument("--acceptance-rates", type=float, nargs="+", metavar="R",
                     help="vLLM's per-position acceptance rates r1 r2 ...; "
                          "tau(k) = 1 + r1 + ... + rk")
    p.add_argument("--draft-config", metavar="CONFIG",
                   help="an EAGLE / EAGLE-3 head's config.json (or its folder): the head's "
                        "shape and draft vocabulary (draft_vocab_size) are read from it "
                        "(default: one target layer; EAGLE-3 with 32,000 draft tokens)")
    p.add_argument("--engine", default=None, metavar="NAME",
                   help="serving engine profile from data/engine_profiles.csv: vllm (V1, the "
                        "default), vllm-v0, sglang, ideal (roofline only), specdecode-bench "
                        "(the model's defaults alone)")
    p.add_argument("--proposal-rate", type=float, default=None, metavar="M",
                   help="ngram / suffix: share of sequence-steps that carry a draft, 0 < M <= "
                        "1 (default 1); a step verifies B (1 + M gamma) tokens and a sequence "
                        "gains 1 + M (tau - 1), tau per draft as vLLM counts it. ngram below 1 "
                        "is Model Runner V1's CPU proposer (V2, vLLM 0.33's default, drafts at "
                        "every step): the serve line then sets VLLM_USE_V2_MODEL_RUNNER=0")
    p.add_argument("--input-len", type=int, default=None, metavar="N",
                   help="prompt tokens per sequence: with --output-len, rows gain "
                        "speedup_end_to_end (the prefill counted, as vllm bench serve times it)")
    p.add_argument("--output-len", type=int, default=None, metavar="N",
                   help="generated tokens per sequence (with --input-len)")
    p.add_argument("--gpu-memory-utilization", type=float,
                   default=None, metavar="U",
                   help="the engine's share of each GPU's memory (default: vLLM's 0.92, vLLM "
                        "0.20+'s; with --engine sglang SGLang's default --mem-fraction-static "
                        "for the GPU): batches whose KV cache does not fit beside the weights "
                        "never pay")
    _add_tree_flags(p)
    p.add_argument("--calibrate", metavar="MEASURED.csv",
                   help="fit efficiencies and fixed costs to measured step times (columns "
                        "role, batch_size, context, query_tokens, ms)")
    _add_bench_flags(p)
    p.add_argument("--json", action="store_true",
                   help="print one JSON object: rows, best, schedule, config (and serve, "
                        "notes, crossover_batch, paying_batches, calibration)")
    p.set_defaults(func=run)
    return p


def _add_tree_flags(p) -> None:
    """SGLang's tree flags and the MoE routing skew (issue 25)."""
    p.add_argument("--topk", type=int, default=None, metavar="K",
                   help="SGLang --speculative-eagle-topk: branches per draft step (with "
                        "--engine sglang; --gamma is then SGLang's --speculative-num-steps and "
                        "--tau its accept length, the bonus token included)")
    p.add_argument("--num-draft-tokens", type=int, default=None, metavar="N",
                   help="SGLang --speculative-num-draft-tokens: tokens verified per sequence "
                        "(the tree's nodes, the root counted; default steps + 1, a chain); at "
                        "most 1 + topk + (steps - 1) x topk^2, the candidates SGLang's tree "
                        "builder scores (eagle_utils.organize_draft_results); with topk 1 "
                        "SGLang runs steps + 1 whatever is given (server_args.py), and so does "
                        "the plan, with a note")
    p.add_argument("--routing-skew", type=float, default=None, metavar="S",
                   help="mixture-of-experts routing skew in [0, 0.95]: 0 (the default) is "
                        "uniform routing, the most experts a step can touch (no published "
                        "expert-load statistic was found; the published plain MoE steps of "
                        "data/moe_plain_steps.csv need no skew)")


def _tree(args, st, acceptance) -> dict | None:
    """The ``tree`` part of the plan: SGLang tree (or chain) speculation at every --batch and
    --context with the given --topk / --num-draft-tokens, or None without them."""
    if args.topk is None and args.num_draft_tokens is None:
        return None
    import numpy as np

    from .. import serving as S

    if len(args.gamma) != 1:
        raise ValueError("--topk / --num-draft-tokens take one --gamma (SGLang's "
                         f"--speculative-num-steps), got {len(args.gamma)}")
    steps = args.gamma[0]
    topk = 1 if args.topk is None else args.topk
    given = steps + 1 if args.num_draft_tokens is None else args.num_draft_tokens
    ndt, note = S.sglang_tree_shape(steps, topk, given)  # what SGLang runs (topk 1: steps + 1)
    S.check_tree(st, steps, topk, ndt)
    if "tau" not in acceptance:
        raise ValueError("--topk / --num-draft-tokens need --tau: the acceptance length as "
                         "SGLang reports it (accept len, the bonus token included)")
    tau = float(np.atleast_1d(acceptance["tau"])[0])
    b = np.asarray(args.batch)[:, None]
    c = np.asarray(args.context)[None, :]
    parts = S.tree_parts(st, b, c, steps, topk=topk, num_draft_tokens=ndt)
    sp = S.tree_speedup(st, b, c, steps, topk=topk, num_draft_tokens=ndt, tau=tau)
    rows = [{"batch_size": int(bb), "context": int(cc), "speedup": float(sp[i, j]),
             "verdict": S.verdict(float(sp[i, j])),
             **{k: float(v[i, j]) for k, v in parts.items()}}
            for i, bb in enumerate(args.batch) for j, cc in enumerate(args.context)]
    return {"steps": steps, "topk": topk, "num_draft_tokens": ndt,
            "num_draft_tokens_given": given, "tau": tau, "rows": rows,
            "notes": [] if note is None else [note.message],
            "note_codes": [] if note is None else [note.code]}


def _format_tree(tree: dict) -> list[str]:
    lines = ["", f"SGLang tree: --speculative-num-steps {tree['steps']} "
                 f"--speculative-eagle-topk {tree['topk']} --speculative-num-draft-tokens "
                 f"{tree['num_draft_tokens']}, accept length {tree['tau']:g}"]
    lines += [f"  batch {r['batch_size']:>5}  context {r['context']:>6}: speedup "
              f"{r['speedup']:.2f} ({r['verdict']}; T_plain {r['t_plain_ms']:.2f} ms, T_V "
              f"{r['t_verify_ms']:.2f} ms, drafting {r['t_draft_ms']:.2f} ms)"
              for r in tree["rows"]]
    return lines


def _check_flags(args) -> str | None:
    huge = too_large(*((flag, getattr(args, flag[2:].replace("-", "_"), None)) for flag in (
        "--gpus", "--context", "--draft-kv-budget", "--topk", "--num-draft-tokens",
        "--input-len", "--output-len")))  # --gamma, --batch: their own bounds, below
    if huge:
        return huge
    checks = [("--gpus", [args.gpus], 1), ("--context", args.context, 0),
              ("--batch", args.batch, 1), ("--gamma", args.gamma, 1)]
    if args.draft_kv_budget is not None:
        checks.append(("--draft-kv-budget", [args.draft_kv_budget], 1))
    if getattr(args, "topk", None) is not None:
        checks.append(("--topk", [args.topk], 1))
    for flag, values, lo in checks:
        for v in values:
            if v < lo:
                return f"{flag} must be >= {lo}, got {v}"
    from ..theory import MAX_GAMMA

    if max(args.gamma) > MAX_GAMMA:  # a huge one met the 2**53 bound first, not this one
        return f"--gamma must be in [1, {MAX_GAMMA}], got {number_text(max(args.gamma))}"
    if max(args.batch) > MAX_BATCH:
        return (f"--batch must be <= {MAX_BATCH}, got {number_text(max(args.batch))} (the "
                "schedule and the crossover evaluate every batch size from 1 to the largest)")
    cells = max(args.batch) * len(args.context) * len(args.gamma)
    if cells > MAX_GRID_CELLS:
        return (f"the largest --batch ({max(args.batch)}) x {len(args.context)} --context "
                f"values x {len(args.gamma)} --gamma values = {cells:,} model cells, above "
                f"{MAX_GRID_CELLS:,} (about 1 GB of memory: the schedule and the crossover "
                "evaluate every batch size from 1 to the largest); give fewer values")
    twice = listed_twice(("--context", args.context), ("--batch", args.batch),
                         ("--gamma", args.gamma))
    if twice:
        return twice
    bad = _check_bench_flags(args)
    if bad:
        return bad
    if args.tau is not None and len(args.tau) not in (1, len(args.gamma)):
        return (f"--tau takes one value or one per --gamma ({len(args.gamma)}), got "
                f"{len(args.tau)}")
    m = args.proposal_rate
    if m is not None and args.acceptance_profile:
        return ("--proposal-rate and --acceptance-profile: the profile gives the proposal rate "
                "(drafts / steps); leave --proposal-rate out")
    if (args.input_len is None) != (args.output_len is None):
        return "--input-len and --output-len go together (tokens per sequence), or neither"
    if args.input_len is not None and args.input_len < 0:
        return f"--input-len must be >= 0, got {args.input_len}"
    if args.output_len is not None and args.output_len < 1:
        return f"--output-len must be >= 1, got {args.output_len}"
    return None


def _acceptance_flags(args) -> dict:
    """The acceptance given by flag: {"alpha": A} or {"tau": T or array} or
    {"acceptance_rates": [...]}; {} for a profile or bench files."""
    if args.alpha is not None:
        return {"alpha": args.alpha}
    if args.tau is not None:
        from ..theory import tau_by_gamma

        if len(args.tau) == 1 and len(args.gamma) == 1:
            return {"tau": args.tau[0]}
        return {"tau": tau_by_gamma(args.tau, args.gamma)[0]}  # one tau: at the first gamma
    if args.acceptance_rates is not None:
        return {"acceptance_rates": args.acceptance_rates}
    return {}


def _tau_notes(args) -> list:
    """The note of :func:`specnb.theory.tau_by_gamma` when one --tau meets several --gamma."""
    if args.tau is None or len(args.tau) != 1 or len(args.gamma) == 1:
        return []
    from ..theory import tau_by_gamma

    return [tau_by_gamma(args.tau, args.gamma)[2]]


def _light_checks(args) -> None:
    """The library's own checks of the values flags give that live in light modules
    (:mod:`specnb.limits`, :mod:`specnb.theory`: numpy, no serving model, no pandas), run
    before the serving model is imported: a bad value is refused at once, in the library's
    words (named as flags by :func:`specnb.cli.refuse`). Raises their ValueError / TypeError."""
    from .. import theory

    light_checks(args)
    acceptance = _acceptance_flags(args)
    if acceptance:
        theory.tokens_per_step(args.gamma, **acceptance)


def plan(args) -> dict:
    """The plan as a JSON-ready dict (the ``--json`` output). Raises ValueError, TypeError
    or FileNotFoundError for bad input."""
    import numpy as np

    from .. import serving as S

    st = S.setup(args.gpu, args.model, args.draft, gpus=args.gpus, dtype=args.dtype,
                 draft_dtype=args.draft_dtype, kv_dtype=args.kv_cache_dtype, draft_kv_budget=args.draft_kv_budget,
                 engine=args.engine, draft_config=args.draft_config,
                 proposal_rate=1.0 if args.proposal_rate is None else args.proposal_rate,
                 gpu_memory_utilization=args.gpu_memory_utilization)
    from ..advise.plan import check_v0_draft

    check_v0_draft(st)  # a draft vLLM V0 never had: bad input (T7-07)
    if getattr(args, "routing_skew", None) is not None:
        import dataclasses

        st = dataclasses.replace(st, engine=S.with_routing_skew(st.engine, args.routing_skew))
    acceptance = _acceptance_flags(args)
    if acceptance:  # bad acceptance input fails before fitting
        S.tokens_per_step(args.gamma, **acceptance)
    profile = None
    if args.acceptance_profile:
        from .. import acceptance_profile as AP

        profile = AP.load(args.acceptance_profile)
        for g in args.gamma:
            profile.entry(g)  # a gamma the profile lacks fails before fitting
    calibration = None
    if args.calibrate:
        cal = S.calibrate(st, args.calibrate)
        st = cal.setup
        err = cal.report["relative_error"].abs()
        calibration = {"file": args.calibrate, "rows": int(len(cal.report)),
                       "median_abs_error": float(err.median()),
                       "max_abs_error": float(err.max()),
                       "target_efficiency": vars(st.target_efficiency),
                       "draft_efficiency": vars(st.draft_efficiency),
                       "notes": [n.message for n in cal.notes],
                       "note_codes": [n.code for n in cal.notes]}
    bench = None
    if args.calibrate_bench:
        st, bench = _calibrate_bench(args, st, acceptance)
    tree = _tree(args, st, acceptance)
    from ..advise import serving_plan
    from ..advise.plan import sglang_launch_line
    from ..notes import codes, messages

    p = serving_plan(st, args.batch, args.context, args.gamma, input_len=args.input_len,
                     output_len=args.output_len, acceptance_profile=profile, **acceptance)
    best_g, best_s = p.best
    best = []
    for i, b in enumerate(p.grid.batch_sizes):
        for j, s in enumerate(p.grid.contexts):
            fits = bool(p.grid.fits[i, j, 0])  # a batch that cannot run gets no on/off verdict
            best.append({"batch_size": int(b), "context": int(s), "gamma": int(best_g[i, j]),
                         "speedup": float(best_s[i, j]),
                         "verdict": S.verdict(float(best_s[i, j])) if fits else "does not fit"})
    return {
        "setup": {"gpu": st.gpu.name, "gpus": st.gpus, "model": st.target.name,
                  "draft": st.draft.name, "draft_kv_budget": st.draft.kv_budget,
                  "dtype": st.dtype, "draft_dtype": st.draft_dtype or st.dtype,
                  "dtype_from": "--dtype" if args.dtype else "checkpoint",
                  "kv_cache_dtype": st.kv_dtype,
                  "kv_cache_stored_as": S.kv_storage_dtype(st.kv_dtype, st.dtype),
                  "gpu_alias_note": S.gpu_alias_note(args.gpu),
                  "max_position_embeddings": st.target.max_position_embeddings,
                  "engine": st.engine.name, "sd_overhead_ms": st.sd_overhead_ms,
                  "proposal_rate": st.proposal_rate,
                  "proposal_rate_given": (args.proposal_rate is not None
                                          or args.acceptance_profile is not None),
                  "gpu_memory_utilization": st.memory_fraction,
                  "input_len": args.input_len, "output_len": args.output_len,
                  "draft_config": args.draft_config,
                  "draft_lm_head_vocab": st.draft.lm_head_vocab or None,
                  "moe": None if st.target.moe is None else vars(st.target.moe),
                  "topk": None if tree is None else tree["topk"],
                  "num_draft_tokens": None if tree is None else tree["num_draft_tokens"],
                  "routing_skew": st.engine.engine_step().routing_skew,
                  "mla": None if st.target.mla is None else vars(st.target.mla),
                  "acceptance": {k: (list(map(float, np.atleast_1d(v))) if k != "alpha"
                                     else float(v)) for k, v in acceptance.items()},
                  "acceptance_profile": None if profile is None else {
                      "file": args.acceptance_profile, "method": profile.method,
                      "tau_by_context": {str(c): [float(x) for x in row] for c, row in
                                         zip(sorted(args.context), p.acceptance["tau"])},
                      "mean_draft_len_by_context": (
                          None if "mean_draft_len" not in p.acceptance else
                          {str(c): [float(x) for x in row] for c, row in
                           zip(sorted(args.context), p.acceptance["mean_draft_len"])})}},
        "rows": p.rows(),
        "best": best,
        "tree": tree,
        "schedule": p.schedule if p.config is not None else None,
        "config": p.config,
        "serve": (sglang_launch_line(st, p.config, max_num_seqs=p.max_num_seqs, tree=tree,
                                     contexts=[c for c in args.context
                                               if c not in p.over_max_positions])
                  if tree is not None and st.engine.family == "sglang" else p.serve),
        "crossover_batch": {str(s): c for s, c in p.crossover_batch.items()},
        "paying_batches": {str(s): r for s, r in p.paying_batches.items()},
        "max_batch_in_memory": {str(c): m for c, m in p.max_batch_in_memory.items()},
        "displaced": {str(c): d for c, d in p.displaced.items()},
        "max_num_seqs": p.max_num_seqs,
        "calibration": calibration,
        "calibration_bench": bench,
        "context_limit_notes": messages(p.context_notes),
        "context_limit_note_codes": codes(p.context_notes),
        "cannot_serve": None if p.cannot_serve is None else p.cannot_serve.message,
        "cannot_serve_code": None if p.cannot_serve is None else p.cannot_serve.code,
        "over_max_positions": list(p.over_max_positions),
        "end_to_end": args.input_len is not None,
        "notes": messages(p.notes) + ([] if tree is None else tree["notes"])
        + messages(_tau_notes(args)),
        "note_codes": codes(p.notes) + ([] if tree is None else tree["note_codes"])
        + codes(_tau_notes(args)),
    }


def format_plan(result: dict) -> str:
    """The text report of :func:`plan`'s dict: per context a batch x gamma table of speedups
    with the best gamma marked ``*``, then the schedule, the config and the vllm serve line."""
    import pandas as pd

    from .. import serving as S

    su = result["setup"]
    acc = ", ".join(f"{k} " + (" ".join(f"{x:.3g}" for x in v) if isinstance(v, list)
                               else f"{v:.3g}") for k, v in su["acceptance"].items())
    if su.get("acceptance_profile"):
        ap = su["acceptance_profile"]
        acc = (f"acceptance profile {ap['file']} ({ap['method']}): tau by gamma at context "
               + "; ".join(f"{c}: " + " ".join(f"{t:.2f}" for t in row)
                           for c, row in ap["tau_by_context"].items()))
    nothing = result.get("cannot_serve")
    lines = [f"NOTE: {nothing}"] if nothing else []  # first, before any figure
    kv = su.get("kv_cache_dtype", "auto")
    kv_txt = (f"KV cache {kv}" + (f" ({su['kv_cache_stored_as']})" if kv == "auto" else ""))
    ck = ", the checkpoint's" if su.get("dtype_from") == "checkpoint" and su["dtype"] != "bf16" \
        else ""
    lines += [f"{su['model']} on {su['gpus']} x {su['gpu']} ({su['dtype']}{ck}, {kv_txt}), draft "
              f"{su['draft']}" + (f" (KV budget {su['draft_kv_budget']})"
                                  if su["draft_kv_budget"] else "") + f"; {acc}; engine "
              f"{su['engine']}" + (f"; proposal rate {su['proposal_rate']:g}"
                                   if su["proposal_rate"] < 1 else "")]
    if su.get("gpu_alias_note"):
        lines.append(f"NOTE: {su['gpu_alias_note']}")
    if su["draft"] == "ngram" and su.get("proposal_rate_given") is False:
        lines.append("NOTE: ngram on Model Runner V2 (vLLM 0.33's default) drafts gamma tokens "
                     "for every sequence at every step (proposal rate 1, padded where the match "
                     "is shorter or absent): give the tau counted so (specnb replay's default "
                     "runner, or your server's counters); --proposal-rate below 1 plans Model "
                     "Runner V1's CPU proposer, and the serve line then sets "
                     "VLLM_USE_V2_MODEL_RUNNER=0")
    elif su["draft"] in S.PARTIAL_PROPOSAL_METHODS and su.get("proposal_rate_given") is False:
        lines.append(f"NOTE: proposal rate M = 1 assumed: every sequence drafts at every step; "
                     f"{su['draft']} drafts only where it finds a match, so M = 1 credits every "
                     "step with the tau of the steps that drafted and overstates the gain; "
                     "give --proposal-rate M (specnb replay's prop.rate, or your server's "
                     "counters) or --acceptance-profile (docs/serving.md, --proposal-rate)")
    # beyond the model's max_position_embeddings: said first, not only among the notes
    lines += [f"NOTE: {n}" for n in result.get("context_limit_notes", [])]
    if result["calibration"]:
        c = result["calibration"]
        lines.append(f"calibrated on {c['file']} ({c['rows']} row{'s' * (c['rows'] != 1)}): step-time error median "
                     f"{100 * c['median_abs_error']:.1f} %, max {100 * c['max_abs_error']:.1f} %")
        lines += [f"calibration note: {n}" for n in c["notes"]]
    if result.get("calibration_bench"):
        lines += _format_bench(result["calibration_bench"])
    rows = pd.DataFrame(result["rows"])
    best = {(b["batch_size"], b["context"]): b for b in result["best"]}
    for s, part in rows.groupby("context", sort=True):
        e2e_on = su.get("input_len") is not None
        lines += ["", f"context {s} tokens: speedup by batch size (rows) and gamma (columns); "
                      "* = best gamma" + (" by the end-to-end figure" if e2e_on else "")
                  + ", - = nothing pays (or the KV cache does not fit)"
                  + ("; e2e = end to end, with the prefill of "
                     f"{su['input_len']} and {su['output_len']} output tokens per sequence"
                     if su.get("input_len") is not None else "")]
        table = part.pivot(index="batch_size", columns="gamma", values="speedup")
        out = pd.DataFrame(index=table.index)
        for g in table.columns:
            out[f"g={g}"] = [f"{v:.2f}" + ("*" if best[(b, s)]["gamma"] == g else " ")
                             for b, v in zip(table.index, table[g])]
        if "speedup_end_to_end" in part.columns:  # the prefill counted, as bench serve times
            e2e = part.pivot(index="batch_size", columns="gamma", values="speedup_end_to_end")
            for g in e2e.columns:
                out[f"e2e g={g}"] = [f"{v:.2f}" for v in e2e[g]]
        bound = part.groupby("batch_size")["bound"].agg(lambda x: "/".join(sorted(set(x))))
        out["best"] = [best[(b, s)]["gamma"] or "-" for b in table.index]
        out["verify bound"] = bound.reindex(table.index).to_numpy()
        room = result["max_batch_in_memory"][str(s)]
        over = s in result.get("over_max_positions", [])
        out["KV fits"] = ["yes" if b <= room else "no" for b in table.index]
        lines.append(out.to_string())
        top = int(rows["batch_size"].max())
        if over and not nothing:  # vLLM does not serve it: no on/off advice there
            lines.append(f"no advice: context {s} is above the target's maximum positions "
                         "(see the NOTE above); vLLM would not serve it")
        elif not nothing:  # no on/off advice when nothing runs
            lines.append(("end to end: " if e2e_on else "")
                         + S.describe_paying(result["paying_batches"][str(s)], top,
                                             fits_up_to=min(room, top)))
    lines.append("")
    if nothing:
        lines.append("schedule: none (nothing can be served: see the first line)")
    elif "v0-no-serve-line" in result["note_codes"]:
        lines.append("schedule: none (the figures are vLLM V0's; the schedule key and the "
                     "vllm serve line are V1's: see the note)")
    elif result["config"] is None:
        lines.append("schedule: none (no gamma pays"
                     + (" at every context at once)" if len(result["paying_batches"]) > 1
                        else ")"))
    elif su["engine"] == "sglang":  # no vLLM schedule or vllm serve line for SGLang
        lines.append("schedule: none (num_speculative_tokens_per_batch_size is vLLM's; "
                     "SGLang runs one --speculative-num-steps at every batch size)")
        lines.append(result["serve"] or "launch: the draft method has no SGLang "
                     "--speculative-algorithm")
    else:
        lines.append(f"schedule (num_speculative_tokens_per_batch_size): "
                     f"{json.dumps(result['schedule'])}")
        lines.append(result["serve"])
    if result.get("tree"):
        lines += _format_tree(result["tree"])
        lines.append("  (the table above is the chain, --speculative-eagle-topk 1, at each "
                     "gamma; the launch line carries this tree: read its verdict here)")
    shown_first = (set(result.get("context_limit_note_codes", []))
                   | {result.get("cannot_serve_code")}
                   | ({"max-num-seqs-is-batch"} if su["engine"] == "sglang" else set()))
    lines += [f"note: {n}" for n, code in zip(result["notes"], result["note_codes"])
              if code not in shown_first]
    return "\n".join(lines)


# --------------------------------------------------------------- --calibrate-bench
def _add_bench_flags(p) -> None:
    p.add_argument("--calibrate-bench", nargs="+", metavar="RESULT.json",
                   help="fit the model (target efficiencies, per-verification overhead, cost "
                        "per verified token) to `vllm bench serve --max-concurrency N "
                        "--save-result` files, with speculation on and off; prints the fit's "
                        "error on each file and predicts the --batch values not run; tau and "
                        "num_speculative_tokens come from the files' spec_decode_* keys (then "
                        "--alpha/--tau may be left out)")
    p.add_argument("--label", nargs="+", choices=("on", "off", "auto"), metavar="on|off",
                   help="one per --calibrate-bench file: whether speculation was on (auto: "
                        "the file's spec_decode_* keys decide; a file from a vLLM whose "
                        "bench writes none needs on or off)")


def _check_bench_flags(args) -> str | None:
    files, labels = args.calibrate_bench, args.label
    if labels is not None and files is None:
        return "--label applies to --calibrate-bench files; give the files"
    if files and labels is not None and len(labels) != len(files):
        return (f"--label takes one value per --calibrate-bench file ({len(files)}), got "
                f"{len(labels)}")
    if files and len(set(files)) != len(files):
        return f"--calibrate-bench lists a file twice: {' '.join(files)}"
    if files and args.calibrate:
        return "give --calibrate (step times) or --calibrate-bench (bench runs), not both"
    if args.alpha is None and args.tau is None and args.acceptance_rates is None and not files \
            and not args.acceptance_profile:
        return ("give one of --alpha, --tau or --acceptance-rates (or --acceptance-profile, or "
                "--calibrate-bench files "
                "run with speculation on, whose tau is used)")
    return None


def _calibrate_bench(args, st, acceptance: dict):
    """Fit ``st`` to the bench files; fills ``acceptance`` with the runs' tau per --gamma when
    no acceptance flag was given. Returns (calibrated setup, the JSON-ready summary)."""
    from .. import serving as S
    from ..advise.bench import file_validity
    from ..vllm import bench_points, read_bench

    read = {f: read_bench(f) for f in args.calibrate_bench}  # each file read once
    runs = bench_points(read, args.label)
    valid = file_validity(read)
    one = lambda v: v[0] if v and len(v) == 1 else None  # noqa: E731
    cal = S.calibrate_bench(st, runs, tau=one(args.tau), gamma=one(args.gamma))
    if not acceptance:
        missing = [g for g in args.gamma if g not in cal.tau]
        if missing:
            raise ValueError(f"--gamma {' '.join(map(str, missing))}: no bench run with "
                             "speculation on at that num_speculative_tokens (runs at "
                             f"{', '.join(map(str, sorted(cal.tau)))}); give --tau or --alpha")
        acceptance["tau"] = [cal.tau[g] for g in args.gamma]
    ran = set(cal.runs["concurrency"].astype(int))
    todo = [b for b in args.batch if b not in ran]
    pred = cal.predict(todo) if todo else None
    rep = cal.report
    clean = lambda recs: [{k: (None if isinstance(v, float) and v != v else v)  # noqa: E731
                           for k, v in r.items()} for r in recs]
    return cal.setup, {
        "files": list(args.calibrate_bench), "fitted": cal.fitted,
        "context": cal.context, "tau": {str(k): v for k, v in cal.tau.items()},
        "median_abs_tpot_error": float(rep["tpot_error"].abs().median()),
        "max_abs_tpot_error": float(rep["tpot_error"].abs().max()),
        "runs": clean(rep.assign(speculation=rep["speculation"].map({True: "on",
                                                                      False: "off"}))
                      .to_dict("records")),
        "predicted": [] if pred is None else clean(pred.to_dict("records")),
        "notes": [n.message for n in cal.notes], "note_codes": [n.code for n in cal.notes],
        "validity": {f: [{"code": n.code, "message": n.message} for n in notes]
                     for f, notes in valid.items()}}


def _format_validity(valid: dict) -> list[str]:
    """The bench-validity flags of each --calibrate-bench file (``specnb bench``'s codes), or
    one line saying none was raised."""
    flagged = {f: notes for f, notes in valid.items() if notes}
    if not flagged:
        return [f"bench validity: no flags on the {len(valid)} file(s) (random dataset, "
                "ignore-eos, synthetic acceptance, no chat template, reasoning in TTFT: none "
                "their keys show)"]
    lines = [f"bench validity: {len(flagged)} of {len(valid)} file(s) measured acceptance on "
             "content that says nothing about real traffic (the fitted tau and the forecast "
             "rest on it):"]
    for f, notes in flagged.items():
        lines += [f"  ! {f}: [{n['code']}] {n['message']}" for n in notes]
    return lines


def _format_bench(c: dict) -> list[str]:
    import pandas as pd

    fitted = ", ".join(f"{k} {v:.3g}" for k, v in c["fitted"].items())
    lines = [f"calibrated on {len(c['files'])} bench file(s) (mean decode context "
             f"{c['context']}): {fitted}; TPOT error median "
             f"{100 * c['median_abs_tpot_error']:.1f} %, max {100 * c['max_abs_tpot_error']:.1f} %"]
    runs = pd.DataFrame(c["runs"])
    show = pd.DataFrame({"file": runs["file"], "spec": runs["speculation"],
                         "conc.": runs["concurrency"],
                         "gamma": runs["gamma"].map(lambda g: "-" if g is None or pd.isna(g)
                                                    else f"{g:.0f}"),
                         "tau": runs["tau"].map(lambda t: "-" if t is None or pd.isna(t)
                                                else f"{t:.2f}"),
                         "TPOT ms": runs["tpot_ms"].map("{:.2f}".format),
                         "model": runs["predicted_tpot_ms"].map("{:.2f}".format),
                         "error": runs["tpot_error"].map("{:+.1%}".format),
                         "tok/s": runs["output_throughput"].map("{:.0f}".format),
                         "model tok/s": runs["predicted_throughput"].map("{:.0f}".format),
                         "error ": runs["throughput_error"].map("{:+.1%}".format)})
    lines.append(show.to_string(index=False))
    lines += _format_validity(c.get("validity") or {})
    lines += [f"calibration note: {n}" for n in c["notes"]]
    if c["predicted"]:
        p = pd.DataFrame(c["predicted"])
        lines += ["", f"predicted at the --batch values not run (context {c['context']}; "
                      "decode only, no prefill):",
                  pd.DataFrame({"conc.": p["concurrency"], "gamma": p["gamma"],
                                "tau": p["tau"].map("{:.2f}".format),
                                "TPOT off ms": p["tpot_off_ms"].map("{:.2f}".format),
                                "TPOT on ms": p["tpot_on_ms"].map("{:.2f}".format),
                                "speedup": p["speedup"].map("{:.2f}".format),
                                "KV fits": p["fits"].map({True: "yes", False: "no"})})
                  .to_string(index=False)]
    return lines


#: Library parameter names that the serving model's errors spell inside their messages (not
#: only in ``param``), named as flags by :data:`specnb.cli.FLAGS`.
_NAMES = ("proposal_rate", "draft_dtype", "draft_config", "draft_kv_budget", "routing_skew")


def run(args) -> int:
    """Run ``specnb plan`` with parsed ``args``; returns the exit status."""
    bad = _check_flags(args)
    if bad:
        return error("plan", bad)
    try:
        _light_checks(args)
        result = plan(args)
    except (ValueError, TypeError, OSError) as exc:
        return refuse("plan", exc, _NAMES)
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(format_plan(result))
    return 0


if __name__ == "__main__":  # pragma: no cover
    from . import main

    sys.exit(main(["plan", *sys.argv[1:]]))
