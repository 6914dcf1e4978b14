"""From numbers to vLLM: build and check ``speculative_config``, read metrics and benchmarks,
recommend a setting.

Build and render
    :func:`speculative_config`, :func:`serve_command`, :func:`yaml_config`,
    :func:`python_snippet`
Check
    :func:`check_speculative_config` -> :class:`ConfigCheck` of :class:`Finding`;
    :func:`parse_speculative_config` (raises :class:`ConfigSyntaxError` with line, column
    and likely cause); :func:`suggest_fix`; the dynamic schedule: :func:`validate_schedule`,
    :func:`schedule_lookup`, :func:`describe_schedule`
Metrics
    :func:`read_acceptance` (any format) -> :class:`Reading`; :func:`read_metrics`,
    :func:`metrics_delta`, :func:`read_spec_decode_log`, :func:`log_counts`,
    :func:`read_offline_printout` -> :class:`SpecDecodeCounts`; :func:`acceptance_stats`,
    :func:`log_stats` -> :class:`AcceptanceStats` (acceptance rate and its interval, mean
    acceptance length, per position, alpha, advice); :func:`acceptance_rate_ci`,
    :func:`best_draft_length`
Bench
    :func:`read_bench`, :func:`bench_summary`, :func:`compare_bench` ->
    :class:`BenchComparison`
Advise
    :func:`recommend` -> :class:`Recommendation` (situation in: a workload kind and facts;
    :data:`RULES` with sources); :data:`ARTICLE_SITUATIONS`, :func:`recommendation_table`,
    :func:`compare_with_article`
Watch
    :func:`watch_table` (what to watch after launch), :func:`gamma1_verdict` (Corollary 3.9),
    :func:`theorem_advice` (Theorem 3.8 at a run's alpha, with what Table 4 shows of it),
    :func:`advice` (what measured acceptance says to do)
Samples
    :func:`sample_path` -- the bundled, labelled sample inputs under ``data/samples/``.

Rules and names come from vLLM's source at named commits (see each module's docstring and
``specnb/vllm/_schema.py``); nothing here imports vLLM or needs a GPU or network.
"""

from __future__ import annotations

from pathlib import Path

from ._schema import BUILD_METHODS, METHODS
from .advise import (
    ARTICLE_SITUATIONS,
    MEASURE_BATCH,
    RULES,
    SAMPLING_GAMMA_CAP,
    WORKLOADS,
    Recommendation,
    Situation,
    compare_with_article,
    recommend,
    recommendation_table,
)
from .bench import BenchComparison, bench_summary, comparability, compare_bench, read_bench
from .check import check_speculative_config, parse_speculative_config, suggest_fix
from .config import speculative_config
from .findings import ConfigCheck, Finding
from .logs import log_counts, log_stats, read_offline_printout, read_spec_decode_log
from .watch import advice, gamma1_verdict, theorem_advice, watch_table
from .metrics import (
    FORMATS,
    MIN_ACCEPTANCE_LENGTH,
    MIN_DRAFTS,
    PROMQL,
    TAIL_DRAFT_COST,
    WATCH,
    AcceptanceStats,
    SpecDecodeCounts,
    acceptance_length_advice,
    acceptance_rate_ci,
    acceptance_stats,
    best_draft_length,
    metrics_delta,
    read_metrics,
)
from ._defaults import DEFAULT_GAMMA, NGRAM_OPTIONS
from .read import Reading, read_acceptance
from .render import python_snippet, serve_command, yaml_config
from .schedule import describe_schedule, schedule_lookup, validate_schedule
from .syntax import ConfigSyntaxError

__all__ = [
    "METHODS", "BUILD_METHODS",
    "speculative_config", "serve_command", "yaml_config", "python_snippet",
    "check_speculative_config", "parse_speculative_config", "ConfigCheck", "Finding",
    "ConfigSyntaxError", "suggest_fix", "validate_schedule", "schedule_lookup",
    "describe_schedule", "DEFAULT_GAMMA", "NGRAM_OPTIONS",
    "read_acceptance", "Reading", "FORMATS", "read_offline_printout", "log_stats",
    "read_metrics", "metrics_delta", "read_spec_decode_log", "log_counts", "acceptance_stats",
    "SpecDecodeCounts", "AcceptanceStats", "PROMQL", "WATCH", "MIN_ACCEPTANCE_LENGTH",
    "acceptance_length_advice", "acceptance_rate_ci",
    "best_draft_length", "MIN_DRAFTS", "TAIL_DRAFT_COST",
    "read_bench", "bench_summary", "compare_bench", "comparability", "BenchComparison",
    "recommend", "recommendation_table", "Recommendation", "Situation", "ARTICLE_SITUATIONS",
    "MEASURE_BATCH", "SAMPLING_GAMMA_CAP", "WORKLOADS", "RULES", "compare_with_article",
    "gamma1_verdict", "theorem_advice", "watch_table", "advice",
    "sample_path", "sample_names",
]


def _samples_dir() -> Path:
    from ..data import DATA_DIR

    return Path(DATA_DIR) / "samples"


def sample_names() -> list[str]:
    """File names of the bundled sample inputs (``data/samples/``), sorted; README excluded."""
    folder = _samples_dir()
    if not folder.is_dir():
        raise FileNotFoundError(f"sample folder {folder} does not exist; install specnb from a "
                                "checkout (pip install -e .) or set SPECNB_DATA")
    return sorted(p.name for p in folder.iterdir() if p.is_file() and p.name != "README.md")


def sample_path(name: str) -> Path:
    """Path of a bundled sample input, e.g. ``sample_path("metrics_after.prom")``.

    Every sample is constructed from published numbers; ``data/samples/README.md`` says from
    which. Raises ValueError for an unknown name (the message lists the valid ones).
    """
    names = sample_names()
    if name not in names:
        raise ValueError(f"name must be one of {', '.join(names)}; got {name!r}")
    return _samples_dir() / name
