"""specnb.measure.prompts: reading and validating prompt files and logged records (before any
model loads), per-task selection, the bundled log's provenance, and the context checks of
encoding (target and every draft)."""

import json
import time

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from specnb import measure as M  # noqa: E402
from specnb.cli import main  # noqa: E402
from specnb.measure import load  # noqa: E402

from .standins import ROOT, gpt2, prompts_file, save  # noqa: E402


def test_per_task_on_a_log_keeps_every_served_temperature():
    # the bundled log holds every prompt at T = 0 and at T = 1 (all T = 0 records first)
    records = M.load_prompts(M.BUNDLED_LOGGED, logged=True, per_task=1)
    assert [(r["task"], r["temperature"]) for r in records] == [
        (t, temp) for t in ("code-completion", "prose", "copy-edit") for temp in (0.0, 1.0)]
    assert len(M.load_prompts(M.BUNDLED_LOGGED, logged=True, per_task=2)) == 12
    # prompts without responses: per family, as before
    assert len(M.load_prompts(per_task=1)) == 3


def test_stored_logged_responses_have_provenance():
    recs = M.load_prompts(M.BUNDLED_LOGGED, logged=True)
    prompts = {p["id"]: p["prompt"] for p in M.load_prompts()}
    assert len(recs) == 2 * len(prompts)
    assert {r["temperature"] for r in recs} == {0.0, 1.0}
    for r in recs:
        assert r["prompt"] == prompts[r["id"]] and r["max_new_tokens"] == 64
        assert 1 <= len(r["response_ids"]) <= 64 and r["response"]
    readme = (ROOT / "data" / "prompts" / "README.md").read_text()
    assert "stdlib_heldout_responses.jsonl" in readme and "make_logged_responses.py" in readme


def test_load_prompts_validates_lines(tmp_path):
    f = tmp_path / "p.jsonl"
    f.write_text('{"task": "prose", "prompt": "ok"}\n{"prompt": "no task"}\n')
    with pytest.raises(ValueError, match=r"p.jsonl:2: .*'task'"):
        M.load_prompts(f)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        M.load_prompts(tmp_path / "none.jsonl")
    items = M.load_prompts(tasks=["prose"], per_task=2)
    assert [i["task"] for i in items] == ["prose", "prose"]
    with pytest.raises(ValueError, match="not in"):
        M.load_prompts(tasks=["poetry"])


def test_per_task_zero_means_all_prompts():
    assert M.load_prompts(per_task=0) == M.load_prompts()
    with pytest.raises(ValueError, match="per_task.*0 or None = all"):
        M.load_prompts(per_task=-1)


def test_prompt_files_bom_non_utf8_and_a_cut_line(tmp_path):
    """A BOM is not data; bytes that are not UTF-8 and a truncated JSON line are named."""
    rec = {"task": "t", "prompt": "p", "response": " r", "temperature": 0}
    f = tmp_path / "bom.jsonl"
    f.write_text("\ufeff" + json.dumps(rec) + "\n", encoding="utf-8")
    assert M.load_prompts(f, logged=True)[0]["response"] == " r"
    f.write_bytes(json.dumps(rec).encode().replace(b" r", b"caf\xe9") + b"\n")
    with pytest.raises(ValueError, match=r"bom.jsonl: not UTF-8 text \(byte 0xe9 at offset"):
        M.load_prompts(f, logged=True)
    f.write_text(json.dumps(rec)[:-5] + "\n")
    with pytest.raises(ValueError, match=r"bom.jsonl:1: not valid JSON \(Unterminated string "
                                         r"starting at; column \d+\)"):
        M.load_prompts(f, logged=True)


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


def test_prompts_are_validated_before_any_model_loads(tmp_path, monkeypatch):
    def no_loading(*a, **k):
        raise AssertionError("a model was loaded before the prompts were checked")

    monkeypatch.setattr(load, "load_model", no_loading)
    bad = prompts_file(tmp_path / "bad.jsonl", [{"prompt": "no task"}])
    with pytest.raises(ValueError, match="bad.jsonl:1"):
        M.measure(target="x", drafts=["y"], prompts=bad)
    with pytest.raises(ValueError, match="bad.jsonl:1"):
        M.alpha_from_logged(target="x", drafts=["y"], prompts=bad)


# --------------------------------------------------------------------------- context limits

@pytest.mark.slow
def test_prompt_longer_than_context_is_refused(models):
    tmodel, tok = models["target"]
    long = [{"id": "long", "task": "code-completion", "prompt": "x = 1\n" * 200}]
    with pytest.raises(ValueError, match="'long'.*has a context of 256 positions"):
        M.encode_prompts(tok, long, max_new_tokens=32, context=M.context_length(tmodel))


@pytest.mark.slow
def test_a_long_logged_prompt_is_not_blamed_on_max_new_tokens(models):
    tmodel, tok = models["target"]
    long = [{"id": "long", "task": "t", "prompt": "x = 1\n" * 200}]
    with pytest.raises(ValueError, match=r"'long' \(task 't'\) is \d+ tokens; it needs \d+ "
                                         r"positions.*: drop the record") as info:
        M.encode_prompts(tok, long, max_new_tokens=0, context=M.context_length(tmodel))
    assert "max-new-tokens" not in str(info.value)


@pytest.mark.slow
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


@pytest.mark.slow
def test_the_target_context_is_checked_too(tok):
    contexts = M.model_contexts(gpt2(1, positions=32), {"d": (gpt2(1, positions=1024), None)})
    with pytest.raises(ValueError, match="target has a context of 32 positions"):
        M.encode_prompts(tok, [{"id": "a", "task": "t", "prompt": "x = 1\n" * 10}],
                         max_new_tokens=16, context=contexts)
