"""One note type for every layer: :class:`Note`, a message with a stable ``code``.

A note says something true about an answer that is not an error (a context beyond the model's
maximum, a calibration that is underdetermined, a schedule that costs time). Tests and callers
match ``code`` (kebab-case, stable), never the English ``message``, which may be reworded.
``str(note)`` is the message, so printing a note prints what it always printed.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Note", "codes", "messages"]


@dataclass(frozen=True)
class Note:
    """A note: ``code`` (kebab-case, e.g. ``context-over-max-positions``) and ``message``."""

    code: str
    message: str

    def __str__(self) -> str:
        return self.message


def codes(notes) -> list[str]:
    """The codes of a sequence of :class:`Note`, in order."""
    return [n.code for n in notes]


def messages(notes) -> list[str]:
    """The messages of a sequence of :class:`Note`, in order."""
    return [n.message for n in notes]
