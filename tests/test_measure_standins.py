"""specnb.measure on random-weight stand-ins for real checkpoints, built here in seconds (no
download): Llama-3-style generation configs (eos list, no pad), a draft with a shorter context,
logits processors from the target's generation_config (the identical-draft invariant), a padded
embedding, prompts validated before loading, missing paths and tokenizer files, and logged
traffic including bad records."""

import copy
import json
import time
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from transformers import (GenerationConfig, GPT2Config, GPT2LMHeadModel,  # noqa: E402
                          LlamaConfig, LlamaForCausalLM)

from specnb import acceptance as acc  # noqa: E402
from specnb import measure as M  # noqa: E402
from specnb.cli import main  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TOKENIZER = ROOT / "data" / "models" / "tokenizer"
VOCAB = 2048


@pytest.fixture(scope="module")
def tok():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(TOKENIZER)


def llama(layers, *, eos=(0, 1), pad=None, seed=0, positions=512, vocab=VOCAB, **gen):
    torch.manual_seed(seed)
    eos = list(eos) if isinstance(eos, tuple) else eos
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=64, intermediate_size=128,
                      num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                      bos_token_id=0, eos_token_id=eos, pad_token_id=pad,
                      max_position_embeddings=positions)
    m = LlamaForCausalLM(cfg).eval()
    m.generation_config = GenerationConfig(bos_token_id=0, eos_token_id=eos, pad_token_id=pad,
                                           **gen)
    return m


def gpt2(layers, *, positions=1024, seed=0, vocab=VOCAB):
    torch.manual_seed(seed)
    return GPT2LMHeadModel(GPT2Config(vocab_size=vocab, n_layer=layers, n_embd=32, n_head=2,
                                      n_positions=positions, bos_token_id=0, eos_token_id=0,
                                      pad_token_id=0)).eval()


def save(model, folder, tok=None):
    model.save_pretrained(folder)
    if tok is not None:
        tok.save_pretrained(folder)
    return str(folder)


def prompts_file(path, items):
    path.write_text("".join(json.dumps(i) + "\n" for i in items))
    return str(path)


PROMPTS = [{"task": "code", "prompt": "def add(a, b):\n    return"},
           {"task": "prose", "prompt": "Return the number of items in the queue"}]


def small_measure(models, **kw):
    args = dict(per_task=0, gammas=(2,), temperatures=(0.0,), max_new_tokens=12, repeats=1,
                warmup=0, pld=False, progress=False, prompts=PROMPTS)
    args.update(kw)
    return M.measure(models=models, **args)


# --------------------------------------------------------------------------- pad / eos forms

@pytest.mark.parametrize("eos,pad", [((0, 1), None), (0, None), ([1], None), ((0, 1), 1),
                                     (None, None)])
def test_every_pad_eos_form_generates(tok, eos, pad):
    target = llama(2, eos=eos, pad=pad)
    draft = llama(1, eos=eos, pad=pad, seed=1)
    expected = pad if pad is not None else (eos if isinstance(eos, int) else
                                            (eos[0] if eos else None))
    assert M.pad_token_id(target) == expected
    ids = torch.tensor(tok(PROMPTS[0]["prompt"])["input_ids"])
    plain = M.run_generate(target, ids, max_new_tokens=8)
    run = M.run_generate(target, ids, draft=draft, gamma=3, max_new_tokens=8)
    assert run.tokens == plain.tokens and sum(run.accept_lengths) == len(run.tokens)


def test_llama3_eos_list_without_pad_through_the_cli(tok, tmp_path, capsys):
    t = save(llama(2), tmp_path / "target", tok)
    d = save(llama(1, seed=1), tmp_path / "draft", tok)
    rc = main(["measure", "--target", t, "--draft", d, "--prompts",
               prompts_file(tmp_path / "p.jsonl", PROMPTS), "--gamma", "2", "--temperature", "0",
               "--max-new-tokens", "10", "--repeats", "1", "--no-pld", "--json", "--per-task", "0"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    obj = json.loads(captured.out)
    assert obj["lossless_all"] is True and obj["gamma"] == [2]


# --------------------------------------------------------------------------- context limits

def test_a_draft_with_a_shorter_context_is_refused_before_measuring(tok, tmp_path, capsys):
    t = save(gpt2(2, positions=1024), tmp_path / "target", tok)
    d = save(gpt2(1, positions=64, seed=1), tmp_path / "short", tok)
    long = [{"task": "code", "id": "long", "prompt": "x = 1\n" * 30}]  # ~60 tokens + 16 new
    t0 = time.perf_counter()
    rc = main(["measure", "--target", t, "--draft", d, "--prompts",
               prompts_file(tmp_path / "p.jsonl", long), "--max-new-tokens", "16", "--json"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "draft 'short' has a context of 64 positions (target: 1024)" in err
    assert "Traceback" not in err and time.perf_counter() - t0 < 30


def test_the_target_context_is_checked_too(tok):
    contexts = M.model_contexts(gpt2(1, positions=32), {"d": (gpt2(1, positions=1024), None)})
    with pytest.raises(ValueError, match="target has a context of 32 positions"):
        M.encode_prompts(tok, [{"id": "a", "task": "t", "prompt": "x = 1\n" * 10}],
                         max_new_tokens=16, context=contexts)


# --------------------------------------------------------------------------- logits processors

PROCESSING = [
    dict(repetition_penalty=1.05),
    dict(repetition_penalty=1.3, no_repeat_ngram_size=2),
    dict(suppress_tokens=list(range(2, 40)), bad_words_ids=[[50], [60, 61]]),
    dict(min_new_tokens=6),
]


@pytest.mark.parametrize("gen", PROCESSING, ids=lambda g: ",".join(g))
def test_identical_draft_accepts_everything_under_generation_config_processing(gen):
    target = llama(2, **gen)
    draft = copy.deepcopy(target)
    m = small_measure({"target": (target, _tok()), "drafts": {"same": (draft, None)}},
                      gammas=(1, 3), temperatures=(0.0, 1.0))
    assert m.config["processing"]["0"], "the processors were not picked up"
    g0 = m.summary[m.summary["temperature"] == 0.0]
    assert (g0["alpha"] == 1.0).all() and (g0["alpha_counted"] == 1.0).all()
    np.testing.assert_allclose(g0["tau_measured"], g0["tau_betas"], rtol=1e-12)
    runs = m.runs[(m.runs["method"] == "assisted") & (m.runs["temperature"] == 0.0)]
    for _, r in runs.iterrows():  # every full round yields gamma + 1 tokens
        assert all(n == r["gamma"] + 1 for n in r["accept_lengths"][:-1]), r["accept_lengths"]
    g1 = m.summary[m.summary["temperature"] == 1.0]
    if "min_new_tokens" in gen:
        # transformers' assistant drops the min-length processors: at T > 0 the draft keeps the
        # end-of-sequence mass the target removes, so sum(min(p, q)) falls short by that mass
        assert ((g1["alpha"] < 1.0) & (g1["alpha"] > 0.99)).all()
    else:
        np.testing.assert_allclose(g1["alpha"], 1.0, atol=1e-5)


@pytest.mark.parametrize("gen", [dict(repetition_penalty=1.3, no_repeat_ngram_size=2),
                                 dict(min_new_tokens=6, suppress_tokens=[5, 6, 7])],
                         ids=["penalties", "min-length"])
def test_teacher_forcing_predicts_the_rounds_of_another_draft_exactly(gen):
    target = llama(2, **gen)
    draft = llama(1, seed=3)  # the draft's own config does not matter: the target's is used
    m = small_measure({"target": (target, _tok()), "drafts": {"other": (draft, None)}},
                      gammas=(1, 3))
    runs = m.runs[m.runs["method"] == "assisted"]
    for _, r in runs.iterrows():
        b = m.betas[m.betas["prompt"] == r["prompt"]]["betas"].iloc[0]
        pred = acc.greedy_rounds(b, int(r["gamma"]), 12)
        assert pred.produced.tolist() == list(r["accept_lengths"])
    assert m.lossless is True


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


# --------------------------------------------------------------------------- smaller ones

def test_padded_embedding_message_says_only_the_size_differs(tok):
    with pytest.raises(ValueError, match="only the embedding size differs.*2048.*2112.*"
                                         r"resize_token_embeddings\(2112"):
        M.check_pair(gpt2(1), gpt2(1, vocab=2112), tok, tok)
    # a draft folder without its own tokenizer: the message still says what to try
    with pytest.raises(ValueError, match=r"only its embedding is padded.*resize_token_embeddings"):
        M.check_pair(gpt2(1), gpt2(1, vocab=2112), tok, None)


def test_prompts_are_validated_before_any_model_loads(tmp_path, monkeypatch):
    def no_loading(*a, **k):
        raise AssertionError("a model was loaded before the prompts were checked")

    monkeypatch.setattr(M, "load_model", no_loading)
    bad = prompts_file(tmp_path / "bad.jsonl", [{"prompt": "no task"}])
    with pytest.raises(ValueError, match="bad.jsonl:1"):
        M.measure(target="x", drafts=["y"], prompts=bad)
    with pytest.raises(ValueError, match="bad.jsonl:1"):
        M.alpha_from_logged(target="x", drafts=["y"], prompts=bad)


def test_a_local_looking_missing_path_fails_fast_and_says_how_to_stay_offline(tmp_path,
                                                                             monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    (tmp_path / "models").mkdir()
    t0 = time.perf_counter()
    with pytest.raises(FileNotFoundError, match="does not exist.*HF_HUB_OFFLINE=1"):
        M.load_model("models/nosuch")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(FileNotFoundError, match="HF_HUB_OFFLINE is set, so only the hub cache"):
        M.load_model("someorg/nosuch")
    assert time.perf_counter() - t0 < 5


def test_a_folder_without_tokenizer_files_gets_the_right_hint(tmp_path):
    folder = save(gpt2(1), tmp_path / "bare")
    with pytest.raises(FileNotFoundError, match="holds no tokenizer files.*save_pretrained"):
        M.load_model(folder)
    model, tok = M.load_model(folder, need_tokenizer=False)
    assert tok is None and model.config.n_layer == 1


# --------------------------------------------------------------------------- logged traffic

def _tok():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(TOKENIZER)


@pytest.mark.parametrize("record,msg", [
    ({"task": "t", "prompt": "p", "response": "", "temperature": 0}, "'response' must be a non-empty"),
    ({"task": "t", "prompt": "p", "response": "x"}, "must give the 'temperature'"),
    ({"task": "t", "prompt": "p", "response": "x", "temperature": -1}, "'temperature' must be"),
    ({"task": "t", "prompt": "p", "response": "x", "temperature": 0, "response_ids": []},
     "'response_ids' must be"),
    ({"task": "t", "prompt": "p"}, "logged traffic needs"),
])
def test_bad_logged_records_are_named(tmp_path, record, msg):
    f = prompts_file(tmp_path / "log.jsonl", [record])
    with pytest.raises(ValueError, match=f"log.jsonl:1: .*{msg}"):
        M.load_prompts(f, logged=True)


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


def test_cli_logged_flag_conflicts_exit_2(capsys):
    assert main(["measure", "--logged", str(M.BUNDLED_LOGGED), "--temperature", "0"]) == 2
    assert "each record gives the temperature" in capsys.readouterr().err
    assert main(["measure", "--logged", "x.jsonl", "--prompts", "y.jsonl"]) == 2


@pytest.mark.parametrize("extra, match", [
    (["--max-new-tokens", "5"], "--max-new-tokens does not apply with --logged"),
    (["--repeats", "3", "--no-pld"], "--repeats, --no-pld do not apply with --logged"),
    (["--gamma", "1", "1"], "--gamma lists a value twice: 1 1"),
    (["--draft", "d", "d"], "--draft lists a value twice: d d"),
])
def test_cli_logged_flags_that_would_be_ignored_or_repeated_exit_2(capsys, extra, match):
    """Flags --logged has no use for are refused like --temperature, not dropped silently;
    a repeated gamma or draft would print the same row twice (or merge two drafts)."""
    assert main(["measure", "--logged", str(M.BUNDLED_LOGGED), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("specnb measure: error:") and match in err, err
