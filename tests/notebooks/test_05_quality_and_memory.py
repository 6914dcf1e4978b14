"""notebooks/05_quality_and_memory.ipynb (executed once per session by tests/conftest.py): the
verification Monte Carlo, the displaced sequences its takeaway counts, and lenience from
Leviathan's Table 5, recomputed from specnb.memory and specnb.theory."""

import json

import pytest

from specnb import memory, theory
from tests.notebooks.support import parameters, source
from tests.published import csv_rows

pytestmark = pytest.mark.slow  # reads the session's executed notebooks


def test_verification_monte_carlo(records):
    r = records["05_quality_and_memory"]
    assert abs(r["verify.standard_z_vs_p"]) < 4        # standard rule: output ~ p
    assert r["verify.lenient_z_vs_p"] > 100              # lenient rule: clearly not p
    assert abs(r["verify.lenient_z_vs_m"]) < 4          # ... but the mixture m
    assert r["verify.standard_acceptance"] == pytest.approx(r["verify.standard_acceptance_theory"], abs=0.01)
    assert r["memory.displaced_default"] > 0


def test_05_takeaway_counts_the_displaced_sequences(records, shown):
    p = parameters("05_quality_and_memory")
    per_tok = memory.kv_cache_bytes_per_token(p["target_layers"], p["target_kv_heads"], p["head_dim"], p["kv_dtype"])
    draft_kv = memory.kv_cache_bytes_per_token(p["draft_layers"], p["draft_kv_heads"], p["draft_head_dim"], p["kv_dtype"])
    fit = memory.concurrent_sequences(p["kv_budget_gb"] * 1e9, p["seq_len"], per_tok)
    lost = memory.sequences_displaced(p["kv_budget_gb"] * 1e9, memory.weight_bytes(p["draft_params"]),
                                      p["seq_len"], per_tok, draft_kv)
    r = records["05_quality_and_memory"]
    assert (r["memory.displaced_default"], r["memory.fit_default"]) == (lost, fit)
    sentence = f"{lost} of {fit} sequences (about {round(100 * lost / fit)}%)"
    assert sentence in r["memory.takeaway"] and sentence in shown["05"][1]
    assert "the sequences shown above" not in json.dumps(source("05_quality_and_memory"))


def test_05_lenience_from_table_5(records):
    rows = [r for r in csv_rows("leviathan_table5_lenience") if r["draft"].startswith("T5-small")]
    alpha = {float(r["lenience"]): float(r["alpha"]) for r in rows}
    got = records["05_quality_and_memory"]["lenience.t5_small"]
    c = parameters("05_quality_and_memory")["draft_c"]
    assert got["alpha_l1"] == alpha[1.0] and got["alpha_l01"] == alpha[0.1]
    assert got["speedup_l1"] == pytest.approx(theory.optimal_gamma(alpha[1.0], c)[1])
    assert got["speedup_l01"] == pytest.approx(theory.optimal_gamma(alpha[0.1], c)[1])
