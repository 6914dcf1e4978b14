"""Acceptance as other engines report it, read into specnb's numbers (readers only: numbers in,
numbers out; what they say to do is :mod:`specnb.advise`).

Every reader returns an :class:`EngineAcceptance`: tau = 1 + accepted drafts / verification
steps (the mean acceptance length with the bonus token, as vLLM counts it), the acceptance rate
accepted / drafted tokens, per-position rates (steps that accepted at least i + 1 drafts /
steps), and, where the input gives them, the counts under vLLM's counter names
(``num_drafts``, ``num_draft_tokens``, ``num_accepted_tokens``,
``num_accepted_tokens_per_pos``), so that a caller can hand them to
:func:`specnb.vllm.acceptance_stats`. ``definition`` says how the engine's own figure differs
from specnb's.

Modules: :mod:`~specnb.engines.sglang` (server log ``accept len`` lines, ``meta_info``),
:mod:`~specnb.engines.llamacpp` (server ``draft acceptance`` lines). vLLM's own per-request
``metrics.speculative_decoding`` is read by :mod:`specnb.vllm.requests` (vLLM's contract lives
in :mod:`specnb.vllm`). Layer L2 beside ``vllm``; imports neither it nor torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["EngineAcceptance", "ENGINES", "read_sglang_log", "read_sglang_meta_info",
           "read_llamacpp_log"]

#: The engines read here, as ``specnb metrics --engine`` names them.
ENGINES = ("sglang", "llama.cpp")


@dataclass(frozen=True)
class EngineAcceptance:
    """Acceptance read from another engine's output, in specnb's convention.

    Attributes
    ----------
    engine : "sglang" or "llama.cpp".
    source : what was read ("server log", "meta_info").
    tau : 1 + accepted drafts / verification steps (bonus included); NaN when unknown.
    acceptance_rate : accepted / drafted tokens, a fraction; NaN when unknown.
    per_position : per-position acceptance (fractions, position 0 first); may be empty.
    num_speculative_tokens : gamma (given, printed or inferred), or None.
    counts : vLLM-named counts when the input gives them ({} otherwise); ``estimated`` in
        ``notes`` when ``num_drafts`` comes from a rounded printed length.
    items : how many lines or responses were combined.
    definition : how the engine's own figures differ from specnb's (one sentence each).
    notes : what was assumed or skipped.
    """

    engine: str
    source: str
    tau: float
    acceptance_rate: float
    per_position: tuple = ()
    num_speculative_tokens: int | None = None
    counts: dict = field(default_factory=dict)
    items: int = 0
    definition: tuple = ()
    notes: tuple = ()

    def rows(self) -> list:
        """(quantity, value, unit) rows as ``specnb metrics`` prints them."""
        return [("mean acceptance length (tau)", self.tau, "tokens/step"),
                ("acceptance rate", 100 * self.acceptance_rate, "%"),
                ("num_speculative_tokens (gamma)", self.num_speculative_tokens, "tokens")]


def _nan_if_none(x) -> float:
    return math.nan if x is None else float(x)


from .llamacpp import read_llamacpp_log  # noqa: E402  (the readers need EngineAcceptance)
from .sglang import read_sglang_log, read_sglang_meta_info  # noqa: E402
