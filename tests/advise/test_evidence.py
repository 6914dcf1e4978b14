"""specnb.advise.evidence: what the published tables say (Leviathan Table 4, SpecDecode-Bench)."""

from __future__ import annotations

import pytest

from specnb.article import agrees
from specnb.theory import optimal_gamma, walltime_speedup
from specnb.advise import SAMPLING_GAMMA_CAP
from specnb.advise import sampling_gamma_evidence, theorem_vs_measured
from specnb.advise.evidence import theorem_sentence


# ----------------------------------------------------------------------------- model threshold
def _row(method: str, dataset: str):
    """One row of SpecDecode-Bench's acceptance CSV, read here, not via advise."""
    from specnb import data

    df = data.load("specdecode_bench_acceptance")
    return df[(df["method"] == method) & (df["dataset"] == dataset)].iloc[0]


def test_sampling_cap_is_backed_by_leviathan_table4():
    ev = sampling_gamma_evidence()
    assert len(ev) == 6  # the six temperature-1 rows
    for r in ev.itertuples():
        g, best = optimal_gamma(r.alpha, r.c)
        assert r._5 == g and r._6 == pytest.approx(best)
        assert r.share_of_best == pytest.approx(walltime_speedup(r.alpha, SAMPLING_GAMMA_CAP,
                                                                 r.c) / best)
    assert round(ev["share_of_best"].min(), 2) == 0.93  # printed "at least 93%"
    assert (ev[f"operations at {SAMPLING_GAMMA_CAP}"] <= ev["operations at best"] + 1e-12).all()


def test_theorem_3_8_is_not_an_upper_bound_in_leviathan_table4():
    t = theorem_vs_measured()
    assert agrees(t["ratio"].min(), 0.68, 2) and agrees(t["ratio"].max(), 1.29, 2)
    small = t[t["draft"] == "T5-small"]["ratio"]
    assert agrees(small.min(), 1.06, 2) and agrees(small.max(), 1.29, 2)
    assert (small > 1).all()  # every T5-small run measured above the theorem
    assert "0.68x to 1.29x" in theorem_sentence() and "1.06x to 1.29x" in theorem_sentence()


def test_workload_acceptance_reads_the_path_tau():
    """T9-05: tau is the CSV's path-followed tau(k) (what a server counts), not 1 + the sum
    of the p_ge shares over all positions; k 4 is interpolated between k 3 and k 5."""
    from specnb import data
    from specnb.advise import workload_acceptance

    cnn = _row("acc_ngram", "CNN/DM")
    tau, source = workload_acceptance("ngram", "copy-heavy", 3)
    assert tau == float(cnn["tau_k3"]) == 1.334 and "tau(3) of acc_ngram on CNN/DM" in source
    shares = 1 + sum(float(cnn[f"p_ge_{i}"]) for i in range(2, 5))
    assert shares == pytest.approx(1.714) and tau < shares  # the tester's numbers (T9-05)
    tau4, source = workload_acceptance("ngram", "copy-heavy", 4)
    assert tau4 == pytest.approx((cnn["tau_k3"] + cnn["tau_k5"]) / 2) == pytest.approx(1.356)
    assert "interpolated linearly between tau(3) 1.334 and tau(5) 1.378" in source
    code = _row("acc_ngram", "InstructCoder")
    for k in (1, 2, 3, 5):
        assert workload_acceptance("ngram", "code", k)[0] == float(code[f"tau_k{k}"])
    math_tau, source = workload_acceptance("eagle3", "math", 2)
    assert math_tau == float(_row("acc_eagle", "GSM8K")["tau_k2"])
    assert "SpecDecode-Bench" in source and "EAGLE-1 or EAGLE-3" in source
    df = data.load("specdecode_bench_acceptance")
    mean = df[df["method"] == "acc_ngram"]["tau_k5"].mean()
    general, source = workload_acceptance("ngram", "general", 5)
    assert general == pytest.approx(mean) and "the mean over GSM8K, ShareGPT" in source
    assert workload_acceptance("mtp", "chat", 3) is None
    assert workload_acceptance("eagle3", "creative", 3) is None
    with pytest.raises(ValueError, match=r"gamma 6: SpecDecode-Bench's released data give "
                                         r"tau\(k\) at k = 1, 2, 3, 5 only"):
        workload_acceptance("ngram", "code", 6)
    with pytest.raises(ValueError, match="gamma must be an integer"):
        workload_acceptance("ngram", "code", 0)
