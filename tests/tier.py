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

The exhaustive cases. ``make test`` has a budget too (under 15 minutes on the idle machine,
issue 26), and a few lists are long enough that running every case there costs minutes while
a sample checks the same code: ``fast_sample(every=N, test_every=M)`` keeps, in ``make test``,
the fast tier's cases and every M-th case of each group (the same rule, :func:`tiers`); the
others are marked ``exhaustive`` (and ``slow``): ``make test`` (``-m "not exhaustive"``) leaves
them out and ``make test-exhaustive`` (``-m exhaustive``), which CI (.ci/run) runs right after
``make test``, runs them. A plain ``pytest`` still runs every case.
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


#: The tiers a case can be in (:func:`tiers`): the fast tier (and so make test too), make test
#: only, make test-exhaustive only.
CHECK, TEST, EXHAUSTIVE = "check", "test", "exhaustive"


def tiers(case_ids: Sequence[str], every: int, keep: Iterable[int] = (), groups: int = 0,
          test_every: int | None = None) -> list[str]:
    """The tier of each of one ``fast_sample`` test's cases, in the order given.

    Parameters
    ----------
    case_ids, every, keep, groups : as for :func:`sampled` (the fast tier's sample).
    test_every : int >= 1 or None; ``make test`` runs the fast tier's cases and the sample
        :func:`sampled` takes with ``every=test_every`` (same groups, same kept cases); None:
        ``make test`` runs every case.

    Returns
    -------
    list of :data:`CHECK` (the fast tier runs it, and make test), :data:`TEST` (make test runs
    it, the fast tier does not) or :data:`EXHAUSTIVE` (only make test-exhaustive / CI runs it).

    Raises
    ------
    ValueError
        ``every``, ``test_every`` (when given) not an int >= 1, or ``groups`` not an int >= 0.
    """
    keep = list(keep)
    fast = sampled(case_ids, every, keep, groups)
    if test_every is None:
        test = [True] * len(fast)
    else:
        if not isinstance(test_every, int) or isinstance(test_every, bool) or test_every < 1:
            raise ValueError(f"fast_sample(test_every=...) must be an int >= 1; got {test_every!r}")
        test = sampled(case_ids, test_every, keep, groups)
    return [CHECK if f else TEST if t else EXHAUSTIVE for f, t in zip(fast, test)]
