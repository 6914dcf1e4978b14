"""What the fast tier runs of each test, against the whole suite.

``make test`` (the whole suite, CI) runs every test with all it asks for. The fast tier
(``pytest -m "not slow"``, ``make check``) must stay under a minute on the idle two-core
machine (``benchmarks/bench_check_tier.py``), so it cuts two things, each by one rule here:

Property tests. ``@settings(max_examples=examples(300))`` is 300 examples in the whole suite;
the fast tier runs an eighth of them, at least 10. tests/conftest.py picks the tier when pytest
starts: the Hypothesis profile ``check`` when the -m expression deselects slow tests, ``full``
otherwise; a profile named by ``--hypothesis-profile`` or ``$HYPOTHESIS_PROFILE`` wins.
``SCALE`` is the loaded profile's ``max_examples`` over Hypothesis's default of 100 (tests
without a count of their own get the profile's ``max_examples`` directly).

Long parametrized lists (the oracle's fixtures: thousands of cases) and costly cases. A test
marked ``@pytest.mark.fast_sample(every=N)`` keeps a deterministic sample of its cases in the
fast tier and marks the others ``slow``, so ``make test`` still runs every case and ``-m "not
slow"`` deselects the rest; :func:`sampled` says which: in collection order, the first case
and every N-th after it, and every case marked ``xfail`` (a known disagreement: the fast tier
tells when it is fixed). ``fast_sample(every=N, groups=K)`` samples within groups: the cases
whose ids share their first K ``:``-separated fields (``groups=2``: ``0.33.0:method:eagle``
is in group ``0.33.0:method``), so that every group keeps at least its first case.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

#: Share of each test's own example count that this run uses (1.0: all of them).
SCALE = 1.0


def examples(n: int) -> int:
    """The examples a property test that asks for ``n`` runs in this tier."""
    return n if SCALE >= 1 else max(10, round(n * SCALE))


def group(case_id: str, groups: int) -> str:
    """The group of a parametrized case for :func:`sampled`: the first ``groups``
    ``:``-separated fields of its id (``group("0.33.0:method:eagle:no-k", 2)`` is
    ``"0.33.0:method"``; ``groups=0``: ``""``, one group)."""
    return ":".join(case_id.split(":")[:groups])


def sampled(case_ids: Sequence[str], every: int, keep: Iterable[int] = (), groups: int = 0) -> list[bool]:
    """Which of one test's cases the fast tier runs, in the order given (collection order).

    Parameters
    ----------
    case_ids : the cases' parameter ids (``item.callspec.id``), one per case.
    every : int >= 1; in each group the first case and every ``every``-th after it are kept
        (``every=1`` keeps all).
    keep : positions (into ``case_ids``) kept whatever their place (the xfail cases).
    groups : int >= 0; cases whose ids share their first ``groups`` ``:``-separated fields
        form a group (:func:`group`); 0: all cases are one group.

    Returns
    -------
    list of bool, one per case: True where the fast tier runs it.

    Raises
    ------
    ValueError
        ``every`` is not an int >= 1, or ``groups`` not an int >= 0.
    """
    for name, value, least in (("every", every, 1), ("groups", groups, 0)):
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise ValueError(f"fast_sample({name}=...) must be an int >= {least}; got {value!r}")
    keep = set(keep)
    seen: dict[str, int] = {}
    out = []
    for i, cid in enumerate(case_ids):
        g = group(cid, groups)
        n = seen.get(g, 0)
        seen[g] = n + 1
        out.append(n % every == 0 or i in keep)
    return out
