"""``specnb replay LOG --method M``: acceptance from your own traffic, counted as vLLM counts it.

n-gram and suffix decoding are replayed exactly as vLLM proposes them (:mod:`specnb.replay`,
no model, no torch); ``draft_model`` teacher-forces a draft along the logged responses
(:func:`specnb.measure.alpha_from_logged`, torch) and steps the same way. The output is an
acceptance profile (:mod:`specnb.acceptance_profile`): a table, ``--json``, or
``--out PROFILE.json`` for ``specnb plan --acceptance-profile``.

Exit status: 0 printed; 2 bad input (an empty log, a row without a response, ids beyond the
tokenizer's vocabulary, gamma < 1, --prompt-lookup-min > --prompt-lookup-max, a flag another
method owns: one line naming the row or flag, before torch is imported); 3 the measure extra
missing for a model method.

Methods are the rows of :data:`METHODS` (a name -> :class:`MethodEntry`), so that another
method (EAGLE / EAGLE-3 / MTP heads) is one more row: its runner, the flags it owns, and
whether it needs torch.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from typing import Callable

from .._numbers import number_text
from . import error, listed_twice, refuse

__all__ = ["register", "run", "METHODS", "MethodEntry", "format_profile"]


@dataclass(frozen=True)
class MethodEntry:
    """One ``--method``: ``run(args, log) -> AcceptanceProfile`` (``log`` the
    :class:`~specnb.request_log.RequestLog` already read and checked), the argparse ``dest``
    names of the flags only it takes, and whether it needs the measure extra (torch)."""

    run: Callable
    flags: tuple = ()
    models: bool = False


_NGRAM_FLAGS = ("prompt_lookup_min", "prompt_lookup_max")
_SUFFIX_FLAGS = ("suffix_decoding_max_tree_depth", "suffix_decoding_max_spec_factor",
                 "suffix_decoding_min_token_prob", "suffix_decoding_max_cached_requests")


def _model_free(method: str):
    def go(args, log):
        from .. import replay as R

        flags = _NGRAM_FLAGS if method.startswith("ngram") else _SUFFIX_FLAGS
        params = {k: getattr(args, k) for k in flags}
        if method != "ngram_gpu":
            params["max_model_len"] = args.max_model_len
        return R.replay(log, method, gammas=args.gamma, context_edges=args.context_buckets,
                        params=params, suffix_backend=args.suffix_backend or "auto",
                        workers=args.workers, runner=args.runner)
    return go


def _draft_model(args, log):
    """Teacher forcing along the logged responses (``measure --logged``), stepped
    (:func:`specnb.replay.draft_profile`)."""
    from .. import measure as M
    from .. import replay as R

    m = M.alpha_from_logged(args.target, [args.draft] if args.draft else None,
                            prompts=log.path, gammas=args.gamma, timing=False,
                            seed=args.seed)
    draft = str(m.betas["draft"].iloc[0])
    return R.draft_profile(m.betas[m.betas["draft"] == draft], log, gammas=args.gamma,
                           context_edges=args.context_buckets, model=draft, seed=args.seed)


def _head(method: str):
    """EAGLE / EAGLE-3 / MTP heads (:func:`specnb.measure.replay_head`): one target pass per
    request, the head teacher-forced along the logged response as vLLM chains it, stepped as
    every method here is stepped."""
    def go(args, log):
        from .. import measure as M

        prof, _ = M.replay_head(log, method=method, head=args.head, target=args.target,
                                gammas=args.gamma, context_edges=args.context_buckets,
                                seed=args.seed)
        return prof
    return go


_HEAD_FLAGS = ("target", "head", "seed")

#: ``--method`` -> its entry; the heads (eagle, eagle3, mtp) join as rows of their own.
METHODS = {
    "ngram": MethodEntry(_model_free("ngram"), _NGRAM_FLAGS + ("max_model_len", "workers",
                                                               "runner")),
    "ngram_gpu": MethodEntry(_model_free("ngram_gpu"), _NGRAM_FLAGS + ("workers", "runner")),
    "suffix": MethodEntry(_model_free("suffix"),
                          _SUFFIX_FLAGS + ("max_model_len", "suffix_backend", "workers",
                                            "runner")),
    "draft_model": MethodEntry(_draft_model, ("target", "draft", "seed"), models=True),
    **{m: MethodEntry(_head(m), _HEAD_FLAGS, models=True) for m in ("eagle", "eagle3", "mtp")},
}
_DEFAULTS = {}  # dest -> default, filled by register (to tell a flag given from its default)


def register(subparsers) -> argparse.ArgumentParser:
    """Add ``replay`` to the ``specnb`` command line (sets ``func`` to :func:`run`)."""
    p = subparsers.add_parser(
        "replay", help="acceptance from a request log: n-gram, suffix, draft models, EAGLE / MTP heads",
        description=(
            "Replay a request log (JSON lines: text, token-id or chat rows; see "
            "specnb.request_log) with a speculative method exactly as vLLM proposes and "
            "counts it: vLLM's counters (num_drafts, num_draft_tokens, num_accepted_tokens, "
            "per position), tau, the proposal rate, per gamma, overall, by task and by context "
            "bucket, with 95 % bootstrap intervals over requests. The table's acc.rate is "
            "vLLM's acceptance rate (accepted / draft tokens), not Leviathan's alpha; Eq.1 alpha "
            "beside it is the alpha for which Eq. 1 gives that tau (what plan --alpha means). "
            "--out writes an acceptance "
            "profile for specnb plan --acceptance-profile. Exit status: 0 printed, 2 bad "
            "input, 3 the measure extra missing (draft_model)."))
    p.add_argument("log", nargs="?", default=None, metavar="LOG",
                   help="the request log (default: data/prompts/stdlib_heldout_responses.jsonl)")
    p.add_argument("--method", default="ngram", choices=list(METHODS),
                   help="vLLM's method (default ngram)")
    p.add_argument("--gamma", type=int, nargs="+", default=[1, 3, 5], metavar="G",
                   help="num_speculative_tokens values (default 1 3 5)")
    p.add_argument("--context-buckets", type=int, nargs="*", default=[], metavar="EDGE",
                   help="context bucket edges in tokens, e.g. 2000 8000 32000 (a step's "
                        "context: the tokens before it)")
    p.add_argument("--tokenizer", default=None, metavar="PATH",
                   help="tokenizer folder (tokenizer.json) for text and chat rows and the "
                        "vocabulary bound (default: the bundled one, data/models/tokenizer)")
    p.add_argument("--skip-bad", action="store_true",
                   help="skip rows that fail (counted and reported) instead of stopping")
    g = p.add_argument_group("ngram / ngram_gpu")
    g.add_argument("--prompt-lookup-min", type=int, default=None, metavar="N",
                   help="vLLM's prompt_lookup_min (default: as vLLM resolves it, 5)")
    g.add_argument("--prompt-lookup-max", type=int, default=None, metavar="N",
                   help="vLLM's prompt_lookup_max (default: as vLLM resolves it, 5)")
    g = p.add_argument_group("suffix")
    g.add_argument("--suffix-decoding-max-tree-depth", type=int, default=None, metavar="D",
                   help="default 24")
    g.add_argument("--suffix-decoding-max-spec-factor", type=float, default=None, metavar="F",
                   help="default 1.0")
    g.add_argument("--suffix-decoding-min-token-prob", type=float, default=None, metavar="P",
                   help="default 0.1")
    g.add_argument("--suffix-decoding-max-cached-requests", type=int, default=None,
                   metavar="N", help="default 10000 (0: no global tree, -1: no limit)")
    g.add_argument("--suffix-backend", default=None,  # specnb.replay.SUFFIX_BACKENDS
                   choices=["auto", "numba", "arctic", "python"],
                   help="auto (default): numba (specnb's trees compiled; pip install numba) "
                        "where it imports and the log holds >= 500 requests (its one-time "
                        "compile takes about 30 s), else arctic (Arctic Inference's own compiled "
                        "SuffixDecodingCache, the library vLLM calls; make suffix-backend "
                        "installs it), else python (specnb's exact restatement, slowest); "
                        "the same counters from each")
    p.add_argument("--max-model-len", type=int, default=None, metavar="N",
                   help="ngram, suffix: vLLM's max_model_len cap on drafts (default none)")
    p.add_argument("--runner", default=None, choices=("v2", "v1"),
                   help="ngram, ngram_gpu, suffix: the vLLM model runner whose proposer is "
                        "stepped (default: vLLM 0.33's for the method: v2 for ngram / "
                        "ngram_gpu, whose GPU kernel drafts gamma tokens at every step from "
                        "the rightmost match; v1 for suffix). v1 for ngram: the CPU proposer "
                        "(earliest match, drafts only where one is), served with "
                        "VLLM_USE_V2_MODEL_RUNNER=0")
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help="ngram, ngram_gpu, suffix: processes replaying parts of the log at "
                        "once (default 1; the same counters for any N)")
    g = p.add_argument_group("draft_model")
    g.add_argument("--target", default=None, metavar="PATH_OR_ID",
                   help="target model (default: the bundled target)")
    g.add_argument("--draft", default=None, metavar="PATH_OR_ID",
                   help="draft model (default: the first bundled draft)")
    g.add_argument("--seed", type=int, default=0, help="seed of the T > 0 draws (default 0)")
    g = p.add_argument_group("eagle / eagle3 / mtp (also --target, --seed)")
    g.add_argument("--head", default=None, metavar="PATH",
                   help="the head's folder (config.json + safetensors; default for eagle3 on the "
                        "bundled target: data/models/eagle3-head-target-4x256; for mtp: the "
                        "target's own folder, whose checkpoint holds the MTP layers)")
    p.add_argument("--out", default=None, metavar="PROFILE.json",
                   help="write the acceptance profile there")
    p.add_argument("--force", action="store_true",
                   help="let --out replace a file that is not an acceptance profile")
    p.add_argument("--json", action="store_true", help="print the profile as JSON")
    p.set_defaults(func=run)
    for a in p._actions:
        _DEFAULTS[a.dest] = a.default
    return p


def _foreign_flag(args) -> str | None:
    """The first flag given that belongs to another method."""
    own = set(METHODS[args.method].flags)
    for name, entry in METHODS.items():
        for dest in entry.flags:
            if dest not in own and getattr(args, dest, None) != _DEFAULTS.get(dest):
                return (f"--{dest.replace('_', '-')} is a setting of --method "
                        f"{' / '.join(n for n, e in METHODS.items() if dest in e.flags)}, "
                        f"not of --method {args.method}")
    return None


def run(args) -> int:
    """Run ``specnb replay``; every argument and the log are checked before torch loads."""
    bad = _foreign_flag(args)
    if bad:
        return error("replay", bad)
    from .. import replay as R

    if any(not 1 <= g <= R.MAX_GAMMA for g in args.gamma):
        bad = next(g for g in args.gamma if not 1 <= g <= R.MAX_GAMMA)
        return error("replay", f"--gamma must be in [1, {R.MAX_GAMMA}], got {number_text(bad)}")
    twice = listed_twice(("--gamma", args.gamma))  # the one rule of plan, simulate, measure
    if twice:
        return error("replay", twice)
    from .. import request_log
    from .. import acceptance_profile as AP

    entry = METHODS[args.method]
    try:
        if args.out:  # before any work: never replace a file that is not a profile
            AP.check_target(args.out, args.force)
        if not entry.models:  # settings before the log is read
            R.check_params(args.method, {k: getattr(args, k) for k in entry.flags
                                         if k not in ("suffix_backend", "workers",
                                                      "runner")})
            if args.workers < 1:
                raise ValueError(f"--workers must be >= 1, got {args.workers}")
            R.check_runner(args.method, args.runner)
            if args.method == "suffix":
                R.resolve_backend(args.suffix_backend or "auto")
        edges = args.context_buckets
        if any(e < 1 for e in edges) or any(b <= a for a, b in zip(edges, edges[1:])):
            raise ValueError(f"--context-buckets must be increasing ints >= 1, got {edges}")
        log = request_log.read(args.log, tokenizer=args.tokenizer, skip_bad=args.skip_bad)
    except (OSError, ValueError, TypeError) as exc:
        return refuse("replay", exc, _NAMES)
    if log.skipped:
        print(f"note: {len(log.skipped)} bad row(s) skipped (--skip-bad); the first: "
              f"{log.skipped[0][1]}", file=sys.stderr)
    if entry.models:
        try:
            from ..measure import load as _  # noqa: F401  (imports torch and transformers)
        except ImportError:
            from .measure import MISSING_EXTRA
            print(MISSING_EXTRA.replace("specnb measure", "specnb replay --method "
                                        + args.method), file=sys.stderr)
            return 3
    try:
        prof = entry.run(args, log)
    except (OSError, ValueError, TypeError, RuntimeError) as exc:
        return refuse("replay", exc, _NAMES)
    if args.out:
        try:
            AP.save(prof, args.out, force=True)  # checked above
        except OSError as exc:
            return error("replay", f"--out {args.out!r}: {exc.strerror or exc}")
    if args.json:
        print(AP.dumps(prof))
    else:
        print(format_profile(prof))
        if args.out:
            print(f"\nwrote {args.out} (specnb plan --acceptance-profile {args.out})")
    return 0


#: Library parameter names that the replay library's errors spell inside their messages (not
#: only in ``param``), named as flags by :data:`specnb.cli.FLAGS`.
_NAMES = _NGRAM_FLAGS + _SUFFIX_FLAGS + ("max_model_len", "suffix_backend", "context_edges")


def _f(x, nd=3) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{nd}f}"


#: The header line naming the model runner a profile stepped, by (method, runner).
_RUNNER_TEXT = {
    ("ngram", "v2"): "runner v2 (Model Runner V2's n-gram kernel, vLLM 0.33's default for "
                     "ngram): every request drafts gamma tokens at every step, from the "
                     "rightmost match, padded with its last token where the match is shorter "
                     "or absent, and vLLM counts every one (prop.rate 1); --runner v1 for the "
                     "CPU proposer (VLLM_USE_V2_MODEL_RUNNER=0)",
    ("ngram", "v1"): "runner v1 (Model Runner V1's proposer: the earliest match, a draft only "
                     "where one is); vLLM 0.33 serves ngram so only with "
                     "VLLM_USE_V2_MODEL_RUNNER=0 (plan and simulate put it in the serve line)",
    ("suffix", "v1"): "runner v1 (Model Runner V1: vLLM 0.33's Model Runner V2 does not run "
                      "suffix)",
}


def _plan_lines(prof) -> list:
    """How to give these figures to ``specnb plan`` (T8a-15): the profile itself, or per
    gamma the tau and, where some steps carry no draft, the proposal rate with it."""
    out = ["to plan from this replay: specnb plan --acceptance-profile PROFILE.json (tau, "
           "proposal rate and draft length per gamma and context); by hand, per gamma:"]
    partial = False
    for g in prof.gammas:
        c = prof.entry(g).counters
        if c.num_drafts == 0:
            out.append(f"  gamma {g}: no draft proposed")
            continue
        m = c.proposal_rate
        partial = partial or m < 1
        out.append(f"  gamma {g}: --gamma {g} --tau {c.tau:.3f}"
                   + (f" --proposal-rate {m:.3f}" if m < 1 else ""))
    if partial:
        out.append("  (--alpha <Eq.1 alpha> or --tau alone means a draft at every step: it "
                   "credits every step with the tau of the steps that drafted, an "
                   "overestimate where prop.rate < 1)")
    return out


def format_profile(prof) -> str:
    """The profile as tables for people: per gamma overall, then by task, then by context."""
    src = prof.source
    head = [f"{prof.method} replay of {src.get('log')}: {src.get('requests')} requests"
            + (f", {src['skipped']} skipped" if src.get("skipped") else ""),
            "settings: " + ", ".join(f"{k}={v}" for k, v in prof.params.items()
                                     if v is not None)
            + (f"; backend: {src['backend']}" if src.get("backend") else "")]
    if prof.runner:
        head.append(_RUNNER_TEXT.get((prof.method.replace("ngram_gpu", "ngram"), prof.runner),
                                     f"runner {prof.runner}"))
    cols = f"{'gamma':>5} {'':>16} {'requests':>8} {'steps':>7} {'drafts':>7} " \
           f"{'prop.rate':>9} {'acc.rate':>8} {'tau':>6} {'tau 95% CI':>15} " \
           f"{'Eq.1 alpha':>10}  conditional rate by position"
    lines = head + ["", cols]

    def row(e, label):
        c = e.counters
        ci = f"[{_f(e.tau_ci[0], 2)}, {_f(e.tau_ci[1], 2)}]"
        rates = " ".join(_f(r, 2) for r in c.acceptance_rates)
        return (f"{e.gamma:>5} {label:>16} {e.num_requests:>8} {c.num_steps:>7} "
                f"{c.num_drafts:>7} {_f(c.proposal_rate):>9} {_f(c.acceptance_rate):>8} "
                f"{_f(c.tau):>6} {ci:>15} {_f(c.implied_alpha):>10}  {rates}")

    for g in prof.gammas:
        lines.append(row(prof.entry(g), "all"))
        for t in prof.tasks:
            lines.append(row(prof.entry(g, task=t), t[:16]))
        if prof.context_edges:
            for lo, hi in prof.buckets():
                lines.append(row(prof.entry(g, context=lo),
                                 f"ctx {lo}-{'' if hi is None else hi}"))
    lines.append("")
    lines.append("tau = 1 + accepted / drafts (vLLM's mean acceptance length); prop.rate = "
                 "drafts / decode steps")
    lines.append("acc.rate = accepted / draft tokens (vLLM's acceptance rate, as specnb metrics "
                 "prints it): not Leviathan's alpha, and lower than it at gamma > 1 and with "
                 "drafts shorter than gamma")
    lines.append("Eq.1 alpha = the alpha for which Eq. 1 at this gamma gives this tau: the "
                 "alpha plan --alpha and the theorems mean, a draft at every step")
    lines.append("conditional rate by position: P(position i accepted | i-1 accepted); vLLM's "
                 "per-position rates (specnb metrics, plan --acceptance-rates) are accepted at "
                 "i / drafts, not these")
    return "\n".join(lines + _plan_lines(prof))
