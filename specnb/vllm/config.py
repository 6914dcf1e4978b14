"""The builder, :func:`speculative_config` (checked by :mod:`specnb.vllm.check`), and the docs'
starting values (:data:`DEFAULT_GAMMA`, :data:`NGRAM_OPTIONS`, from ``traps.json``)."""

from __future__ import annotations

import difflib
import json

from .._json import plain
from ._versions import select
from .check import check_speculative_config
from .rules.context import TRAPS
from .rules.values import json_values

__all__ = ["speculative_config", "METHODS", "BUILD_METHODS", "DEFAULT_GAMMA", "NGRAM_OPTIONS"]

#: Every value ``method`` may take in the newest release with a table (its ``SpeculativeMethod``).
METHODS = select(None)[0].methods
#: The methods :func:`speculative_config` knows (deprecated ``*_mtp`` names excluded; the
#: newest release may lack some, e.g. vLLM 0.33.0 has no medusa: the build then fails).
BUILD_METHODS = tuple(TRAPS["build_methods"])
#: Draft length to start with per method when no acceptance has been measured: vLLM's docs
#: examples and the article's FAQ (ngram 4; draft_model 5; eagle3 3, the article's "start at
#: 3-5"; mtp 1, vLLM's MTP example). :mod:`specnb.advise.recommend` explains each value.
DEFAULT_GAMMA = dict(TRAPS["default_gamma"])
#: ``speculative_config`` options for ngram drafting: vLLM's docs example.
NGRAM_OPTIONS = dict(TRAPS["ngram_options"])


def speculative_config(method: str, num_speculative_tokens: int | None = None,
                       **options) -> dict:
    """Build the ``speculative_config`` dict for a vLLM method, checked like vLLM would.

    Parameters
    ----------
    method : str
        One of :data:`BUILD_METHODS` (the newest release lacks some, e.g. medusa).
    num_speculative_tokens : int or None
        Draft length gamma (> 0; a numpy integer is taken as the equal int). None leaves it
        out (suffix decoding and checkpoints with ``n_predict`` supply a default; the other
        methods then fail the check).
    **options
        Any other ``SpeculativeConfig`` key, e.g. ``model="Qwen/Qwen3-0.6B"``, as JSON values
        (numpy numbers taken as the equal Python number); a None value leaves the key out.

    Returns a dict: ``method``, ``model`` (if given), ``num_speculative_tokens``, then the
    options in the order given.

    Raises
    ------
    ValueError
        unknown ``method`` (with a did-you-mean) or a config vLLM would reject (every error
        finding with its fix; warnings are not raised: check the result to see them).
    TypeError
        ``num_speculative_tokens`` not an int (a string, a float, a bool); an option that is
        not a JSON value.
    """
    if not isinstance(method, str) or method not in BUILD_METHODS:
        close = difflib.get_close_matches(str(method).lower(), BUILD_METHODS, n=1)
        hint = TRAPS["method_aliases"].get(str(method).lower()) or (close[0] if close else None)
        now = [m for m in BUILD_METHODS if m in METHODS]  # the newest release's; older: more
        raise ValueError(f"method must be one of {', '.join(now)} (the newest vLLM's; "
                         f"{', '.join(m for m in BUILD_METHODS if m not in now)} on older "
                         f"releases); got {method!r}"
                         + (f" (did you mean {hint!r}?)" if hint else ""))
    num_speculative_tokens = plain(num_speculative_tokens)
    if num_speculative_tokens is not None and (isinstance(num_speculative_tokens, bool) or
                                               not isinstance(num_speculative_tokens, int)):
        raise TypeError(f"num_speculative_tokens must be an int (> 0) or None, got "
                        f"{type(num_speculative_tokens).__name__} {num_speculative_tokens!r}")
    options = {k: plain(v) for k, v in options.items()}
    json_values(options, "options")
    cfg = {"method": method, "model": options.pop("model", None),
           "num_speculative_tokens": num_speculative_tokens, **options}
    cfg = {k: v for k, v in cfg.items() if v is not None}
    result = check_speculative_config(cfg)
    if result.errors:
        detail = "; ".join(f"{f.key}: {f.message} (fix: {f.fix})" for f in result.errors)
        raise ValueError(f"vLLM would reject this speculative_config {json.dumps(cfg)}: "
                         f"{detail}")
    return cfg
