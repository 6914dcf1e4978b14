"""specnb.measure.logged: teacher forcing (a draft against itself accepts everything), and alpha
from logged traffic agreeing with alpha counted from assisted runs on the same responses."""

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from specnb import acceptance as acc  # noqa: E402
from specnb import measure as M  # noqa: E402

from .standins import PROMPTS, _tok, gpt2, llama, prompts_file  # noqa: E402

pytestmark = pytest.mark.slow  # every test here runs transformers


def test_teacher_forcing_a_draft_against_itself_accepts_everything(models):
    tmodel, tok = models["target"]
    ids = torch.tensor(tok("def f(x):\n    return")["input_ids"])
    cont = M.generate_continuation(tmodel, ids, max_new_tokens=12)
    assert M.teacher_forced_betas(tmodel, tmodel, ids, cont, 0.0).tolist() == [1.0] * 12
    sampled = M.generate_continuation(tmodel, ids, max_new_tokens=12, temperature=1.0, seed=1)
    np.testing.assert_allclose(M.teacher_forced_betas(tmodel, tmodel, ids, sampled, 1.0), 1.0,
                               atol=1e-5)
    d = models["drafts"]["draft-1x64"][0]
    b = M.teacher_forced_betas(tmodel, d, ids, sampled, 1.0)
    assert b.shape == (12,) and ((b >= 0) & (b <= 1)).all() and b.mean() < 1


def test_alpha_from_the_stored_logged_responses_matches_assisted_runs(models, tmp_path):
    tmodel, tok = models["target"]
    greedy = [r for r in M.load_prompts(M.BUNDLED_LOGGED, logged=True, per_task=1)
              if r["temperature"] == 0]
    log = tmp_path / "greedy.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in greedy))
    res = M.alpha_from_logged(models=models, prompts=log, gammas=(1, 3), timing=False)
    assert res.config["n_records"] == 3 and res.config["temperatures"] == [0.0]
    assert res.config["positions"] == 3 * 64
    records = M.load_prompts(log, logged=True)
    ids = M.encode_prompts(tok, records, max_new_tokens=0, context=None)
    for dname, (d, _) in models["drafts"].items():
        for g in (1, 3):
            rounds = []
            for x, r in zip(ids, records):
                run = M.run_generate(tmodel, x, draft=d, gamma=g,
                                     max_new_tokens=len(r["response_ids"]))
                rounds.append(acc.rounds_from_accept_lengths(run.accept_lengths, g,
                                                             len(r["response_ids"])))
            row = res.summary[(res.summary["draft"] == dname) & (res.summary["gamma"] == g)]
            assert abs(row["alpha_rounds"].iloc[0] - acc.alpha_from_rounds(rounds)) <= 0.02


def test_a_logged_response_longer_than_a_context_is_refused(tok, tmp_path):
    rec = [{"id": "r", "task": "t", "prompt": "x = 1", "response": "y = 2\n" * 40,
            "temperature": 0}]
    models = {"target": (gpt2(1, positions=1024), tok),
              "drafts": {"short": (gpt2(1, positions=64), None)}}
    with pytest.raises(ValueError, match="logged record 'r'.*draft 'short' has a context of 64"):
        M.alpha_from_logged(models=models, prompts=prompts_file(tmp_path / "l.jsonl", rec))


def test_logged_alpha_equals_alpha_counted_from_assisted_runs(tmp_path):
    tk = _tok()
    target = llama(2, repetition_penalty=1.2)
    draft = llama(1, seed=4)
    recs = M.logged_responses(target, tk, [dict(p, id=f"p{i}") for i, p in enumerate(PROMPTS)],
                              temperatures=(0.0, 1.0), max_new_tokens=12)
    log = prompts_file(tmp_path / "log.jsonl", recs)
    models = {"target": (target, tk), "drafts": {"d": (draft, None)}}
    res = M.alpha_from_logged(models=models, prompts=log, gammas=(1, 3), timing=False)
    assert res.config["processing"]["0"] and res.config["temperatures"] == [0.0, 1.0]
    for g in (1, 3):
        rounds = []
        for r in (r for r in recs if r["temperature"] == 0):
            ids = torch.tensor(tk(r["prompt"])["input_ids"])
            run = M.run_generate(target, ids, draft=draft, gamma=g,
                                 max_new_tokens=len(r["response_ids"]))
            assert run.tokens == r["response_ids"]
            rounds.append(acc.rounds_from_accept_lengths(run.accept_lengths, g,
                                                         len(r["response_ids"])))
        row = res.summary[(res.summary["gamma"] == g) & (res.summary["temperature"] == 0.0)]
        assert row["alpha_rounds"].iloc[0] == pytest.approx(acc.alpha_from_rounds(rounds))
    t1 = res.summary[res.summary["temperature"] == 1.0]
    assert t1["alpha_rounds"].isna().all() and ((t1["alpha"] > 0) & (t1["alpha"] < 1)).all()
    assert (res.summary["tau_betas"] >= 1).all()
    obj = json.loads(json.dumps(res.to_json()))
    assert obj["gamma"] == [1, 3, 1, 3] and "alpha_rounds" in obj
