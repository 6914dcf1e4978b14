"""Speculation on against off: the verdict on two ``vllm bench serve --save-result`` results.

The latency verdict rests on TPOT, not ITL: ITL is measured per streamed chunk, and with
speculation one chunk often carries several tokens, so ITL can rise while TPOT falls (PR
#48892: median TPOT -26%, median ITL +612%). The files are read by :mod:`specnb.vllm.bench`.

Note codes: reasons ``tpot-change``, ``tpot-missing``, ``throughput-change``,
``throughput-missing``, ``ttft-change``, ``ttft-missing``; validity (acceptance measured on
content that says nothing about real traffic, :func:`validity`) ``random-dataset``,
``content-free-trace``, ``ignore-eos``, ``synthetic-acceptance``, ``lossy-acceptance``,
``no-chat-template``, ``reasoning-in-ttft``, ``simulated-run``; comparability ``same-file``, ``identical-results``, ``runs-differ``,
``output-tokens-differ``, ``single-request``; cautions ``tail-tpot-worse``, ``median-ttft-worse``, ``tail-ttft-worse``,
``itl-rose``, ``failed-requests``, ``no-spec-section``, ``off-has-spec-counters`` and the
:func:`~specnb.advise.watch.acceptance_length_advice` codes (``acceptance-length-shrink``,
``gamma1-off``, ``gamma1-grow``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from .. import _check
from ..limits import RATIO_NOISE, better
from ..vllm import COMPARABLE, SPEC_KEYS, bench_rows, bench_value, read_bench
from ..notes import Note
from .watch import acceptance_length_advice

__all__ = ["GOALS", "TOLERANCE", "better", "compare_bench", "comparability", "validity", "file_validity",
           "BenchComparison"]

#: latency: TPOT; throughput: output tokens/s; ttft: time to first token.
GOALS = ("latency", "throughput", "ttft")

#: The noise band of an on / off ratio, and the rule that reads it: their one home is
#: :mod:`specnb.limits` (``simulate``'s verdict, a layer below, uses them too; T8a-07).
TOLERANCE = RATIO_NOISE


@dataclass(frozen=True)
class BenchComparison:
    """The result of :func:`compare_bench`.

    Attributes
    ----------
    table : pandas.DataFrame, one row per metric: metric, stat, unit, off, on, on/off,
        change (%), better ("on", "off" or "same" within the tolerance; "" if missing).
    acceptance : dict of the ON run's spec-decode section (empty if absent).
    goal : "latency", "throughput" or "ttft".
    verdict : "turn it on", "keep it off", "no clear difference" or "cannot tell" (by the
        goal's metric).
    verdicts : goal -> (verdict, the reason Note) for each of :data:`GOALS` ("latency" by
        TPOT, "throughput" by output tokens/s, "ttft" by time to first token).
    reasons : why, with the numbers (:class:`~specnb.notes.Note` s; codes in the
        module docstring).
    cautions : what else to look at (tail latency, TTFT, ITL, comparability, failures); the
        comparability flags come first (Notes).
    comparability : why the two runs are not like for like (model, prompts, dataset, request
        rate, concurrency, completed requests, output tokens, a single request); printed above
        the verdict, which stands but must be read with them (Notes).
    validity : why the runs' acceptance (and so the speedup) may say nothing about real
        traffic (:func:`validity`); printed first (Notes).
    """

    table: object
    acceptance: dict
    goal: str
    verdict: str
    reasons: tuple = field(default=())
    cautions: tuple = field(default=())
    comparability: tuple = field(default=())
    validity: tuple = field(default=())
    verdicts: dict = field(default_factory=dict)

    def __str__(self) -> str:
        import pandas as pd

        with pd.option_context("display.width", 120, "display.max_columns", 20):
            lines = [self.table.to_string(index=False, na_rep="-",  # no figure: "-", not NaN
                                          float_format=lambda x: f"{x:.2f}")]
        if self.acceptance:
            a = self.acceptance
            lines.append("")
            if "spec_decode_acceptance_rate" in a:
                lines.append(f"acceptance rate (ON)    {a['spec_decode_acceptance_rate']:.2f} %")
            if "spec_decode_acceptance_length" in a:
                lines.append(f"acceptance length (ON)  {a['spec_decode_acceptance_length']:.2f}")
            rates = a.get("spec_decode_per_position_acceptance_rates")
            if isinstance(rates, list) and rates:
                lines.append("per-position acceptance (ON) " + ", ".join(
                    f"{i}: {100 * float(r):.1f} %" for i, r in enumerate(rates)))
        lines.append("")
        if self.validity:
            lines.append("acceptance measured on content that says nothing about real traffic "
                         "(the speedup rests on it):")
            lines += [f"  ! [{v.code}] {v}" for v in self.validity]
        if self.comparability:
            lines.append("not a like-for-like comparison; read the verdict with this in mind:")
            lines += [f"  ! {c}" for c in self.comparability]
        lines.append(f"goal: {self.goal} -> {self.verdict}")
        lines += [f"  because {r}" for r in self.reasons]
        for goal, (verdict, why) in self.verdicts.items():
            if goal != self.goal:
                lines.append(f"  by {_LABEL[goal]}: {verdict} ({why})")
        lines += [f"  caution: {c}" for c in self.cautions if c not in self.comparability]
        return "\n".join(lines)


_LABEL = {"latency": "TPOT", "throughput": "output throughput", "ttft": "TTFT"}
#: A model id that names a chat / instruction-tuned model (ours, a heuristic on the name).
_CHAT_MODEL = re.compile(r"(instruct|chat|-it\b|-it-|assistant|-sft|-dpo)", re.I)
#: A model id that names a reasoning model (ours, a heuristic on the name).
_REASONING_MODEL = re.compile(r"(-r1|reason|think|qwq|gpt-oss|qwen3|magistral)", re.I)


def validity(on, off, on_console=None, off_console=None, server_log=None) -> list[Note]:
    """Why the runs' acceptance (and so any speedup read from them) may say nothing about real
    traffic, as coded notes (rules ours, each with its source):

    * ``random-dataset``: ``--dataset-name`` random, random-mm, random-rerank or
      prefix_repetition (:data:`specnb.vllm.bench.SYNTHETIC_DATASETS`): prompts of random
      token ids; a draft cannot predict the continuation of noise (vLLM issue #33497: a
      "low acceptance" report on DeepSeek-V3.2 from such a run);
    * ``content-free-trace``: ``timed_trace``, a trace replayed as lengths and hash ids;
    * ``ignore-eos``: ``--ignore-eos``, or implied (vLLM 0.33 sets it for a random dataset on an
      OpenAI-compatible backend, and for ``timed_trace``): past the end of sequence the target
      writes text whose acceptance says nothing about real traffic (ai-dynamo/dynamo#12918);
    * ``synthetic-acceptance``: the server ran with ``rejection_sample_method: synthetic``
      (acceptance drawn to a set rate, not measured); ``lossy-acceptance``: ``fly`` (lossy:
      accepts drafts the target would not emit) -- from ``server_log`` (or ``--metadata``);
    * ``no-chat-template``: a chat model (its id says instruct, chat, -it...) sent raw prompts:
      ``--skip-chat-template``, or a completions backend (``openai`` / ``vllm``) with a dataset
      other than ``custom`` (only that one applies the chat template there in vLLM 0.33);
      acceptance on untemplated prompts is not your chat traffic's;
    * ``simulated-run``: a ``specnb simulate --save-result`` file (``backend:
      specnb-simulate``): no server ran; its acceptance is the one given to the simulator and
      its times are the serving model's, so it is a forecast, not a measurement;
    * ``reasoning-in-ttft``: a chat or responses backend with a reasoning model, or a TTFT above
      half the end-to-end latency: a client that counts only content deltas puts the whole
      reasoning phase (which speculation speeds up) into TTFT and takes its tokens out of TPOT;
      vLLM 0.33's ``vllm bench serve`` counts reasoning deltas as output, older versions and
      other clients may not.

    Parameters
    ----------
    on, off : dict or path (as :func:`~specnb.vllm.read_bench`)
    on_console, off_console : str or None, the console output of each ``vllm bench serve`` run
        (its ``Namespace(...)`` line: :func:`~specnb.vllm.bench.read_bench_console`)
    server_log : str or None, the server's log or ``vllm serve`` line
        (:func:`~specnb.vllm.bench.server_acceptance_method`)

    Raises
    ------
    ValueError
        as :func:`~specnb.vllm.read_bench`; a console text with no ``Namespace(...)`` line.
    """
    return _validity(read_bench(on), read_bench(off), on_console, off_console, server_log)


def file_validity(files) -> dict:
    """:func:`validity`'s flags for each ``vllm bench serve --save-result`` file on its own
    (what ``specnb plan --calibrate-bench`` shows for the files it reads): file -> list of
    :class:`~specnb.notes.Note` (codes as :func:`validity`'s; empty when nothing is flagged).
    A result file alone says what its keys say (``dataset_name``, ``ignore_eos``,
    ``backend``, ``model_id``, ``--metadata rejection_sample_method=...``); vLLM 0.33 writes
    no dataset into it, so its console output (:func:`validity`'s ``on_console``) can flag
    more.

    Parameters
    ----------
    files : iterable of paths (or dicts, named ``run 1``, ``run 2``, ...), or a mapping of
        names to paths or dicts (``{path: read_bench(path)}``: files already read)

    Raises
    ------
    ValueError, OSError
        as :func:`~specnb.vllm.read_bench`.
    """
    out = {}
    named = (files.items() if isinstance(files, Mapping) else
             ((f"run {i + 1}" if isinstance(f, dict) else str(f), f) for i, f in enumerate(files)))
    for name, f in named:
        out[name] = _validity_of([(name, read_bench(f), None)], None, name_runs=False)
    return out


def _validity(on_d, off_d, on_console, off_console, server_log):
    return _validity_of([("ON", on_d, on_console), ("OFF", off_d, off_console)], server_log)


def _validity_of(named, server_log, name_runs: bool = True):
    """The validity notes of the runs ``named`` [(name, result dict, console text or None)];
    each message starts with the runs it concerns (``ON run: ...``) unless ``name_runs`` is
    False (one run)."""
    from ..vllm.bench import (CONTENT_FREE_TRACES, SYNTHETIC_DATASETS, bench_setup,
                              read_bench_console, server_acceptance_method)

    setups = [(name, bench_setup(d, read_bench_console(c) if c is not None else None), d)
              for name, d, c in named]
    out = []

    def runs(pred):
        return " and ".join(n for n, st, d in setups if pred(st, d))

    def add(code, who, message):
        if who:
            out.append(Note(code, f"{who} run{'s' * (' and ' in who)}: {message}"
                            if name_runs else message))

    add("simulated-run", runs(lambda st, d: st.get("backend") == "specnb-simulate"),
        "a specnb simulate result, not a measurement: no server ran, the acceptance is the "
        "one the simulator was given (--tau, --acceptance-rates or a profile) and the times "
        "are the serving model's; comparing or calibrating on it checks the model against "
        "itself. Run vllm bench serve on your server for measured figures")
    names = {st.get("dataset_name") for _, st, _ in setups if st.get("dataset_name")}
    add("random-dataset", runs(lambda st, d: st.get("dataset_name") in SYNTHETIC_DATASETS),
        f"--dataset-name {', '.join(sorted(n for n in names if n in SYNTHETIC_DATASETS))}: "
        "prompts of random token ids; no draft can predict the continuation of noise, so the "
        "acceptance (and the speedup that rests on it) is not your traffic's (vLLM issue "
        "#33497: a 'low acceptance' report from such a run). Benchmark on your own prompts "
        "(--dataset-name custom or hf with --dataset-path)")
    add("content-free-trace", runs(lambda st, d: st.get("dataset_name") in CONTENT_FREE_TRACES),
        "--dataset-name timed_trace replays a trace's lengths and timing with pre-tokenized "
        "prompts built from hash ids, not its text: the acceptance is that of filler tokens. "
        "Replay the trace with its content (specnb replay reads a request log)")
    add("ignore-eos", runs(lambda st, d: st.get("ignore_eos")),
        "ignore_eos" + (" (set by vllm bench serve itself for this dataset)" if all(
            st.get("ignore_eos_implied") for _, st, _ in setups if st.get("ignore_eos")) else "")
        + ": past the end of sequence the target keeps writing text whose acceptance says "
        "nothing about real traffic (ai-dynamo/dynamo#12918); let requests end at EOS and "
        "compare per-token figures")
    method = None
    if server_log is not None:
        method = server_acceptance_method(server_log)
    meta = {st.get("rejection_sample_method") for _, st, _ in setups} - {None}
    method = method or (sorted(meta)[0] if meta else None)
    if method == "synthetic":
        out.append(Note("synthetic-acceptance", "the server ran with rejection_sample_method "
                        "'synthetic': vLLM accepts drafts at a configured rate "
                        "(synthetic_acceptance_rates / _length) instead of verifying them, so "
                        "the acceptance is the one that was set, not measured; use it for "
                        "timing studies only, and measure acceptance with 'standard'"))
    elif method == "fly":
        out.append(Note("lossy-acceptance", "the server ran with rejection_sample_method 'fly' "
                        "(lossy: it accepts drafts the target would not have emitted), so the "
                        "acceptance is higher than a lossless server's and the output differs; "
                        "compare with 'standard' for a lossless figure"))

    def raw_chat(st, d):
        model = f"{st.get('model_id') or ''} {st.get('tokenizer_id') or ''}"
        if not _CHAT_MODEL.search(model):
            return False
        completions = st.get("backend") in ("openai", "vllm") and \
            st.get("dataset_name") not in (None, "custom", *SYNTHETIC_DATASETS,
                                           *CONTENT_FREE_TRACES)
        return bool(st.get("skip_chat_template")) or completions

    add("no-chat-template", runs(raw_chat),
        "a chat model sent prompts without its chat template (--skip-chat-template, or a "
        "completions backend with a dataset that does not apply it): acceptance on "
        "untemplated prompts is not that of your chat traffic; use --backend openai-chat "
        "(or --dataset-name custom without --skip-chat-template)")

    def reasoning(st, d):
        if st.get("backend") not in ("openai-chat", "openai-responses"):
            return False
        ttft, e2el = (bench_value(d, "median_ttft_ms"), bench_value(d, "median_e2el_ms"))
        long_ttft = ttft == ttft and e2el == e2el and e2el > 0 and ttft > 0.5 * e2el
        return long_ttft or bool(_REASONING_MODEL.search(str(st.get("model_id") or "")))

    add("reasoning-in-ttft", runs(reasoning),
        "a chat endpoint with a reasoning model or a TTFT above half the end-to-end latency: "
        "a client that counts only content deltas puts the whole reasoning phase (which "
        "speculation speeds up) into TTFT and takes its tokens out of TPOT; vLLM 0.33's "
        "vllm bench serve counts reasoning deltas as output, older versions and other clients "
        "may not. Check that TTFT ends at the first reasoning token")
    return out


def comparability(on, off, tolerance: float = 0.05) -> list[Note]:
    """Why two ``vllm bench serve`` results are not like for like, as coded notes
    (``same-file``, ``identical-results``, ``runs-differ``, ``output-tokens-differ``,
    ``single-request``).

    Flags (ours, stated): the same file given twice, or two results with identical contents;
    a different value of any :data:`COMPARABLE` key present in both
    (model, prompts, concurrency, request rate, burstiness, endpoint, dataset, completed
    requests); output tokens per request (``total_output_tokens / completed``) that differ by
    more than ``tolerance`` (TPOT and throughput then average over different outputs); a run
    of a single request (``completed`` or ``num_prompts`` 1: one output, no batching, no spread
    to put a percentile on -- not a benchmark).

    Parameters
    ----------
    on, off : dict (as :func:`read_bench` returns) or path
    tolerance : float in [0, 1)
    """
    on_d, off_d = read_bench(on), read_bench(off)
    tol = float(_check.real("tolerance", tolerance, lo=0.0, hi=1.0, hi_open=True))
    return _comparability(on_d, off_d, tol, _same_file(on, off) and str(on))


def _comparability(on_d, off_d, tol, same_file):
    """:func:`comparability` of read results; ``same_file`` is the path when ON and OFF are
    one file, else False."""
    out = []
    if same_file:
        out.append(Note("same-file", f"ON and OFF are the same file ({same_file}): the run is "
                        "compared with itself, so any verdict says nothing about speculation; "
                        "give the result with speculation and the one without"))
    elif on_d == off_d:
        out.append(Note("identical-results", "the ON and OFF results are identical (the same "
                        "run saved twice?): any verdict says nothing about speculation; give "
                        "the result with speculation and the one without"))
    for k in COMPARABLE:
        if k in on_d and k in off_d and on_d[k] != off_d[k]:
            out.append(Note("runs-differ", f"the runs differ in {k} ({off_d[k]!r} off vs "
                            f"{on_d[k]!r} on): not a like-for-like comparison"))
    done = [bench_value(d, "completed") for d in (off_d, on_d)]
    inputs = [bench_value(d, "total_input_tokens") for d in (off_d, on_d)]
    if not any(math.isnan(t) for t in inputs) and all(n == n and n > 0 for n in done):
        per_in = [t / n for t, n in zip(inputs, done)]
        if per_in[0] > 0 and abs(per_in[1] / per_in[0] - 1) > tol:
            # vLLM 0.33 writes no dataset keys; the input lengths show a different prompt set
            out.append(Note(
                "input-lengths-differ",
                f"the runs sent prompts of different lengths: {per_in[0]:,.1f} off vs "
                f"{per_in[1]:,.1f} on input tokens per request (total_input_tokens / "
                f"completed, {100 * (per_in[1] / per_in[0] - 1):+.1f}%): different prompts, "
                "so TTFT and throughput are not comparable (use the same --dataset-name, "
                "input length and --seed)"))
    tokens = [bench_value(d, "total_output_tokens") for d in (off_d, on_d)]
    if not any(math.isnan(t) for t in tokens):
        per = [t / n if n == n and n > 0 else t for t, n in zip(tokens, done)]
        unit = "per request" if all(n == n and n > 0 for n in done) else "in total"
        if per[0] > 0 and abs(per[1] / per[0] - 1) > tol:
            out.append(Note(
                "output-tokens-differ",
                f"the runs produced different numbers of output tokens: {tokens[0]:,.0f} off vs "
                f"{tokens[1]:,.0f} on ({per[0]:,.1f} vs {per[1]:,.1f} {unit}, "
                f"{100 * (per[1] / per[0] - 1):+.1f}%, beyond the {100 * tol:.0f}% "
                "tolerance): the runs stopped at different points, so per-request latency "
                "(E2EL, duration, request throughput) compares different work, and TPOT and "
                "throughput average over different outputs, whose acceptance differs. Do not "
                "force equal lengths with --ignore-eos: past the end of sequence the target "
                "writes text whose acceptance says nothing about real traffic (vLLM issue "
                "#33497, ai-dynamo/dynamo#12918). Send the same prompts (same "
                "--dataset-path and --seed), decode greedily (--temperature 0) or with a "
                "fixed seed, and compare per-token figures (TPOT, output tokens/s)"))
    single = [name for name, d in (("OFF", off_d), ("ON", on_d))
              if bench_value(d, "completed") == 1 or bench_value(d, "num_prompts") == 1]
    if single:
        out.append(Note(
            "single-request",
            f"the {' and '.join(single)} run{'s' * (len(single) > 1)} measured a single "
            "request: one output, no batching and no spread to put a percentile on; one "
            "request is not a benchmark (run vllm bench serve with many prompts, at the "
            "concurrency you serve)"))
    return out


def _same_file(a, b) -> bool:
    """True when the paths ``a`` and ``b`` name one file (dicts never do)."""
    import os

    if not isinstance(a, (str, os.PathLike)) or not isinstance(b, (str, os.PathLike)):
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _change(off, on):
    """(on/off, change in %), NaN where either is missing or the OFF base prints as 0.00 (below
    0.005 of its unit: a median ITL of 0 ms, a spread of float noise), where a ratio is noise."""
    if math.isnan(off) or math.isnan(on) or abs(off) < 0.005:
        return math.nan, math.nan
    return on / off, 100.0 * (on / off - 1.0)


def _gamma(acceptance: dict):
    """num_speculative_tokens implied by a run's spec-decode section, or None."""
    tokens, drafts = (acceptance.get("spec_decode_draft_tokens"),
                      acceptance.get("spec_decode_num_drafts"))
    if isinstance(tokens, (int, float)) and isinstance(drafts, (int, float)) and drafts > 0:
        ratio = tokens / drafts
        if ratio >= 1 and math.isclose(ratio, round(ratio)):
            return int(round(ratio))
    rates = acceptance.get("spec_decode_per_position_acceptance_rates")
    return len(rates) if isinstance(rates, list) and rates else None


def _rate(acceptance: dict):
    """The run's acceptance rate as a fraction, or None."""
    rate = acceptance.get("spec_decode_acceptance_rate")
    return rate / 100 if isinstance(rate, (int, float)) else None


def compare_bench(on, off, goal: str = "latency", tolerance: float = 0.05, *,
                  on_console: str | None = None, off_console: str | None = None,
                  server_log: str | None = None) -> BenchComparison:
    """Put a run with speculation (``on``) beside one without (``off``) and decide.

    Verdict rules (ours, stated so they can be argued with):

    * latency: median TPOT (mean if no median) on / off; below ``1 - tolerance`` -> "turn it
      on", above ``1 + tolerance`` -> "keep it off", else "no clear difference". TPOT, not ITL:
      ITL is per streamed chunk and rises when a chunk carries several accepted tokens.
    * throughput: output throughput on / off; above ``1 + tolerance`` -> "turn it on", below
      ``1 - tolerance`` -> "keep it off", else "no clear difference". Cost per token changes
      by 1 / ratio (:func:`specnb.cost.relative_cost`).
    * ttft: median TTFT (mean if no median) on / off, as for TPOT.

    The verdict by each of the three metrics is in ``verdicts`` and printed under the goal's.
    Validity notes (:func:`validity`) say when the acceptance was measured on content that
    says nothing about real traffic; they are printed first.

    Cautions flag runs that are not like for like (:func:`comparability`: model, prompts,
    dataset, concurrency, request rate, completed requests, output tokens per request, a
    single request; also in ``comparability`` and printed above the verdict, which stands), a
    p99 TPOT or median TTFT that got worse by more than the tolerance, ITL up while TPOT is
    down, failed requests, an ON run without a spec-decode section, and an OFF run with one.

    Parameters
    ----------
    on, off : path or dict
        ``vllm bench serve --save-result`` results with and without speculation.
    goal : "latency", "throughput" or "ttft"
    tolerance : float in [0, 1)
        Relative change treated as noise (0.05 = 5%).
    on_console, off_console, server_log : str or None
        the console output of each ``vllm bench serve`` run and the server's log, for
        :func:`validity`.

    Returns
    -------
    BenchComparison

    Raises
    ------
    ValueError
        unknown goal; tolerance outside [0, 1); files as in :func:`read_bench` (a TPOT or
        throughput of 0 among them); a console text without a ``Namespace(...)`` line.
    """
    _check.choice("goal", goal, GOALS)
    tol = float(_check.real("tolerance", tolerance, lo=0.0, hi=1.0, hi_open=True))
    on_d, off_d = read_bench(on), read_bench(off)
    valid = _validity(on_d, off_d, on_console, off_console, server_log)
    table = _comparison_table(on_d, off_d, tol)
    verdicts = {g: _verdict(table, g, tol) for g in GOALS}
    verdict, reasons = verdicts[goal]
    verdicts = {g: (v, why[0]) for g, (v, why) in verdicts.items()}
    flags, cautions, acceptance = _cautions(table, on_d, off_d, tol,
                                         _same_file(on, off) and str(on))
    return BenchComparison(table, acceptance, goal, verdict, tuple(reasons),
                           tuple(cautions), tuple(flags), tuple(valid), verdicts)


_better = better  # the table's column is also named better


def _comparison_table(on_d, off_d, tol):
    """One row per metric and statistic: off, on, on/off, change and which run is better."""
    import pandas as pd

    records = []
    for metric, stat, unit, v_off, v_on, better in bench_rows(on_d, off_d):
        ratio, change = _change(v_off, v_on)
        who = _better(ratio, better == "lower", tol)
        records.append({"metric": metric, "stat": stat, "unit": unit, "off": v_off, "on": v_on,
                        "on/off": ratio, "change (%)": change, "better": who})
    table = pd.DataFrame(records, columns=["metric", "stat", "unit", "off", "on", "on/off",
                                           "change (%)", "better"])
    return table


def _row(table, metric, stat):
    hit = table[(table["metric"] == metric) & (table["stat"] == stat)]
    if hit.empty or math.isnan(hit.iloc[0]["on/off"]):
        return None
    return hit.iloc[0]


def _verdict(table, goal, tol):
    """(verdict, reasons) by the goal's rule: median TPOT for latency, output throughput for
    throughput."""
    from ..cost import relative_cost

    reasons = []
    verdict = "cannot tell"
    if goal in ("latency", "ttft"):
        name = "TPOT" if goal == "latency" else "TTFT"
        r = _row(table, name, "median")
        r = r if r is not None else _row(table, name, "mean")
        if r is None:
            reasons.append(Note(f"{name.lower()}-missing",
                                f"no {name} (median or mean) in both runs"))
        else:
            verdict = {"on": "turn it on", "off": "keep it off",
                       "same": "no clear difference"}[r["better"]]
            reasons.append(Note(f"{name.lower()}-change", f"{r['stat']} {name} {r['off']:.2f} "
                                f"-> {r['on']:.2f} ms ({r['change (%)']:+.1f}%, tolerance "
                                f"{100 * tol:.0f}%)"))
    else:
        r = _row(table, "output throughput", "")
        if r is None:
            reasons.append(Note("throughput-missing", "output_throughput is missing from one of "
                                "the runs"))
        else:
            verdict = {"on": "turn it on", "off": "keep it off",
                       "same": "no clear difference"}[r["better"]]
            reasons.append(Note("throughput-change", f"output throughput {r['off']:.2f} -> "
                                f"{r['on']:.2f} tok/s ({r['change (%)']:+.1f}%, tolerance "
                                f"{100 * tol:.0f}%); cost per token "
                                f"x{relative_cost(r['on/off']):.3f}"))
    return verdict, reasons


def _cautions(table, on_d, off_d, tol, same_file):
    """(comparability flags, every caution, the ON run's spec-decode section); ``same_file``:
    the path when ON and OFF name the same file, else False."""
    cautions = []
    for metric, stat, what in (("TPOT", "p99", "tail TPOT"), ("TTFT", "median", "median TTFT"),
                               ("TTFT", "p99", "tail TTFT")):
        x = _row(table, metric, stat)
        if x is not None and x["better"] == "off":
            cautions.append(Note(f"{what.replace(' ', '-').lower()}-worse",
                                 f"{what} got worse: {x['off']:.2f} -> {x['on']:.2f} ms "
                                 f"({x['change (%)']:+.1f}%)"))
    itl = _row(table, "ITL", "median")
    itl = itl if itl is not None else _row(table, "ITL", "mean")
    tpot = _row(table, "TPOT", "median")
    if itl is not None and tpot is not None and itl["better"] == "off" and \
            tpot["better"] != "off":
        cautions.append(Note("itl-rose", f"ITL rose {itl['change (%)']:+.1f}% while TPOT did "
                             "not: ITL is per streamed chunk and a chunk now carries several "
                             "tokens; judge by TPOT"))
    flags = _comparability(on_d, off_d, tol, same_file)
    cautions = flags + cautions
    for name, d in (("ON", on_d), ("OFF", off_d)):
        if bench_value(d, "failed") > 0:
            cautions.append(Note("failed-requests", f"the {name} run had "
                                 f"{int(bench_value(d, 'failed'))} failed requests"))
    acceptance = {k: on_d[k] for k in SPEC_KEYS if k in on_d}
    if not acceptance:
        cautions.append(Note("no-spec-section", "the ON run has no spec-decode section (vllm "
                             "bench serve before PR #31739, or speculation was not on)"))
    if any(k in off_d for k in SPEC_KEYS):
        cautions.append(Note("off-has-spec-counters", "the OFF run has spec-decode counters: "
                             "was speculation really off?"))
    length = acceptance.get("spec_decode_acceptance_length")
    if isinstance(length, (int, float)):
        action, sentence = acceptance_length_advice(length, _gamma(acceptance),
                                                    _rate(acceptance))
        gamma = _gamma(acceptance)
        if action != "ok":
            cautions.append(Note(f"gamma1-{action}" if gamma == 1 else
                                 f"acceptance-length-{action}",
                                 sentence + (" (article checklist, step 3)"
                                             if action == "shrink" else "")))
    return flags, cautions, acceptance
