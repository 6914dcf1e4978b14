"""How hard the property tests try, per tier.

``make test`` (the whole suite, CI) runs each Hypothesis test with the examples it asks for:
``@settings(max_examples=examples(300))`` is 300 examples. The fast tier (``pytest -m "not
slow"``, ``make check``) runs a quarter of them, at least 10, so that it stays under a minute
on the two-core machine. tests/conftest.py picks the tier when pytest starts: the Hypothesis
profile ``check`` when the -m expression deselects slow tests, ``full`` otherwise; a profile
named by ``--hypothesis-profile`` or ``$HYPOTHESIS_PROFILE`` wins. ``SCALE`` is the loaded
profile's ``max_examples`` over Hypothesis's default of 100 (tests without a count of their own
get the profile's ``max_examples`` directly).
"""

from __future__ import annotations

#: Share of each test's own example count that this run uses (1.0: all of them).
SCALE = 1.0


def examples(n: int) -> int:
    """The examples a property test that asks for ``n`` runs in this tier."""
    return n if SCALE >= 1 else max(10, round(n * SCALE))
