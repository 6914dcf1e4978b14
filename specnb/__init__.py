"""specnb: should I turn on speculative decoding, with which method and draft length, and what
will it save me?

Modules
-------
theory   Leviathan et al. (2023) formulas: tokens per step, speedup, operations, optimal gamma.
cost     USD per 1M tokens, seconds per answer, relative cost per token.
memory   weight and KV-cache bytes, sequences a draft displaces.
data     published numbers with provenance (``specnb.data.load(name)``).

Packages, in layers (imports point down only; checked by ``lint-imports``, see pyproject.toml):
``vllm`` (vLLM's contract: build, check, read), ``serving`` (the step-time model), ``measure``
(torch and transformers, only there), ``advise`` (what to do: recommend, verdicts, plans),
``cli`` (the ``specnb`` command). Heavier modules (notebook runner, vLLM tools, transformers
measurement) import their own dependencies only when used.
"""

import importlib

_MODULES = ("theory", "cost", "memory", "data")
_THEORY = ("alpha_from_acceptance_length", "expected_tokens_per_step", "operations_factor",
           "optimal_gamma", "walltime_speedup")


def __getattr__(name):
    """The modules and theory's names, imported when first used (PEP 562): ``specnb config
    check`` then starts without numpy."""
    if name in _MODULES:
        return importlib.import_module(f".{name}", __name__)
    if name in _THEORY:
        return getattr(importlib.import_module(".theory", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: The package version, its one home (pyproject.toml reads it): 0.2 is unreleased
#: (docs/changelog.md's "0.2 (unreleased)" heading), so a development release of it (PEP 440).
__version__ = "0.2.dev0"

__all__ = [
    "theory", "cost", "memory", "data",
    "expected_tokens_per_step", "walltime_speedup", "operations_factor", "optimal_gamma",
    "alpha_from_acceptance_length",
]
