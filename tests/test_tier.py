"""The fast tier's rules (tests/tier.py, tests/conftest.py): the sample a ``fast_sample`` test
keeps, and (slow: it collects in subprocesses) that the fast tier and the slow tests together
are the whole suite, case for case."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests import tier

ROOT = Path(__file__).resolve().parent.parent


def test_sample_keeps_the_first_and_every_nth_of_each_group_and_the_kept():
    ids = ["a:x:1", "a:x:2", "a:x:3", "a:y:1", "b:x:1", "b:x:2", "b:x:3", "b:x:4"]
    assert tier.sampled(ids, 2, groups=2) == [True, False, True, True, True, False, True, False]
    assert tier.sampled(ids, 3, groups=1) == [True, False, False, True, True, False, False, True]
    assert tier.sampled(ids, 100) == [True] + [False] * 7  # groups=0: one group
    assert tier.sampled(ids, 100, keep=[5]) == [True, False, False, False, False, True, False, False]
    assert all(tier.sampled(ids, 1))
    assert tier.group("0.33.0:method:eagle:no-k", 2) == "0.33.0:method"
    assert tier.group("argv0-x", 2) == "argv0-x" and tier.group("a:b", 0) == ""


@pytest.mark.parametrize("every, groups", [(0, 0), (2.5, 0), (True, 0), (2, -1), (2, "2")])
def test_sample_refuses_bad_arguments(every, groups):
    with pytest.raises(ValueError, match=r"fast_sample\((every|groups)=\.\.\.\) must be an int"):
        tier.sampled(["a"], every, groups=groups)


def _collected(*args) -> list[str]:
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "-p", "no:cacheprovider", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return [line for line in proc.stdout.splitlines() if "::" in line]


@pytest.mark.slow
def test_the_fast_tier_and_the_slow_tests_are_the_whole_suite():
    """On a sampled file, a module of slow tests only (not even collected by the fast tier)
    and a file of both: every case is in exactly one tier, and the fast tier keeps a sample of
    each sampled test, xfails included."""
    files = ["tests/vllm/test_oracle_fixtures.py", "tests/measure/test_run.py",
             "tests/measure/test_head_replay.py"]
    whole = _collected(*files)
    fast = _collected("-m", "not slow", *files)
    slow = _collected("-m", "slow", *files)
    assert sorted(fast + slow) == sorted(whole) and not set(fast) & set(slow)
    assert not [t for t in fast if "test_run.py" in t]
    for name in ("test_checker_gives_vllms_verdict", "test_target_aware_checks_give_vllms_verdict"):
        cases = [t for t in whole if f"::{name}[" in t]
        kept = [t for t in fast if f"::{name}[" in t]
        assert cases and 0 < len(kept) < len(cases) / 4, (name, len(kept), len(cases))
    known = [line.split("  #")[0].split(None, 1) for line in
             (ROOT / "tests" / "cases" / "vllm" / "known_disagreements.txt").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    assert known and all(any(t.endswith(f"[{v}:{cid.strip()}]") for t in fast) for v, cid in known)
