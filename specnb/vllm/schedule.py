"""vLLM's dynamic draft length ``num_speculative_tokens_per_batch_size``: ``[range_start,
range_end, K]`` entries, K drafted while the batch size lies in the inclusive range (0 = none).
Sources: ``shared/reference/batch-model.md`` section 5, ``vllm/config/speculative.py``,
``vllm/v1/spec_decode/dynamic/utils.py`` (validation, lookup), the docs (off with
``--data-parallel-size > 1``; full CUDA graphs only on Model Runner V2); its measured cost:
:func:`schedule_tax` (vLLM issue #49548). When vLLM 0.33 drops the schedule and drafts the
static ``num_speculative_tokens`` instead (data parallelism, or a method Model Runner V1 cannot
vary): :func:`schedule_dropped`, the one home of that rule; which model runner serves a method:
:func:`model_runner`.
"""

from __future__ import annotations

import functools
import numbers

from ..runners import V2_UNSUPPORTED_METHODS, model_runner

__all__ = ["schedule_tax", "schedule_tax_source", "SCHEDULE_SEMANTICS", "schedule_problems",
           "validate_schedule", "schedule_lookup", "describe_schedule", "schedule_tax_text",
           "V1_SCHEDULE_METHODS", "V2_UNSUPPORTED_METHODS", "model_runner", "schedule_dropped",
           "SCHEDULE_DROPPED_CODE", "clamp_schedule", "SCHEDULE_CLAMPED_CODE"]

def schedule_tax() -> tuple[tuple[int, float, float], ...]:
    """The measured cost of turning the schedule on: ``(concurrency, TPOT ms with speculation
    off, TPOT ms with the schedule on and K = 0 everywhere)`` per row of
    ``data/vllm_schedule_tax.csv`` (vLLM issue #49548, comment; vLLM 0.27.1, 1x H100 NVL,
    Model Runner V1), read once per process."""
    return tuple((int(r["concurrency"]), float(r["tpot_off_ms"]), float(r["tpot_on_k0_ms"]))
                 for r in _schedule_tax_rows())


def schedule_tax_source() -> str:
    """The source of :func:`schedule_tax`, as its CSV states it."""
    return str(_schedule_tax_rows()[0]["source"])


@functools.lru_cache(maxsize=None)
def _schedule_tax_rows():
    import csv

    from .. import data

    with open(data.path("vllm_schedule_tax"), newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))  # the csv module: no pandas import for one check


#: How vLLM reads the schedule, in words (sources in the module docstring).
SCHEDULE_SEMANTICS = (
    "batch size = the number of requests scheduled in a step; ranges are inclusive; a gap "
    "between ranges takes the previous range's K; sizes past the last range take the last K; "
    "K = 0 drafts nothing; K above num_speculative_tokens is clamped to it; vLLM disables the "
    "schedule (static num_speculative_tokens) with --data-parallel-size > 1, and on Model "
    "Runner V1 for methods other than ngram, eagle, eagle3, mtp, draft_model, dflash (suffix)")

#: The methods whose Model Runner V1 proposers take the schedule: vLLM 0.33
#: ``config/vllm.py`` ``VllmConfig._maybe_disable_dynamic_sd_for_v1`` keeps
#: ``num_speculative_tokens_per_batch_size`` on V1 for these only ("V2 truncates drafts
#: centrally. V1 requires proposer support").
V1_SCHEDULE_METHODS = frozenset({"ngram", "eagle", "eagle3", "mtp", "draft_model", "dflash"})

#: The stable code of the finding / note that vLLM drops the schedule for the method.
SCHEDULE_DROPPED_CODE = "dynamic-schedule-disabled-for-method"


def schedule_dropped(method: str | None, num_speculative_tokens=None, *,
                     data_parallel_size: int = 1, env=None) -> str | None:
    """Why vLLM 0.33 drops ``num_speculative_tokens_per_batch_size`` and drafts the static
    ``num_speculative_tokens`` at every batch size, as a sentence; None when it keeps it.

    The one home of both rules of ``VllmConfig.__post_init__`` (vLLM 0.33 ``config/vllm.py``),
    each a logged warning, not a refusal: ``_maybe_disable_dynamic_sd_for_data_parallel``
    (``data_parallel_size`` > 1) and ``_maybe_disable_dynamic_sd_for_v1`` (the method runs on
    Model Runner V1, :func:`model_runner`, and is not in :data:`V1_SCHEDULE_METHODS`: suffix
    by default, e.g.; ``env``: the server's environment, VLLM_USE_V2_MODEL_RUNNER).
    ``num_speculative_tokens``: the static K named in the sentence (None: not named).
    """
    from ..hf_config import is_mtp_type

    k = "" if num_speculative_tokens is None else f"={num_speculative_tokens}"
    if isinstance(method, str) and is_mtp_type(method):
        method = "mtp"  # SpeculativeConfig renames every MTPModelTypes name to mtp first
    if isinstance(data_parallel_size, int) and data_parallel_size > 1:
        return (f"with --data-parallel-size {data_parallel_size} vLLM disables the dynamic "
                "schedule (data-parallel ranks could pick different K and deadlock) and "
                f"drafts the static num_speculative_tokens{k} at every batch size")
    runner = model_runner(method, env)
    if runner == "v1" and method not in V1_SCHEDULE_METHODS:
        why = ("VLLM_USE_V2_MODEL_RUNNER=0" if method not in V2_UNSUPPORTED_METHODS
               else f"Model Runner V2 does not run {method!r}")
        return (f"method {method!r} runs on Model Runner V1 ({why}), whose {method} proposer "
                "cannot vary the draft length: vLLM warns 'Dynamic speculative decoding is not "
                f"supported with the {method!r} speculative method on Model Runner V1', drops "
                "num_speculative_tokens_per_batch_size and drafts the static "
                f"num_speculative_tokens{k} at every batch size "
                "(VllmConfig._maybe_disable_dynamic_sd_for_v1)")
    return None


def schedule_tax_text() -> str:
    """The measured cost of turning the schedule on, as a sentence with its source and where
    it applies (trial 7, T7-11).

    The measurement (vLLM issue #49548) is Model Runner V1's, where vLLM 0.33 still forces
    PIECEWISE CUDA graphs when a schedule is set
    (``VllmConfig._maybe_override_dynamic_sd_cudagraph_mode``, which returns early on V2 and
    says "Use VLLM_USE_V2_MODEL_RUNNER=1 if you want to use full CUDA graphs"). On Model
    Runner V2, 0.33's default for ngram, eagle, eagle3, mtp, draft_model and dflash
    (:func:`model_runner`), the full CUDA graphs stay and one is captured per decode length
    the schedule uses (``v1/worker/gpu/cudagraph_utils.py``): that cost is not measured."""
    parts = [f"+{100 * (on / off - 1):.1f}% at concurrency {c} ({off:g} -> {on:g} ms)"
             for c, off, on in schedule_tax()]
    return ("on Model Runner V1 (VLLM_USE_V2_MODEL_RUNNER=0), where vLLM forces piecewise "
            "CUDA graphs with a schedule, turning it on costs time even where it drafts "
            "nothing: TPOT " + " and ".join(parts) + " with K = 0 everywhere against "
            "speculation off (vLLM issue #49548, vLLM 0.27.1, H100 NVL); vLLM 0.33 serves "
            "ngram, eagle, eagle3, mtp, draft_model and dflash on Model Runner V2 by default, "
            "which keeps full CUDA graphs (one per K in the schedule): the cost there is not "
            "measured")


def _is_int(x) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def schedule_problems(schedule) -> list[str]:
    """Everything ``validate_and_normalize_dynamic_sd_schedule`` @ ``a6f6bb1d`` would refuse
    in ``schedule`` (integer triples, positive bounds, start <= end, K >= 0, no overlap, first
    range at 1), as sentences (empty if none); stops at the first malformed entry."""
    if not isinstance(schedule, (list, tuple)) or isinstance(schedule, str):
        return [f"must be a list of [range_start, range_end, K] entries, got {schedule!r}"]
    if not schedule:
        return ["must not be empty (vLLM requires at least one [range_start, range_end, K] "
                "entry; omit the key to keep a static num_speculative_tokens)"]
    problems, rows = [], []
    for row in schedule:
        if not isinstance(row, (list, tuple)) or len(row) != 3 or not all(map(_is_int, row)):
            extra = (" (5-item [bs_lo, bs_hi, ctx_lo, ctx_hi, K] entries come from a newer "
                     "vLLM, PR #48944; the releases specnb has tables for take 3 items)"
                     if isinstance(row, (list, tuple)) and len(row) == 5 else "")
            return [f"each entry must be [range_start, range_end, K] with 3 integers, got "
                    f"{row!r}{extra}"]
        start, end, k = row
        if start < 1 or end < 1:
            problems.append(f"batch-size bounds must be positive, got {list(row)}")
        elif start > end:
            problems.append(f"range_start must be <= range_end, got {list(row)}")
        if k < 0:
            problems.append(f"K must be >= 0 (0 = no drafting), got {list(row)}")
        rows.append((start, end, k))
    if problems:
        return problems
    rows.sort()
    for (s0, e0, _), (s1, e1, _) in zip(rows, rows[1:]):
        if s1 <= e0:
            problems.append(f"ranges must not overlap: [{s0}, {e0}] and [{s1}, {e1}] share "
                            f"batch size{'s' * (min(e0, e1) > s1)} {s1}"
                            + (f"-{min(e0, e1)}" if min(e0, e1) > s1 else ""))
    if rows[0][0] != 1:
        problems.append(f"the first range must start at batch size 1 (so every batch size has a "
                        f"K), got {rows[0][0]}")
    return problems


def validate_schedule(schedule, num_speculative_tokens: int | None = None
                      ) -> list[tuple[int, int, int]]:
    """The schedule sorted by range, as vLLM normalises it; ValueError if vLLM would refuse it.

    The one schedule validator (an integer numpy array is taken as its nested list). With
    ``num_speculative_tokens`` every K must also be <= it: the newer docs
    (``dynamic_speculative_decoding.md`` @ ``015a47e1``) call a larger K an error, the code @
    ``a6f6bb1d`` clamps it silently.

    Raises ValueError naming every problem of :func:`schedule_problems`, a K above
    ``num_speculative_tokens``, or a ``num_speculative_tokens`` not an integer >= 1.
    """
    if hasattr(schedule, "tolist") and not isinstance(schedule, (list, tuple)):
        schedule = schedule.tolist()  # integer arrays give ints; float arrays stay refused
    problems = schedule_problems(schedule)
    if problems:
        raise ValueError("num_speculative_tokens_per_batch_size " + "; ".join(problems))
    rows = sorted(tuple(int(x) for x in row) for row in schedule)
    if num_speculative_tokens is not None:
        if not _is_int(num_speculative_tokens) or num_speculative_tokens < 1:
            raise ValueError(f"num_speculative_tokens must be an integer >= 1, got "
                             f"{num_speculative_tokens!r}")
        over = [list(r) for r in rows if r[2] > num_speculative_tokens]
        if over:
            raise ValueError(f"every K must be <= num_speculative_tokens = "
                             f"{num_speculative_tokens}, got {over[0]}")
    return rows


#: The stable code of the finding / note that vLLM clamps a schedule's K to
#: num_speculative_tokens (:func:`clamp_schedule`).
SCHEDULE_CLAMPED_CODE = "schedule-k-clamped"


def clamp_schedule(schedule, num_speculative_tokens: int
                   ) -> tuple[list[tuple[int, int, int]], list[tuple[int, int, int]]]:
    """``(rows, above)``: the schedule sorted by range with every K above
    ``num_speculative_tokens`` (int >= 1) clamped to it, as vLLM 0.33 runs it
    (``build_dynamic_sd_schedule_lookup`` stores ``min(num_speculative_tokens, K)``: no
    error), and the entries it clamped, as given. Raises ValueError as
    :func:`validate_schedule` (a schedule vLLM refuses, a bad ``num_speculative_tokens``)."""
    validate_schedule([[1, 1, 0]], num_speculative_tokens)  # checks num_speculative_tokens
    rows = validate_schedule(schedule)
    above = [r for r in rows if r[2] > num_speculative_tokens]
    return [(a, b, min(k, num_speculative_tokens)) for a, b, k in rows], above


def schedule_lookup(schedule, num_speculative_tokens: int, max_num_seqs: int) -> list[int]:
    """K at every batch size, as ``build_dynamic_sd_schedule_lookup`` @ ``a6f6bb1d`` builds it.

    ``schedule``: [range_start, range_end, K] entries; ``num_speculative_tokens``: int >= 1,
    the maximum draft length (K is clamped to it); ``max_num_seqs``: int >= 1, the largest batch
    (``--max-num-seqs``). Returns a list of int, length ``max_num_seqs + 1``: element b is K at
    batch size b (element 0 is 0 and unused); gaps take the previous range's K, sizes past the
    last range the last K; ranges past ``max_num_seqs`` are cut. Raises ValueError for a
    schedule vLLM refuses (:func:`validate_schedule`), ``num_speculative_tokens`` or
    ``max_num_seqs`` not an integer >= 1.
    """
    for name, value in (("num_speculative_tokens", num_speculative_tokens),
                        ("max_num_seqs", max_num_seqs)):
        if not _is_int(value) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    rows = validate_schedule(schedule)
    table, current, i = [0] * (max_num_seqs + 1), None, 0
    for b in range(1, max_num_seqs + 1):
        while i < len(rows) and rows[i][0] <= b:
            current = rows[i]
            i += 1
        table[b] = min(num_speculative_tokens, current[2])
    return table


def describe_schedule(schedule, num_speculative_tokens: int | None = None) -> str:
    """What vLLM does with a valid schedule, range by range, e.g. "K=3 for 1-64, off from 129":
    gaps say which K they inherit, a K above ``num_speculative_tokens`` that it is clamped.
    Raises ValueError for a schedule vLLM refuses."""
    rows = validate_schedule(schedule)
    parts = []
    for idx, (start, end, k) in enumerate(rows):
        shown = k if num_speculative_tokens is None else min(k, num_speculative_tokens)
        what = "off (K=0)" if shown == 0 else f"K={shown}"
        if num_speculative_tokens is not None and k > num_speculative_tokens:
            what += f" (K={k} clamped to num_speculative_tokens)"
        last = idx == len(rows) - 1
        span = f"{start}-{end}" if start != end else f"{start}"
        parts.append(f"{what} for batch sizes {span}")
        if not last and rows[idx + 1][0] > end + 1:
            parts.append(f"{what.split(' (')[0]} for the gap {end + 1}-{rows[idx + 1][0] - 1} "
                         "(previous K)")
        if last:
            parts.append(f"{what.split(' (')[0]} above {end} (last K)")
    return "; ".join(parts)
