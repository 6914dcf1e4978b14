"""One advice note: a stable ``code`` (kebab-case, what tests and programs match) beside its
``message`` (the sentence people read). Used by every advice function of :mod:`specnb.advise`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Note"]


@dataclass(frozen=True)
class Note:
    """An advice note. ``str(note)`` is the message.

    Attributes
    ----------
    code : kebab-case identifier of the note's kind, e.g. ``"thin-window"``, stable across
        wording changes.
    message : the advice in one sentence, with its numbers and sources.
    """

    code: str
    message: str

    def __str__(self) -> str:
        return self.message
