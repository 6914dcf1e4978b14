"""specnb.measure.corpus: the standard-library split (held-out files whole) and the evaluation
prompts cut from the held-out files only (the committed file regenerates identically)."""

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")  # specnb.measure imports torch
pytest.importorskip("transformers")

from specnb.measure import corpus  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "data" / "models"
PROMPTS = ROOT / "data" / "prompts" / "stdlib_heldout.jsonl"


def test_corpus_split_holds_out_whole_files():
    tr, held = corpus.corpus_files()
    root = corpus.stdlib_dir()
    held_names = {p.relative_to(root).as_posix() for p in held}
    assert held_names == set(corpus.HELD_OUT) & held_names and len(held) >= 15
    assert not set(tr) & set(held)
    assert all(not ({"test", "tests", "idlelib"} & set(p.relative_to(root).parts)) for p in tr)


def test_corpus_files_rejects_missing_root(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a folder"):
        corpus.corpus_files(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="held-out"):
        corpus.corpus_files(tmp_path)


@pytest.fixture
def same_stdlib():
    """The bundled prompts were cut from one exact standard library; skip elsewhere."""
    info = json.loads((MODELS / "training.json").read_text())
    _, held = corpus.corpus_files()
    if corpus.corpus_fingerprint(held) != info["corpus"]["held_out_sha256"]:
        pytest.skip("this Python's held-out standard-library files differ from the ones the "
                    f"bundled prompts were cut from (Python {info['corpus']['python']})")


def test_prompts_come_from_held_out_files_only(same_stdlib):
    items = [json.loads(line) for line in PROMPTS.read_text().splitlines()]
    assert {i["task"] for i in items} == set(corpus.TASKS)
    root = corpus.stdlib_dir()
    for i in items:
        fname = i["source"].split(":")[0]
        assert fname in corpus.HELD_OUT, i["id"]
        text = (root / fname).read_text()
        if i["task"] != "copy-edit":
            assert i["prompt"] in text, i["id"]
        else:  # the original function is verbatim, the edit follows it
            assert i["prompt"].split("\n\n")[0] in text, i["id"]


def test_prompts_file_is_what_build_prompts_gives(same_stdlib):
    # the committed file regenerates from the held-out files (same Python minor version)
    items = [json.loads(line) for line in PROMPTS.read_text().splitlines()]
    per_family = len(items) // len(corpus.TASKS)
    assert items == corpus.build_prompts(per_family)


def test_build_prompts_rejects_bad_counts():
    with pytest.raises(ValueError, match="per_family"):
        corpus.build_prompts(0)
