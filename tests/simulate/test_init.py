"""specnb/simulate/__init__.py: simulate() over policies and Simulation.compare."""

import pytest

from specnb import serving as S
from specnb import simulate as M

ST = S.setup("H100-SXM", "Llama-3.1-8B", "eagle3")


def test_compare_gives_on_off_ratios_and_the_verdict():
    w = M.synthetic(30, 200, 30, concurrency=4)
    sim = M.simulate(ST, w, [M.policy("off"), M.policy("static", k=1),
                             M.policy("static", k=3)],
                     acceptance=M.acceptance(acceptance_rates=[0.9, 0.8, 0.7]))
    c = sim.compare(goal="latency")
    off, on = sim.results["off"], sim.results[c["on"]]
    assert c["tpot_ratio"] == pytest.approx(on["mean_tpot_ms"] / off["mean_tpot_ms"])
    assert c["on"] == min(c["policies"], key=lambda n: c["policies"][n]["tpot_ratio"])
    assert c["verdict"] == _verdict(c["tpot_ratio"], lower=True)
    t = sim.compare("k=1", goal="throughput")
    assert t["on"] == "k=1" and t["verdict"] == _verdict(t["output_throughput_ratio"],
                                                         lower=False)


def _verdict(r, lower):
    """bench's 5 % band (T8a-07), computed here from the ratio."""
    if abs(r - 1) <= 0.05:
        return "within noise"
    return "pays" if (r < 1) == lower else "does not pay"


def test_a_ratio_inside_benchs_noise_band_is_within_noise_not_pays():
    """T8a-07: simulate's verdict follows bench's tolerance (one rule, advise.bench.better)."""
    from specnb.advise import bench as B

    assert B.TOLERANCE == 0.05
    assert [B.better(r, True) for r in (0.996, 0.94, 1.04, 1.06)] == [
        "same", "on", "same", "off"]
    assert B.better(1.06, False) == "on" and B.better(float("nan"), True) == ""
    w = M.synthetic(30, 200, 30, concurrency=4)
    sim = M.simulate(ST, w, [M.policy("off"), M.policy("static", k=1)],
                     acceptance=M.acceptance(alpha=0.0))
    c = sim.compare(goal="latency")
    assert c["verdict"] == _verdict(c["tpot_ratio"], lower=True)


def test_zero_acceptance_does_not_pay_at_high_concurrency_and_bad_calls():
    w = M.synthetic(64, 1000, 20, concurrency=32)
    sim = M.simulate(ST, w, [M.policy("off"), M.policy("static", k=4)],
                     acceptance=M.acceptance(alpha=0.0))
    assert sim.compare()["verdict"] == "does not pay"
    with pytest.raises(ValueError, match="names must differ"):
        M.simulate(ST, w, [M.policy("off"), M.policy("off")])
    with pytest.raises(ValueError, match="off policy"):
        M.simulate(ST, w, [M.policy("static", k=1)],
                   acceptance=M.acceptance(alpha=0.5)).compare()


def test_one_token_outputs_leave_tpot_undefined_not_a_zero_division():
    # trial3 W1: every output 1 token -> no decode step -> TPOT undefined
    w = M.synthetic(4, 100, 1, concurrency=2)
    sim = M.simulate(ST, w, [M.policy("off"), M.policy("static", k=3)],
                     acceptance=M.acceptance(alpha=0.7))
    t = sim.compare(goal="throughput")
    assert t["tpot_ratio"] is None and t["verdict"] in ("pays", "does not pay")
    with pytest.raises(ValueError, match="TPOT undefined"):
        sim.compare(goal="latency")
