"""The number limits of specnb's inputs and their message text, in one home without numpy:
the CLI's parsers (:mod:`specnb.cli`) and the serve-line reader (:mod:`specnb.vllm.serve`)
start without it; :mod:`specnb._check` re-exports both names, the log reader
(:mod:`specnb.vllm.logs`) uses them too.
"""

from __future__ import annotations

__all__ = ["MAX_EXACT_INT", "number_text"]

#: Largest whole number a float64 holds exactly; integer inputs pass through float64, so a
#: count, a flag or a log's counter above it (in size) is refused, never rounded.
MAX_EXACT_INT = 2 ** 53


def number_text(value, most: int = 24) -> str:
    """``value`` for a message: as ``repr`` gives it, but a number (or text) longer than
    ``most`` characters cut to its first and last digits and its length
    (``999999999999...9999 (400 digits)``): a 400-digit integer must not fill the line."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= most:
        return text if not isinstance(value, str) else repr(value)
    digits = sum(c.isdigit() for c in text)
    return f"{text[:12]}...{text[-4:]} ({digits} digits)" if digits > most else \
        repr(text[:most] + "...")
