"""``specnb measure``: alpha, tau and speedup of a draft/target pair with transformers.

torch and transformers are imported inside the command, so ``specnb --help`` works without the
``measure`` extra; without it the command says how to install it and exits with status 3.
"""

from __future__ import annotations

import argparse
import math
import importlib.util
import json
import sys
from pathlib import Path

from ..memory import TORCH_DTYPES
from . import error, listed_twice

__all__ = ["register", "run", "format_report", "format_logged_report"]

MISSING_EXTRA = ("specnb measure needs torch and transformers: install the measure extra with\n"
                 "    pip install -e '.[measure]'\n"
                 "(on a CPU-only machine install the CPU build first: pip install torch==2.13.0)")


def register(subparsers) -> argparse.ArgumentParser:
    """Add ``measure`` to the ``specnb`` command line (sets ``func`` to :func:`run`)."""
    from ..measure.spread import MIN_PROMPTS

    p = subparsers.add_parser(
        "measure",
        help="measure alpha, tau and speedup of a draft/target pair (transformers)",
        description=(
            "Measure the acceptance rate alpha of one or more drafts against a target on a set "
            "of prompts: alpha by teacher forcing (with a 95% CI over prompts; from fewer than "
            f"{MIN_PROMPTS} prompts the range of their values), then assisted decoding at "
            "each gamma (tau, target forwards, wall time and tokens/s against plain generate), "
            "prompt lookup decoding, predictions from Eq. 1 / Theorem 3.8 with the measured c, "
            "a fitted timing model, and a losslessness check of every greedy run. Defaults: the "
            "bundled pair (data/models) and held-out prompts (data/prompts)."),
    )
    p.add_argument("--target", default=None, metavar="PATH_OR_ID",
                   help="target model folder or hub id (default: data/models/target-4x256)")
    p.add_argument("--draft", nargs="+", default=None, metavar="PATH_OR_ID",
                   help="one or more drafts sharing the target's tokenizer (default: the two "
                        "bundled drafts data/models/draft-2x128 and draft-1x64)")
    p.add_argument("--draft-head", nargs="+", default=None, metavar="PATH",
                   help="EAGLE / EAGLE-3 / MTP heads of the target (a head's folder: config.json "
                        "+ safetensors; for MTP the target's own folder), measured beside the "
                        "drafts in the reference loop (implies --loop reference; e.g. "
                        "data/models/eagle3-head-target-4x256)")
    p.add_argument("--prompts", default=None, metavar="FILE",
                   help="JSON lines with 'task' and 'prompt' (default: "
                        "data/prompts/stdlib_heldout.jsonl)")
    p.add_argument("--logged", default=None, metavar="FILE",
                   help="alpha from logged traffic instead: JSON lines whose records carry the "
                        "served 'response' and the 'temperature' it was served at (optional "
                        "'response_ids'); one forward pass per model over the logged text gives "
                        "alpha, tau and predicted speedup for every draft and gamma, no "
                        "generation (bundled example: data/prompts/stdlib_heldout_responses.jsonl)")
    p.add_argument("--per-task", type=int, default=None, metavar="N",
                   help="prompts per task family (default 2; 0 = all); with --logged, records "
                        "per task family and served temperature (default all)")
    p.add_argument("--gamma", type=int, nargs="+", default=[1, 2, 3, 5], metavar="G",
                   help="draft lengths (num_assistant_tokens); default 1 2 3 5")
    p.add_argument("--temperature", type=float, nargs="+", default=None, metavar="T",
                   help="temperatures, 0 = greedy (default 0 1; with --logged each record's own)")
    p.add_argument("--max-new-tokens", type=int, default=None, metavar="N",
                   help="tokens generated per prompt (default 48; not with --logged)")
    p.add_argument("--repeats", type=int, default=None, metavar="R",
                   help="timed runs per prompt and setting, median kept (default 2; not with "
                        "--logged)")
    p.add_argument("--no-pld", action="store_true", help="skip prompt lookup decoding")
    p.add_argument("--loop", nargs="+", default=["transformers"],
                   choices=["transformers", "reference"],
                   help="speculative loop(s) to time: transformers' assisted decoding "
                        "(default), the reference loop (specnb.measure.reference: no generate() "
                        "per round, so its per-round host overhead is the algorithm's), or both")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"],
                   help="where to run the models (default auto: cuda when torch sees a GPU, "
                        "else cpu; cuda needs a CUDA build of torch)")
    p.add_argument("--dtype", default="auto", choices=["auto", *TORCH_DTYPES],
                   help="model weights and activations (default auto: float32 on a CPU, "
                        "bfloat16 on a GPU that supports it, else float16)")
    p.add_argument("--seed", type=int, default=0, metavar="S",
                   help="seed for sampling at T > 0; each prompt and temperature derives its "
                        "own seed from it (default 0)")
    p.add_argument("--threads", type=int, default=1, metavar="N",
                   help="torch CPU threads while measuring, on a CPU and on CUDA (default 1: "
                        "steadier timings when other processes share the cores, and the fast "
                        "setting of the H200 runs; 0 = leave torch's setting)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object (keys include alpha, gamma, temperature, "
                        "tau_measured, tau_predicted, speedup_measured, speedup_predicted, "
                        "speedup_predicted_loo, c, lossless) instead of tables")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)
    return p


#: pandas display options of the printed tables (wide, three decimals).
_TABLE_OPTIONS = ("display.width", 160, "display.max_columns", 30,
                  "display.float_format", "{:.3f}".format)


def _table(df) -> str:
    """``df`` as text: floats to 3 decimals, but a temperature as the value it is (``0``,
    ``0.7``, ``1e+09``), not ``0.000`` (fault 40)."""
    if "temperature" in df.columns:
        df = df.assign(temperature=[f"{t:g}" for t in df["temperature"]])
    return df.to_string(index=False)


def format_report(m) -> str:
    """Human-readable tables of a :class:`specnb.measure.Measurement`."""
    import pandas as pd

    from .. import measure as M
    from ..measure.spread import interval_label

    with pd.option_context(*_TABLE_OPTIONS):
        lead = ["loop"] if m.summary["loop"].nunique() > 1 else []
        cols = [*lead, "draft", "gamma", "temperature", "alpha", "alpha_counted",
                "tau_measured", "tau_predicted", "tau_betas", "lossless"]
        every = interval_label(m.config["n_prompts"])  # a summary row resamples every prompt
        summary, spread = _with_spread(m.summary, "speedup_measured", every)
        scols = [*lead, "draft", "gamma", "temperature", "c", spread,
                 "speedup_predicted", "speedup_with_overhead", "speedup_timing_model",
                 "speedup_predicted_loo"]
        parts = [
            f"target {m.config['target']}  prompts {m.config['prompts']} "
            f"({m.config['n_prompts']})  device {m.config['device']} {m.config['dtype']}  "
            f"max_new_tokens {m.config['max_new_tokens']}",
            "",
            f"alpha by teacher forcing (ci_low-ci_high: {interval_label(m.alpha['prompts'])}):",
            _table(m.alpha),
            "",
            M.processing_note(m.config),
            "",
            "tau: measured vs predicted:",
            _table(m.summary[cols]),
            "(lossless: greedy output token-identical to plain greedy, checked at T = 0; None at "
            "T > 0, where sampled outputs cannot be compared token by token)",
            "",
            f"speedup: measured (loop {', '.join(m.config.get('loops', ['transformers']))}, "
            f"to the decimals its interval supports; bootstrap over prompts: {every}) vs "
            "predicted (speedup_with_overhead: Theorem 3.8 with the loop's fitted per-round "
            "overhead; speedup_predicted_loo: timing model fitted without that gamma's runs, "
            "rounds from the betas; what to expect before running a gamma):",
            _table(summary[scols]),
        ]
        if not m.pld.empty:
            label = interval_label(m.pld["prompts"] if "prompts" in m.pld
                                   else m.config["n_prompts"])
            pld, spread = _with_spread(m.pld, "speedup", label)
            parts += ["", f"prompt lookup decoding (speedup; bootstrap over prompts: {label}):",
                      _table(pld[["gamma", "temperature", "task", "tau", spread, "lossless"]])]
        timing = m.timing.copy()
        for col in ("t_target_forward", "t_draft_forward", "t_call", "t_target", "t_draft",
                    "t_round"):
            timing[col] = 1e3 * timing[col]
        timing = timing.rename(columns={c: c + "_ms" for c in timing.columns
                                        if c.startswith("t_")})
        warns = list(dict.fromkeys(w for ws in timing.pop("warnings") if ws
                                   for w in ws.split("; ")))
        parts += ["", "timing (ms): single forwards timed directly, and per loop one model "
                  "fitted to all drafts' runs (t_call, t_target, t_round shared; t_draft per "
                  "draft; all >= 0; t_round: the loop's host overhead per round)",
                  _table(timing)]
        parts += [f"  warning: {w}" for w in warns]
        loo = M.loo_warning(m.summary)
        if loo:
            parts.append(f"  warning: {loo}")
        parts += ["",
                  f"lossless (greedy outputs identical to plain greedy): {m.lossless}", ""]
        parts += [v.line for v in M.verdicts(m.summary, m.pld)]  # notebook 08's verdicts
        loop, ratio, engine = M.engine_like_loop(m.timing)
        if loop is not None and len(ratio) > 1:
            parts.append(f"the {loop} loop's per-round overhead ({ratio[loop]:.2f} of a target "
                         f"forward, against vLLM's {engine:.2f}) is the closer to an engine's: "
                         "read its speedup as the forecast for a lean engine loop")
    return "\n".join(parts)


def _with_spread(frame, col, label):
    """(``frame`` with a ``"speedup (<label>)"`` column, that column's name): ``col`` and its
    interval (``speedup_ci_low`` / ``_high``) rounded to what the interval supports; ``label``
    from :func:`specnb.measure.spread.interval_label`."""
    from ..measure.spread import format_speedup

    name = f"speedup ({label})"
    return frame.assign(**{name: [
        format_speedup(v, lo, hi) for v, lo, hi in
        zip(frame[col], frame["speedup_ci_low"], frame["speedup_ci_high"])]}), name


def format_logged_report(m) -> str:
    """Human-readable tables of a :class:`specnb.measure.LoggedAlpha`."""
    import pandas as pd

    from .. import measure as M
    from ..measure.spread import interval_label

    cfg = m.config
    with pd.option_context(*_TABLE_OPTIONS):
        parts = [
            f"alpha from logged traffic: target {cfg['target']}  log {cfg['prompts']} "
            f"({cfg['n_records']} records, T {cfg['temperatures']})  device {cfg['device']} "
            f"{cfg['dtype']}; forward passes {cfg['forward_pass_s']:.2f} s for "
            f"{cfg['positions']} positions, no generation",
            M.processing_note(cfg),
            "",
            "alpha along the served responses (ci_low-ci_high: "
            f"{interval_label(m.alpha['prompts'])}):",
            _table(m.alpha),
            "",
            "per gamma (alpha_rounds: accepted / examined in the greedy rounds the betas imply; "
            "tau_betas: tokens per target forward):",
            _table(m.summary),
        ]
    if "speedup_predicted" in m.summary:
        parts += ["", "speedup_predicted (Theorem 3.8 from alpha) and speedup_betas use c from "
                  "single forwards: they leave out each round's fixed costs, which dominate on "
                  "small models (the bundled pair measured below 1x with assisted generation); "
                  "`specnb measure` (without --logged) times the real runs"]
    return "\n".join(parts)


def _check_flags(args) -> str | None:
    """The first out-of-range flag, as a message naming the flag (None when all are fine)."""
    if args.logged is not None:
        if args.prompts is not None:
            return "--logged FILE and --prompts FILE exclude each other (the log holds the prompts)"
        if args.temperature is not None:
            return ("--temperature does not apply with --logged: each record gives the "
                    "temperature its response was served at")
        unused = [f for f, v in (("--max-new-tokens", args.max_new_tokens),
                                 ("--repeats", args.repeats), ("--no-pld", args.no_pld or None),
                                 ("--loop", None if args.loop == ["transformers"] else args.loop))
                  if v is not None]
        if args.draft_head:
            return ("--draft-head does not apply with --logged: replay the log through a head "
                    "with specnb replay LOG --method eagle3 --head PATH")
        if unused:
            return (f"{', '.join(unused)} " + ("does" if len(unused) == 1 else "do")
                    + " not apply with --logged: nothing is generated "
                    "or timed (one forward pass per model over the logged responses)")
    if args.draft_head:
        if args.loop != ["transformers"] and "transformers" in args.loop:
            return ("--draft-head runs in the reference loop only (transformers' assisted "
                    "decoding takes no EAGLE / MTP head): use --loop reference")
        args.loop = ["reference"]
        for h in args.draft_head:
            if not (Path(h).expanduser() / "config.json").is_file():
                return (f"--draft-head {h}: not a head folder (config.json + *.safetensors; "
                        "an MTP head's is the target's own folder)")
    twice = listed_twice(("--gamma", args.gamma), ("--draft", args.draft),
                         ("--draft-head", args.draft_head))
    if twice:
        return twice
    if args.max_new_tokens is None:
        args.max_new_tokens = 48
    if args.repeats is None:
        args.repeats = 2
    checks = [
        ("--per-task", [args.per_task if args.per_task is not None else 0], 0,
         "(0 = all prompts)"),
        ("--threads", [args.threads], 0, "(0 = leave torch's setting)"),
        ("--repeats", [args.repeats], 1, ""),
        ("--max-new-tokens", [args.max_new_tokens], 1, ""),
        ("--gamma", args.gamma, 1, ""),
        ("--temperature", args.temperature or [], 0, "(0 = greedy)"),
        ("--seed", [args.seed], 0, ""),
    ]
    for flag, values, lo, note in checks:
        for v in values:
            if not v >= lo:
                return f"{flag} must be >= {lo} {note}".rstrip() + f", got {v:g}"
    for t in args.temperature or []:  # inf passed >= 0 and was refused after the imports
        if not math.isfinite(t):
            return f"--temperature must be finite (0 = greedy), got {t:g}"
    if args.temperature is not None:  # -0.0 is greedy: printed "T = -0" otherwise
        args.temperature = [t + 0.0 for t in args.temperature]
    return _check_files(args)


def _check_files(args) -> str | None:
    """Models, prompt files and gamma bounds, checked without torch (see
    :mod:`specnb.measure.args`); None when all are fine. Says on stderr when a hub id will be
    requested from the network (which can take a while to fail)."""
    from ..measure import args as A

    try:
        kinds = {name: A.check_model_name(name, what) for name, what in
                 [(args.target, "--target")] * (args.target is not None)
                 + [(d, "--draft") for d in args.draft or []]}
        from .. import request_log

        for path in [args.prompts, args.logged]:
            if path is not None:
                what = "--logged file" if path == args.logged else "--prompts file"
                A.check_prompts_file(path, what, A.BUNDLED_LOGGED if path == args.logged
                                     else A.BUNDLED_PROMPTS)
                try:  # the contents too, torch-free (specnb.request_log)
                    request_log.load_prompts(path, logged=path == args.logged)
                except ValueError as exc:
                    raise ValueError(f"{what}: {exc}") from None
        A.check_device(args.device)
        target = args.target if args.target is not None else A.BUNDLED_TARGET
        A.check_gammas(args.gamma, flag="--gamma", context=A.local_context(target),
                       max_new_tokens=None if args.logged is not None else args.max_new_tokens)
    except (FileNotFoundError, ValueError) as exc:
        return str(exc)
    if args.logged is not None and A.is_bundled_log(args.logged) and args.target is not None \
            and Path(args.target).expanduser().resolve() != A.BUNDLED_TARGET.resolve():
        return (f"--logged {args.logged} holds the bundled target's responses, not --target "
                f"{args.target}'s: at T = 0 only the logged tokens matter, so its alphas would "
                "measure agreement with the bundled target's text whatever --target is; give a "
                "log of --target's own responses (JSON lines with task, prompt, response, "
                "temperature)")
    for name, kind in kinds.items():
        if kind == "hub":
            print(f"specnb measure: {name!r} is not a local folder: loading it from the model "
                  f"hub (network; {A.OFFLINE_HINT})", file=sys.stderr)
    return None


def run(args) -> int:
    """Run ``specnb measure`` with parsed ``args``; returns the exit status. Every argument is
    checked before torch is imported."""
    bad = _check_flags(args)
    if bad:
        return error("measure", bad)
    try:
        from .. import measure as M
        from ..measure import load as _  # noqa: F401  (imports torch)
        if importlib.util.find_spec("transformers") is None:  # imported when a model loads
            raise ImportError("transformers")
    except ImportError:
        print(MISSING_EXTRA, file=sys.stderr)
        return 3
    if args.logged is not None:
        try:
            m = M.alpha_from_logged(args.target, args.draft, prompts=args.logged,
                                    per_task=args.per_task or None, gammas=args.gamma,
                                    device=args.device, dtype=args.dtype,
                                    cpu_threads=args.threads or None, seed=args.seed)
        except (FileNotFoundError, ValueError, TypeError, RuntimeError) as exc:
            return error("measure", str(exc))
        from ..measure import args as A

        if args.target is not None and 0.0 in m.config.get("temperatures", []) and not (
                A.is_bundled_log(args.logged)
                and Path(args.target).expanduser().resolve() == A.BUNDLED_TARGET.resolve()):
            print("note: at T = 0 only the logged tokens matter: the greedy alphas are "
                  f"agreement with the logged text, --target {args.target}'s alpha only if it "
                  "served this log", file=sys.stderr)
        print(json.dumps(m.to_json()) if args.json else format_logged_report(m))
        return 0
    try:
        m = M.measure(
            args.target, args.draft, prompts=args.prompts,
            per_task=2 if args.per_task is None else (args.per_task or None), gammas=args.gamma,
            temperatures=args.temperature if args.temperature is not None else [0.0, 1.0],
            max_new_tokens=args.max_new_tokens, device=args.device, dtype=args.dtype,
            repeats=args.repeats, pld=not args.no_pld, seed=args.seed,
            cpu_threads=args.threads or None, loop=args.loop, draft_heads=args.draft_head,
            progress=not args.no_progress and not args.json,
        )
    except (FileNotFoundError, ValueError, TypeError) as exc:
        return error("measure", str(exc))
    if args.json:
        print(json.dumps(m.to_json()))
    else:
        print(format_report(m))
    return 0
