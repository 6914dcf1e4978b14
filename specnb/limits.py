"""Ranges of the serving model's and the simulated load's scalar inputs, in a light module.

The one home of each rule: :mod:`specnb.serving` and :mod:`specnb.simulate` check these
values through the functions here, and the command line calls the same functions before it
imports either (seconds of imports and catalogue loading), so that a bad flag answers at once.
Only :mod:`specnb._check` (numpy) is imported.

Each function returns the value as a float, or raises :class:`specnb._check.ParamValueError`
(:class:`~specnb._check.ParamTypeError` for a non-number) whose ``param`` names the parameter.
"""

from __future__ import annotations

import math
import numbers

from . import _check

__all__ = ["ROUTING_SKEW_RANGE", "DEFAULT_GPU_MEMORY_UTILIZATION", "routing_skew",
           "proposal_rate", "gpu_memory_utilization", "request_rate"]

#: vLLM's default ``gpu_memory_utilization`` (the share of each GPU's memory vLLM takes): 0.92
#: since vLLM 0.20.0 (``CacheConfig.gpu_memory_utilization = Field(default=0.92, gt=0, le=1)``,
#: ``vllm/config/cache.py:215`` at 0.33.0); 0.9 before, as the flag tables
#: ``specnb/vllm/flags/<v>.json`` record.
DEFAULT_GPU_MEMORY_UTILIZATION = 0.92

#: Range of the mixture-of-experts ``routing_skew`` (:class:`specnb.serving.EngineStep`): 0 is
#: uniform routing (the upper bound on the experts a step touches), values towards 1
#: concentrate the tokens on fewer experts.
ROUTING_SKEW_RANGE = (0.0, 0.95)


def routing_skew(value) -> float:
    """``value`` checked as a routing skew: a number in :data:`ROUTING_SKEW_RANGE`.

    Raises
    ------
    ValueError
        outside [0, 0.95], NaN or infinite (``param`` ``routing_skew``).
    TypeError
        not a number.
    """
    lo, hi = ROUTING_SKEW_RANGE
    return _check.scalar_real("routing_skew", value, lo=lo, hi=hi)


def proposal_rate(value) -> float:
    """``value`` checked as a proposal rate M: the share of sequence-steps that carry a draft
    (n-gram, suffix), in (0, 1].

    Raises
    ------
    ValueError
        outside (0, 1] or NaN (``param`` ``proposal_rate``).
    TypeError
        not a number.
    """
    return _check.scalar_real("proposal_rate", value, lo=0.0, hi=1.0, lo_open=True)


def gpu_memory_utilization(value) -> float:
    """``value`` checked as vLLM's ``gpu_memory_utilization``: the share of each GPU's memory
    vLLM may use, in (0, 1].

    Raises
    ------
    ValueError
        outside (0, 1] or NaN (``param`` ``gpu_memory_utilization``).
    TypeError
        not a number.
    """
    return _check.scalar_real("gpu_memory_utilization", value, lo=0.0, hi=1.0, lo_open=True)


def request_rate(value) -> float:
    """``value`` checked as a request rate, requests per second: > 0, or ``inf``, ``vllm bench
    serve``'s default (vLLM 0.33 ``benchmarks/serve.py``: ``--request-rate`` defaults to
    ``float("inf")``, "all the requests are sent at time 0"; its ``get_request`` delays each
    by 0 at an infinite rate; trial 7, T7-04).

    Raises
    ------
    ValueError
        <= 0 (also -inf) or NaN (``param`` ``request_rate``).
    TypeError
        not a number.
    """
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        if value == math.inf:
            return math.inf
        if not value > 0:  # <= 0, -inf, NaN: one message that allows inf
            raise _check.ParamValueError(
                f"request_rate must be > 0 requests/s, or inf (every request at t = 0, vllm "
                f"bench serve's default), got {value}", "request_rate")
    return _check.scalar_real("request_rate", value, lo=0.0, lo_open=True)
