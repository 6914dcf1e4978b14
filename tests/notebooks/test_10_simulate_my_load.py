"""notebooks/10_simulate_my_load.ipynb runs headless through the runner (conftest's
``executed_notebooks``), and what it shows agrees with ``specnb.simulate`` re-run here with the
parameters the notebook recorded: the concurrency and request-rate tables, where TPOT stops
paying, the serve line (vLLM's rules accept its config), and the numbers its **Answer.**
quotes."""

from __future__ import annotations

import json
import shlex

import pandas as pd
import pytest

from specnb import serving as S
from specnb import simulate as M
from specnb.nb import read_answer
from specnb.vllm import check_speculative_config

pytestmark = pytest.mark.slow

NB = "10_simulate_my_load"


@pytest.fixture(scope="module")
def rec(records, executed_notebooks):
    result = executed_notebooks[NB]
    assert result.status == "ok", result.error
    return records[NB]


def _ratio(p, c, policy="static"):
    st = S.setup(p["gpu"], p["model"], p["method"])
    load = M.synthetic(max(p["num_prompts"], 2 * c), p["input_len"], p["output_len"],
                       concurrency=c, seed=p["seed"])
    k = p["gamma"]
    sim = M.simulate(st, load, [M.policy("off"), M.policy("static", k=k)],
                     acceptance=M.acceptance(tau=p["tau"], gamma=k), seed=p["seed"])
    return sim.results[f"k={k}"]["mean_tpot_ms"] / sim.results["off"]["mean_tpot_ms"]


def test_concurrency_table_is_the_simulators(rec):
    p = rec["simulate.parameters"]
    table = pd.DataFrame(rec["simulate.by_concurrency"])
    static = table[table["policy"] == f"k={p['gamma']}"].set_index("concurrency")
    for c in (min(p["concurrencies"]), max(p["concurrencies"])):
        assert static.loc[c, "tpot_ratio"] == pytest.approx(_ratio(p, c), abs=1e-4)
    losing = [int(c) for c in static.index if static.loc[c, "tpot_ratio"] >= 1.0]
    assert rec["simulate.tpot_stops_paying_at"] == (losing[0] if losing else None)
    rates = pd.DataFrame(rec["simulate.by_rate"])
    assert sorted(set(rates["request_rate"])) == sorted(p["request_rates"])


def test_serve_line_passes_vllms_rules_and_the_answer_quotes_the_run(rec, executed_notebooks):
    p = rec["simulate.parameters"]
    serve = rec["simulate.serve"]
    if serve:
        words = shlex.split(serve)
        cfg = json.loads(words[words.index("--speculative-config") + 1])
        assert not check_speculative_config(cfg).errors
    text = read_answer(executed_notebooks[NB].output)
    table = pd.DataFrame(rec["simulate.by_concurrency"])
    static = table[table["policy"] == f"k={p['gamma']}"].set_index("concurrency")
    lo, hi = min(p["concurrencies"]), max(p["concurrencies"])
    assert f"x{static.loc[lo, 'tpot_ratio']:.2f} at concurrency {lo}" in text
    assert f"x{static.loc[hi, 'tpot_ratio']:.2f} at {hi}" in text
