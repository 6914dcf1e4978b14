"""specnb.measure.generate: assisted runs count what they should and put the draft's settings
back; the logits processing generate applies is read from transformers (top-k / top-p at T > 0,
none without a config)."""

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from specnb import measure as M  # noqa: E402

from .standins import PROMPTS, _tok, gpt2, llama  # noqa: E402

pytestmark = pytest.mark.slow  # every test here runs transformers


def test_sampling_assisted_run_counts(models):
    tmodel, tok = models["target"]
    d = models["drafts"]["draft-2x128"][0]
    ids = torch.tensor(tok("import os\n")["input_ids"])
    keys = ("num_assistant_tokens", "num_assistant_tokens_schedule",
            "assistant_confidence_threshold")
    before = {k: getattr(d.generation_config, k, None) for k in keys}
    run = M.run_generate(tmodel, ids, draft=d, gamma=3, max_new_tokens=20, temperature=1.0,
                         seed=3)
    assert sum(run.accept_lengths) == len(run.tokens)
    assert run.target_forwards == len(run.accept_lengths)
    # the fixed-gamma settings were put back as they were
    assert {k: getattr(d.generation_config, k, None) for k in keys} == before


def test_top_k_top_p_at_temperature_one_are_applied_to_both_sides():
    target = llama(2, top_k=5, top_p=0.8)
    ids = torch.tensor(_tok()(PROMPTS[0]["prompt"])["input_ids"])
    proc = M.generation_processing(target, ids, temperature=1.0, max_new_tokens=8)
    names = [type(p).__name__ for p in proc.target]
    assert "TopKLogitsWarper" in names and "TopPLogitsWarper" in names
    cont = M.generate_continuation(target, ids, max_new_tokens=8, temperature=1.0, seed=1)
    same = M.teacher_forced_betas(target, copy.deepcopy(target), ids, cont, 1.0, processing=proc)
    np.testing.assert_allclose(same, 1.0, atol=1e-6)
    other = llama(1, seed=5)
    b = M.teacher_forced_betas(target, other, ids, cont, 1.0, processing=proc)
    raw = M.teacher_forced_betas(target, other, ids, cont, 1.0)
    assert not np.allclose(b, raw)  # top-k 5 changes sum(min(p, q))


def test_no_config_no_processing(tok):
    ids = torch.tensor(tok("x = 1")["input_ids"])
    assert M.generation_processing(gpt2(1), ids, temperature=0.0).empty
    assert M.generation_processing(gpt2(1), ids, temperature=1.0).empty  # top_k 50 switched off
