"""vLLM's contract, nothing more: build and check ``speculative_config`` the way vLLM would,
render it, and read what vLLM writes (``/metrics``, logs, ``vllm bench serve`` results) into
numbers. What the numbers say to do is :mod:`specnb.advise`. Used by notebooks 06 and 07,
``specnb config`` / ``metrics`` / ``bench`` and ``specnb plan``; the names, by job:

Build and render
    :func:`speculative_config`; :func:`serve_command`, :func:`yaml_config`, :func:`python_snippet`
Check
    :func:`check_speculative_config` -> :class:`ConfigCheck` of :class:`Finding` (each with a
    stable ``code``); the dynamic schedule; the whole ``vllm serve`` line: :func:`check_serve_line`
Read
    :func:`read_acceptance` (any format) -> :class:`Reading`; the counters' readers and
    statistics; ``vllm bench serve`` files (:func:`read_bench`, how a run was made); per-request
    metrics in responses
Samples
    :func:`sample_path`, :func:`sample_names` -- the bundled, labelled inputs in ``data/samples/``.

The modules are listed in ``docs/vllm.md`` (Modules); ``rules`` holds vLLM's rules as plain
functions run in a listed order. Nothing here imports vLLM or needs a GPU or network.
"""

from __future__ import annotations

from pathlib import Path

from .check import check_speculative_config, parse_speculative_config, suggest_fix
from .config import BUILD_METHODS, DEFAULT_GAMMA, METHODS, NGRAM_OPTIONS, speculative_config
from .findings import ConfigCheck, Finding
from .render import python_snippet, serve_command, yaml_config
from .rules.target import mtp_target_finding
from .schedule import describe_schedule, schedule_lookup, validate_schedule
from .serve import ServeLineError, check_serve_line, parse_serve_line
from .syntax import ConfigSyntaxError

__all__ = [
    "read_bench_results", "per_position_rates",
    "METHODS", "BUILD_METHODS", "DEFAULT_GAMMA", "NGRAM_OPTIONS",
    "speculative_config", "serve_command", "yaml_config", "python_snippet",
    "check_speculative_config", "parse_speculative_config", "suggest_fix",
    "ConfigCheck", "Finding", "ConfigSyntaxError", "mtp_target_finding",
    "validate_schedule", "schedule_lookup", "describe_schedule",
    "check_serve_line", "parse_serve_line", "ServeLineError",
    "read_acceptance", "Reading", "UsageError", "read_metrics", "metrics_delta", "log_counts",
    "acceptance_stats", "SpecDecodeCounts", "AcceptanceStats", "PROMQL",
    "read_bench", "bench_summary", "bench_rows", "bench_value", "SPEC_KEYS", "COMPARABLE",
    "bench_point", "bench_points", "POINT_KEYS", "bench_setup", "read_bench_console",
    "server_acceptance_method", "read_acceptance_scans", "read_request_metrics",
    "sample_path", "sample_names",
]


#: The readers' names, imported when first used (PEP 562): a check starts without them.
_READERS = {"bench": ("COMPARABLE", "POINT_KEYS", "SPEC_KEYS", "bench_point", "bench_points",
                      "bench_rows", "bench_summary", "bench_value", "per_position_rates",
                      "read_bench", "read_bench_results", "bench_setup", "read_bench_console",
                      "server_acceptance_method"), "logs": ("log_counts",),
            "metrics": ("PROMQL", "AcceptanceStats", "SpecDecodeCounts", "acceptance_stats",
                        "metrics_delta", "read_metrics"),
            "read": ("Reading", "UsageError", "read_acceptance", "read_acceptance_scans"),
            "requests": ("read_request_metrics",)}


def __getattr__(name):
    import importlib

    for module, names in _READERS.items():
        if name in names:
            return getattr(importlib.import_module(f".{module}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
