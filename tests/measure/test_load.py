"""specnb.measure.load: devices and dtypes, loading (missing paths, safetensors only, tokenizer
files, hub ids offline), pair checks (vocabularies, padded embeddings) and the pad id of every
pad / eos form."""

import json
import time

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from specnb import measure as M  # noqa: E402
from specnb.cli import main  # noqa: E402
from specnb.measure import load  # noqa: E402
from specnb.memory import DTYPE_BYTES, TORCH_DTYPES  # noqa: E402

from .standins import PROMPTS, gpt2, llama, prompts_file, save  # noqa: E402


def test_dtype_names_come_from_the_memory_table():
    assert list(load._DTYPES) == list(TORCH_DTYPES)
    for name, short in TORCH_DTYPES.items():
        assert M.resolve_dtype(name) is getattr(torch, name)
        assert M.resolve_dtype(name).itemsize == DTYPE_BYTES[short]


def test_missing_model_path_says_what_to_do(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist.*specnb.measure.train"):
        M.load_model(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "config.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="safetensors"):
        M.load_model(tmp_path / "empty")


@pytest.mark.slow
def test_mismatched_vocabularies_are_refused(models, tmp_path):
    from transformers import GPT2Config, GPT2LMHeadModel

    other = GPT2LMHeadModel(GPT2Config(vocab_size=100, n_layer=1, n_embd=16, n_head=1,
                                       n_positions=64))
    with pytest.raises(ValueError, match="mismatched vocabularies.*vocab_size = 100"):
        M.check_pair(models["target"][0], other)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a torch without a GPU")
def test_cuda_without_gpu_says_how_to_install_a_cuda_torch():
    with pytest.raises(ValueError, match="--device") as exc:
        M.resolve_device("cuda")
    if torch.version.cuda is None:
        assert "CUDA build" in str(exc.value) and "make TORCH= run" in str(exc.value)


@pytest.mark.slow
def test_a_hub_id_that_cannot_be_loaded_gives_a_one_line_error(monkeypatch):
    """transformers' own message spans lines; the CLI prints one-line errors."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(FileNotFoundError) as info:
        M.load_model("nosuch-org/nosuch-model")
    assert "\n" not in str(info.value) and "HF_HUB_OFFLINE is set" in str(info.value)


# --------------------------------------------------------------------------- pad / eos forms

@pytest.mark.slow
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


@pytest.mark.slow
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


# --------------------------------------------------------------------------- smaller ones

@pytest.mark.slow
def test_padded_embedding_message_says_only_the_size_differs(tok):
    with pytest.raises(ValueError, match="only the embedding size differs.*2048.*2112.*"
                                         r"resize_token_embeddings\(2112"):
        M.check_pair(gpt2(1), gpt2(1, vocab=2112), tok, tok)
    # a draft folder without its own tokenizer: the message still says what to try
    with pytest.raises(ValueError, match=r"only its embedding is padded.*resize_token_embeddings"):
        M.check_pair(gpt2(1), gpt2(1, vocab=2112), tok, None)


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_folder_without_tokenizer_files_gets_the_right_hint(tmp_path):
    folder = save(gpt2(1), tmp_path / "bare")
    with pytest.raises(FileNotFoundError, match="holds no tokenizer files.*save_pretrained"):
        M.load_model(folder)
    model, tok = M.load_model(folder, need_tokenizer=False)
    assert tok is None and model.config.n_layer == 1
