"""vLLM 0.33's Model Runner V2 n-gram speculator, its own Triton kernels run by Triton's
interpreter (tests/cases/vllm/0.33.0/ngram_v2.jsonl, written by oracle/drive_ngram_v2.py on
proposals.jsonl's corpus), replayed through specnb.replay with runner "v2": the same drafts
for every prefix and the same stepped counters, integer for integer."""

import json
from pathlib import Path

import pytest

from specnb.replay import ngram, step

HERE = Path(__file__).resolve().parent.parent / "cases" / "vllm" / "0.33.0"
LINES = [json.loads(x) for x in (HERE / "ngram_v2.jsonl").read_text().splitlines()]
CORPUS = {r["id"]: r for r in json.loads(
    (HERE / "proposals.jsonl").read_text().splitlines()[1])["requests"]}
STEPPED = [x for x in LINES if x["kind"] == "stepped"]
CALLS = [x for x in LINES if x["kind"] == "call"]


def _name(c):
    return f"g{c.get('gamma', c.get('k'))}-" + "-".join(str(v) for v in c["params"].values())


def test_the_fixture_ran_vllms_kernels_on_every_setting():
    meta = LINES[0]
    assert meta["vllm"] == "0.33.0" and meta["kernels"].endswith("ngram/speculator.py")
    assert len(STEPPED) == 12 and len(CALLS) == 4


@pytest.mark.parametrize("case", CALLS, ids=_name)
def test_every_prefix_drafts_what_vllms_kernels_draft(case):
    p = case["params"]
    for req in case["requests"]:
        r = CORPUS[req["id"]]
        full = r["prompt_ids"] + r["response_ids"]
        table = ngram.NgramTable(full, p["prompt_lookup_min"], p["prompt_lookup_max"],
                                 rightmost=True)
        got = [table.padded_draft(T, case["k"]).tolist() for T in range(1, len(full) + 1)]
        assert got == req["drafts"]


@pytest.mark.parametrize("case", STEPPED, ids=_name)
def test_stepped_counters_match_vllms_v2_engine_loop(case):
    g, p = case["gamma"], case["params"]
    for rid, want in case["steps"].items():
        r = CORPUS[rid]
        T, d, a = step.ngram_steps(r["prompt_ids"] + r["response_ids"], len(r["prompt_ids"]),
                                   [g], runner="v2", **p)[g]
        assert [[int(x), int(y), int(z)] for x, y, z in zip(T, d, a)] == want, rid
    c = case["counters"]
    assert c["num_drafts"] == c["num_steps"]  # V2 drafts at every step: proposal rate 1
    assert c["num_draft_tokens"] == g * c["num_steps"]
