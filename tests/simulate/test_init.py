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
    assert c["verdict"] == ("pays" if c["tpot_ratio"] < 1 else "does not pay")
    t = sim.compare("k=1", goal="throughput")
    assert t["on"] == "k=1" and t["verdict"] == (
        "pays" if t["output_throughput_ratio"] > 1 else "does not pay")


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
