"""Read ``vllm bench serve --save-result`` JSON files into numbers (the verdict on an ON/OFF
pair: :func:`specnb.advise.compare_bench`). Keys (``vllm/benchmarks/serve.py`` @ ``009e6d4a``):
``mean_``, ``median_``, ``std_``, ``p<P>_<m>_ms`` for m in ttft, tpot, itl, e2el; throughputs;
``spec_decode_*`` with the counters (acceptance rate in %, per-position rates as fractions).
ITL is per streamed chunk, so with speculation it can rise while TPOT falls (PR #48892).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path

from .. import _check

__all__ = ["SPEC_KEYS", "COMPARABLE", "read_bench", "read_bench_results", "bench_summary",
           "bench_value", "bench_rows", "per_position_rates", "POINT_KEYS", "bench_point",
           "bench_points", "SYNTHETIC_DATASETS", "read_bench_console", "bench_setup",
           "server_acceptance_method"]

LATENCY_METRICS = ("ttft", "tpot", "itl", "e2el")
THROUGHPUTS = (("output_throughput", "output throughput", "tok/s"),
               ("total_token_throughput", "total token throughput", "tok/s"),
               ("request_throughput", "request throughput", "req/s"),
               ("request_goodput", "request goodput", "req/s"),  # with --goodput
               # peaks over 1-second buckets (vllm/benchmarks/serve.py, 0.33.0)
               ("max_output_tokens_per_s", "peak output throughput", "tok/s"),
               ("max_concurrent_requests", "peak concurrent requests", "req"))
SPEC_KEYS = ("spec_decode_acceptance_rate", "spec_decode_acceptance_length",
             "spec_decode_num_drafts", "spec_decode_draft_tokens",
             "spec_decode_accepted_tokens", "spec_decode_per_position_acceptance_rates")
#: Keys two runs must share to be compared like for like.
COMPARABLE = ("model_id", "num_prompts", "max_concurrency", "request_rate", "burstiness",
              "endpoint_type", "dataset_name", "dataset_path", "dataset", "completed")
_SPACE = re.compile(r"\s*")
_PCT = re.compile(r"^p(\d+(?:\.\d+)?)_(ttft|tpot|itl|e2el)_ms$")
#: Keys whose values must be finite numbers > 0: a TPOT or throughput of 0 is no measurement
#: (vLLM writes one when no request produced 2 tokens, or none completed), nor is a run whose
#: ``completed`` count is 0 (its figures cannot come from any request).
_POSITIVE = re.compile(r"^(?:(?:mean|median|p\d+(?:\.\d+)?)_tpot_ms|output_throughput"
                       r"|total_token_throughput|request_throughput|completed)$")
#: The largest value a numeric key may hold (1e15 ms is 31,700 years; 1e15 tokens/s): above it a
#: file was edited or damaged, and a table would print hundreds of digits.
MAX_VALUE = 1e15
#: Keys whose values must be finite numbers >= 0 (latencies, throughputs, counts).
_NUMERIC = re.compile(r"^(?:(?:mean|median|std|p\d+(?:\.\d+)?)_(?:ttft|tpot|itl|e2el)_ms"
                      r"|output_throughput|total_token_throughput|request_throughput|duration"
                      r"|completed|failed|total_input_tokens|total_output_tokens"
                      r"|spec_decode_(?:acceptance_rate|acceptance_length|num_drafts"
                      r"|draft_tokens|accepted_tokens))$")


def _check_values(data: dict, where: str) -> None:
    for k, v in data.items():
        if not isinstance(k, str):
            raise ValueError(f"{where}: keys must be strings, got {k!r}")
        if _NUMERIC.match(k) and (isinstance(v, bool) or not isinstance(v, (int, float))
                                  or not _check.finite(v) or v < 0):
            raise ValueError(f"{where}: {k} must be a finite number >= 0, got {str(v)[:40]}")
        if _NUMERIC.match(k) and v > MAX_VALUE:
            raise ValueError(f"{where}: {k} is {v:.3g}, above {MAX_VALUE:.0e}: no bench run "
                             "measures that (the file was edited or damaged)")
        if _POSITIVE.match(k) and v == 0:
            why = ("no request produced 2 or more output tokens (vLLM writes TPOT 0 then), or "
                   "the file was edited" if "tpot" in k else
                   "no request completed, or the file was edited")
            raise ValueError(f"{where}: {k} is 0, which is no measurement ({why}); a TPOT, a "
                             "throughput and a completed count must be finite numbers > 0")
    rates = data.get("spec_decode_per_position_acceptance_rates")
    if rates is not None and (not isinstance(rates, list) or not all(
            not isinstance(r, bool) and isinstance(r, (int, float)) and 0 <= r <= 1
            for r in rates)):
        raise ValueError(f"{where}: spec_decode_per_position_acceptance_rates must be a list "
                         f"of fractions in [0, 1], got {rates!r}")
    _check_spec(data, where)


_COUNT_KEYS = ("spec_decode_num_drafts", "spec_decode_draft_tokens",
               "spec_decode_accepted_tokens")


def _check_spec(data: dict, where: str) -> None:
    """ValueError naming the keys when a result's spec-decode keys are none vLLM's bench could
    write: its counters (and per-position rates x drafts) through the one rule for these
    counters, :func:`specnb.vllm.metrics.acceptance_stats` (accepted <= draft tokens, a
    position's count <= the drafts and <= the position before's), and
    ``spec_decode_acceptance_length`` (tau = 1 + accepted / drafts, vLLM's
    ``benchmarks/serve.py``) in [1, draft tokens / drafts + 1] (the per-position rates' count
    + 1 without the counters); with the counters, tau and the acceptance rate equal to what
    vLLM derives from them (:func:`_check_derived`)."""
    from .metrics import SpecDecodeCounts, acceptance_stats

    n, dt, acc = (data.get(k) for k in _COUNT_KEYS)
    rates = data.get("spec_decode_per_position_acceptance_rates") or []
    hi, why = (len(rates) + 1.0, "the per-position rates' count + 1") if rates else (None, "")
    if n is not None and dt is not None and acc is not None and (n > 0 or dt > 0):
        keys = [f"{k} {v:g}" for k, v in zip(_COUNT_KEYS, (n, dt, acc))] + (
            ["spec_decode_per_position_acceptance_rates ["
             + ", ".join(f"{float(r):.4g}" for r in rates) + "] (x the drafts: the "
             "per-position counts)"] if rates else [])
        try:
            acceptance_stats(SpecDecodeCounts(float(n), float(dt), float(acc),
                                              tuple(float(r) * n for r in rates), 1, "bench"))
        except ValueError as exc:  # UsageError too: no -k is given here
            raise ValueError(f"{where}: impossible spec-decode keys ({', '.join(keys)}): "
                             f"{exc}") from None
        hi, why = 1.0 + dt / n, f"1 + draft tokens / drafts = 1 + {dt:g} / {n:g}"
    tau = data.get("spec_decode_acceptance_length")
    if tau is not None and (tau < 1 or (hi is not None and tau > hi * (1 + 1e-9))):
        bound = f"[1, {hi:.4g}] ({why})" if hi is not None else "at least 1"
        raise ValueError(f"{where}: spec_decode_acceptance_length (tau, tokens per step with "
                         f"the bonus token) is {tau:g}; it must be {bound}: vLLM's bench "
                         "writes 1 + accepted / drafts")
    if n is not None and dt is not None and acc is not None:
        _check_derived(data, where, n, dt, acc)


def _check_derived(data: dict, where: str, n, dt, acc) -> None:
    """ValueError when ``spec_decode_acceptance_length`` or ``spec_decode_acceptance_rate``
    is not what vLLM's bench derives from the counters beside it (``benchmarks/serve.py``:
    ``1 + accepted / num_drafts`` and ``accepted / draft_tokens x 100``), beyond float
    rounding."""
    for key, want in (("spec_decode_acceptance_length", 1.0 + acc / n if n > 0 else None),
                      ("spec_decode_acceptance_rate", 100.0 * acc / dt if dt > 0 else None)):
        got = data.get(key)
        if got is None or want is None or abs(float(got) - want) <= 0.005 + 1e-9 * want:
            continue
        raise ValueError(f"{where}: {key} is {float(got):g}, but the counters beside it give "
                         f"{want:.6g} (spec_decode_num_drafts {n:g}, spec_decode_draft_tokens "
                         f"{dt:g}, spec_decode_accepted_tokens {acc:g}): vLLM's bench derives "
                         "it from them; the file was edited or merged")


def _objects(text: str, where: str) -> list:
    """The JSON values in ``text``: one, or one a line (``--append-result``)."""
    dec = json.JSONDecoder()
    out, i, n = [], 0, len(text)
    while True:
        i = _SPACE.match(text, i).end()
        if i >= n:
            return out
        try:
            obj, i = dec.raw_decode(text, i)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: not JSON ({exc.msg} at line {exc.lineno} column "
                             f"{exc.colno})") from None
        out.append(obj)


def read_bench_results(path) -> list[dict]:
    """Every result in a ``vllm bench serve`` file: one for ``--save-result``, one per run for
    ``--append-result`` (one JSON object a line), oldest first. Raises OSError, ValueError as
    :func:`read_bench` (each result is checked the same way)."""
    where = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise _check.utf8_error(where, exc, "is it a `vllm bench serve --save-result` JSON "
                                "file?") from None
    try:
        objs = _objects(text, where)
    except RecursionError:
        raise ValueError(f"{where}: JSON nested too deeply to read") from None
    if not objs:
        raise ValueError(f"{where}: empty; is this a `vllm bench serve --save-result` file?")
    suffix = len(objs) > 1
    return [_validated(o, f"{where} (result {i + 1} of {len(objs)})" if suffix else where)
            for i, o in enumerate(objs)]


def read_bench(path_or_dict) -> dict:
    """Load one ``vllm bench serve --save-result`` JSON file (str or Path), or take its dict:
    the result as saved (of an ``--append-result`` file, the last; :func:`read_bench_results`
    gives them all).

    Raises
    ------
    OSError
        the file cannot be read (FileNotFoundError, IsADirectoryError, PermissionError...).
    ValueError
        not UTF-8 text, not JSON, not an object, neither ``output_throughput`` nor any ``*_ms``
        latency key (not a bench result), or a latency, throughput, count or acceptance value
        that is not a finite number >= 0, or is above :data:`MAX_VALUE` (the message names
        the key); spec-decode keys vLLM could not write (:func:`_check_spec`: accepted above
        draft tokens, per-position rates that rise, tau outside [1, draft tokens / drafts +
        1]; the message names the keys).
    """
    if isinstance(path_or_dict, (str, Path)):
        return read_bench_results(path_or_dict)[-1]
    if not isinstance(path_or_dict, dict):
        raise TypeError("path_or_dict must be a path or a dict, got "
                        f"{type(path_or_dict).__name__}")
    return _validated(path_or_dict, "the dict")


def _validated(data, where: str) -> dict:
    if not isinstance(data, dict):
        raise ValueError(f"{where}: a bench result is a JSON object, got {type(data).__name__}")
    _check_values(data, where)
    if "output_throughput" not in data and not any(k.endswith("_ms") for k in data):
        raise ValueError(f"{where}: no output_throughput and no *_ms latency keys; is this a "
                         "`vllm bench serve --save-result` file?")
    return data


def bench_value(d: dict, key: str) -> float:
    """``d[key]`` as a float; NaN when absent or not a number."""
    v = d.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return math.nan
    return float(v)


def bench_rows(on: dict, off: dict) -> list[tuple]:
    """One ``(metric, stat, unit, off value, on value, "lower" or "higher" is better)`` per
    latency statistic, throughput and duration either run has (NaN where one lacks it)."""
    wanted = []
    for m in LATENCY_METRICS:
        pct = sorted({float(hit.group(1)) for d in (on, off) for k in d
                      if (hit := _PCT.match(k)) and hit.group(2) == m})
        wanted += [(m.upper(), stat, "ms", f"{stat}_{m}_ms", "lower") for stat in
                   ("mean", "median", "std", *(f"p{p:g}" for p in pct))]
    wanted += [(name, "", unit, key, "higher") for key, name, unit in THROUGHPUTS]
    wanted.append(("duration", "", "s", "duration", "lower"))
    return [(metric, stat, unit, bench_value(off, key), bench_value(on, key), better)
            for metric, stat, unit, key, better in wanted if key in on or key in off]


def per_position_rates(d: dict) -> list[float]:
    """``spec_decode_per_position_acceptance_rates`` (fractions; vLLM's bench prints them as
    percentages), or [] when the run has no spec-decode section."""
    rates = d.get("spec_decode_per_position_acceptance_rates")
    return [float(r) for r in rates] if isinstance(rates, list) else []


def bench_summary(path_or_dict):
    """One run's latency percentiles and throughputs as a table (metric, stat, unit, value),
    the article's baseline (checklist step 2), rows only for keys the file has. Raises
    ValueError, FileNotFoundError as :func:`read_bench`."""
    import pandas as pd

    run = read_bench(path_or_dict)
    rows = [(metric, stat, unit, value) for metric, stat, unit, _, value, _ in bench_rows(run, {})]
    return pd.DataFrame(rows, columns=["metric", "stat", "unit", "value"])


#: Keys :func:`bench_point` needs in every run (what they give).
POINT_KEYS = {"max_concurrency": "the batch size (run with --max-concurrency N)",
              "completed": "requests finished",
              "total_input_tokens": "input tokens (the context)",
              "total_output_tokens": "output tokens (the context, the throughput)",
              "mean_tpot_ms": "time per output token",
              "mean_ttft_ms": "time to first token (the throughput's prefill share)",
              "output_throughput": "output tokens per second"}


def bench_point(path_or_dict, label: str | None = None, name: str | None = None) -> dict:
    """One ``vllm bench serve --save-result`` run as :func:`specnb.serving.calibrate_bench`'s
    columns: ``file``, ``model_id``, ``speculation``, ``concurrency`` (``max_concurrency``),
    ``input_len`` and ``output_len`` (total tokens / ``completed``), ``tpot_ms``
    (``mean_tpot_ms``), ``ttft_ms``, ``output_throughput``, ``tau``
    (``spec_decode_acceptance_length``: 1 + accepted / drafts) and ``gamma`` (the length of
    ``spec_decode_per_position_acceptance_rates``, else ``spec_decode_draft_tokens /
    spec_decode_num_drafts`` when whole); NaN without spec-decode keys. Speculation is on when
    the file has spec-decode keys with drafts, off when it has none; ``label`` (``"on"`` /
    ``"off"``) says it for a file whose keys cannot (an older vLLM). ``name`` is the run's
    ``file`` and the name in messages (default: the path, or a dict's ``label``, else ``run``).

    Raises
    ------
    ValueError
        as :func:`read_bench`; a key of :data:`POINT_KEYS` missing or null (named, with what
        it is for); ``completed`` 0; a label other than on / off; label ``off`` on a file
        whose counters show drafts.
    """
    d = read_bench(path_or_dict)
    where = name if name is not None else (
        str(path_or_dict) if not isinstance(path_or_dict, dict) else d.get("label") or "run")
    if label is not None and label not in ("on", "off"):
        raise ValueError(f"{where}: label must be 'on' or 'off', got {label!r}")
    missing = [k for k in POINT_KEYS if d.get(k) is None]
    if missing:
        raise ValueError(f"{where}: no {', '.join(missing)} (" + "; ".join(
            f"{k}: {POINT_KEYS[k]}" for k in missing) + "); a bench calibration needs "
            "`vllm bench serve --max-concurrency N --save-result` files")
    conc = d["max_concurrency"]
    if isinstance(conc, bool) or not isinstance(conc, int) or conc < 1:
        raise ValueError(f"{where}: max_concurrency must be an integer >= 1, got {conc!r}")
    if not d["completed"]:
        raise ValueError(f"{where}: completed is 0: no request finished")
    drafts = bench_value(d, "spec_decode_num_drafts")
    tau = bench_value(d, "spec_decode_acceptance_length")
    has_spec = (drafts > 0) if not math.isnan(drafts) else (tau >= 1)
    if label == "off" and has_spec:
        raise ValueError(f"{where}: labelled off, but its spec-decode counters show "
                         f"{int(drafts) if not math.isnan(drafts) else 'some'} drafts "
                         "(speculation was on)")
    on = has_spec if label is None else label == "on"
    gamma = math.nan
    rates = d.get("spec_decode_per_position_acceptance_rates")
    if on and rates:
        gamma = float(len(rates))
    elif on and drafts > 0:
        k = bench_value(d, "spec_decode_draft_tokens") / drafts
        gamma = float(round(k)) if abs(k - round(k)) < 1e-9 else math.nan
    n = float(d["completed"])
    return {"file": where, "model_id": d.get("model_id"), "speculation": bool(on),
            "concurrency": conc, "input_len": d["total_input_tokens"] / n,
            "output_len": d["total_output_tokens"] / n, "tpot_ms": float(d["mean_tpot_ms"]),
            "ttft_ms": float(d["mean_ttft_ms"]),
            "output_throughput": float(d["output_throughput"]),
            "tau": tau if on and tau >= 1 else math.nan, "gamma": gamma}


def bench_points(files, labels=None):
    """:func:`bench_point` of each file as a DataFrame (one row per file), ready for
    :func:`specnb.serving.calibrate_bench`. ``files``: paths or dicts, or a mapping of names
    to them (``{path: read_bench(path)}``: files already read, named by their paths).
    ``labels``: None, or one of ``"on"``, ``"off"``, ``"auto"`` (the file's keys decide) per
    file. Raises ValueError as :func:`bench_point`, for no files or a number of labels other
    than of files; OSError for a file that cannot be read.
    """
    import pandas as pd

    named = list(files.items()) if isinstance(files, Mapping) else [(None, f) for f in files]
    if not named:
        raise ValueError("give at least one bench file")
    labels = [None] * len(named) if labels is None else list(labels)
    if len(labels) != len(named):
        raise ValueError(f"give one label per bench file: {len(named)} file(s), "
                         f"{len(labels)} label(s)")
    return pd.DataFrame([bench_point(f, None if lab in (None, "auto") else lab, name)
                         for (name, f), lab in zip(named, labels)])


# --------------------------------------------------------------------------- how a run was made
#: ``vllm bench serve --dataset-name`` values whose prompts are generated token ids, not text
#: (``vllm/benchmarks/datasets/datasets.py``, 0.33.0).
SYNTHETIC_DATASETS = ("random", "random-mm", "random-rerank", "prefix_repetition")
#: Traces replayed without their content (``timed_trace``: prompts from hash ids, vLLM 0.33.0).
CONTENT_FREE_TRACES = ("timed_trace",)
#: Backends for which vLLM 0.33's ``vllm bench serve`` turns ``ignore_eos`` on by itself with a
#: random dataset (``OPENAI_COMPATIBLE_BACKENDS``, ``benchmarks/lib/endpoint_request_func.py``).
OPENAI_COMPATIBLE = ("vllm", "openai", "openai-chat", "openai-responses")
_CONSOLE_KEYS = ("dataset_name", "dataset_path", "ignore_eos", "skip_chat_template", "backend",
                 "endpoint", "temperature", "seed", "model", "tokenizer")
_CONSOLE_VALUE = r"('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^,()\s]+)"
_NAMESPACE = re.compile(r"Namespace\((.*)\)\s*$", re.M)


def read_bench_console(text: str) -> dict:
    """The arguments of a ``vllm bench serve`` run from the ``Namespace(...)`` line its console
    output starts with (``dataset_name``, ``dataset_path``, ``ignore_eos``,
    ``skip_chat_template``, ``backend``, ``endpoint``, ``temperature``, ``seed``, ``model``,
    ``tokenizer``, as given, before vLLM's own defaults: :func:`bench_setup` applies them).
    Raises TypeError for a ``text`` not a str, ValueError for no ``Namespace(...)`` line."""
    import ast

    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    hit = _NAMESPACE.search(text)
    if not hit:
        raise ValueError("no Namespace(...) line: give the console output of `vllm bench serve` "
                         "(it prints its arguments first)")
    out = {}
    for key in _CONSOLE_KEYS:
        m = re.search(r"(?:^|[ ,(])" + key + "=" + _CONSOLE_VALUE, hit.group(1))
        if not m:
            continue
        raw = m.group(1)
        try:
            out[key] = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            out[key] = float(raw) if raw in ("inf", "nan") else raw
    return out


def bench_setup(d: dict, console: dict | None = None) -> dict:
    """How a run was made, as far as its result (keys written by older ``vllm bench serve``
    versions or given with ``--metadata KEY=VALUE``) and its console arguments
    (:func:`read_bench_console`) say: ``dataset_name``, ``ignore_eos`` (with vLLM 0.33's own
    rule applied: a ``random`` / ``random-mm`` dataset on an OpenAI-compatible backend, or a
    ``timed_trace``, sets it), ``ignore_eos_implied`` (True when that rule, not the user, set
    it), ``backend``, ``endpoint``, ``skip_chat_template``, ``temperature``, ``model``,
    ``rejection_sample_method`` (from ``--metadata``); absent where neither says, the result's
    where both do."""
    out = {k: v for k, v in (console or {}).items() if v is not None}
    if "model" in out and "model_id" not in out:
        out["model_id"] = out["model"]
    for key in ("dataset_name", "dataset_path", "ignore_eos", "skip_chat_template", "backend",
                "endpoint_type", "endpoint", "temperature", "model_id", "tokenizer_id",
                "rejection_sample_method"):
        if d.get(key) is not None:
            out[key] = d[key]
    if "backend" not in out and "endpoint_type" in out:
        out["backend"] = out["endpoint_type"]
    for key in ("ignore_eos", "skip_chat_template"):  # --metadata values are strings
        if isinstance(out.get(key), str):
            out[key] = out[key].strip().lower() in ("1", "true", "yes", "on")
    name = out.get("dataset_name")
    implied = (name in ("random", "random-mm") and out.get("backend") in OPENAI_COMPATIBLE) or \
        name in CONTENT_FREE_TRACES
    if implied and not out.get("ignore_eos"):
        out["ignore_eos"], out["ignore_eos_implied"] = True, True
    return out


_REJECTION = re.compile(r"""rejection_sample_method['"]?\s*[:=]\s*['"]?([A-Za-z_]+)""")
_SYNTHETIC_KEYS = re.compile(r"""synthetic_acceptance_(?:rates|length)['"]?\s*[:=]""")


def server_acceptance_method(text: str) -> str | None:
    """The ``rejection_sample_method`` a vLLM server ran with, read from its log (the
    ``non-default args: {...}`` line vLLM 0.33 logs at start-up,
    ``vllm/entrypoints/common/startup.py``), its ``vllm serve`` command line, or a ``--config``
    YAML: ``"standard"``, ``"synthetic"``, ``"block"``, ``"fly"`` (vLLM 0.33's
    ``RejectionSampleMethod``, ``vllm/config/speculative.py``); ``"synthetic"`` also when only
    ``synthetic_acceptance_rates`` / ``synthetic_acceptance_length`` appear; None when the text
    names none (vLLM's default, ``standard``). The last one named wins (a restarted server)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    found = _REJECTION.findall(text)
    return found[-1] if found else ("synthetic" if _SYNTHETIC_KEYS.search(text) else None)
