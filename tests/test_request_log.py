"""specnb.request_log: the three row shapes (text, ids, chat), optional fields, bad rows named
by line, skip-bad counting, and the same prompt ids as measure's transformers encoding."""

import json

import numpy as np
import pytest

from specnb import request_log as RL


def _log(tmp_path, rows, name="log.jsonl"):
    f = tmp_path / name
    f.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows),
                 encoding="utf-8")
    return f


def test_bundled_log_reads_without_torch_and_matches_its_ids():
    log = RL.read()
    recs = [json.loads(x) for x in RL.BUNDLED_LOGGED.read_text().splitlines() if x.strip()]
    assert len(log) == len(recs) == 72 and log.skipped == ()
    assert log.tasks == ("code-completion", "copy-edit", "prose")
    for r, rec in zip(log, recs):
        assert r.id == rec["id"] and r.task == rec["task"]
        assert r.response_ids.tolist() == rec["response_ids"]
        assert r.temperature == rec["temperature"] and r.arrival_time is None
        assert r.prompt_len > 0 and r.response_len == len(rec["response_ids"])
        assert r.token_ids.size == r.prompt_len + r.response_len


@pytest.mark.slow  # imports transformers
def test_prompt_ids_equal_the_transformers_encoding():
    transformers = pytest.importorskip("transformers")
    tok = transformers.AutoTokenizer.from_pretrained(str(RL.BUNDLED_TOKENIZER))
    recs = [json.loads(x) for x in RL.BUNDLED_LOGGED.read_text().splitlines() if x.strip()]
    for r, rec in zip(RL.read(), recs):
        assert r.prompt_ids.tolist() == tok(rec["prompt"])["input_ids"]


def test_ids_rows_chat_rows_and_arrival_times(tmp_path):
    f = _log(tmp_path, [
        {"prompt_ids": [1, 2, 3], "response_ids": [4, 5], "timestamp": 12.5},
        {"task": "chat", "messages": [{"role": "user", "content": "def f(x):"},
                                      {"role": "assistant", "content": " return x"}],
         "arrival_time": "2026-01-01T00:00:01Z"},
        {"task": "chat", "messages": [{"role": "user", "content": "hi"}],
         "choices": [{"message": {"role": "assistant", "content": " there"}}],
         "created": 7, "request_id": "cmpl-1"},
        {"task": "code", "prompt": "x = 1", "response": " + 2", "temperature": 0.7},
    ])
    log = RL.read(f)
    a, b, c, d = log
    assert (a.id, a.task, a.prompt_ids.tolist(), a.response_ids.tolist(), a.arrival_time) == \
        ("line-1", None, [1, 2, 3], [4, 5], 12.5)
    tok = RL.load_tokenizer()
    assert tok.chat_template is None  # the bundled tokenizer: contents joined by newlines
    assert b.prompt_ids.tolist() == tok.encode("def f(x):", special=True)
    assert b.response_ids.tolist() == tok.encode(" return x", special=False)
    assert b.arrival_time == 1767225601.0 and b.id == "chat-00"
    assert (c.id, c.arrival_time, c.response_ids.tolist()) == \
        ("cmpl-1", 7.0, tok.encode(" there", special=False))
    assert d.temperature == 0.7 and d.id == "code-00" and log.tasks == ("chat", "code")
    with pytest.raises(ValueError, match="read-only"):
        a.prompt_ids[0] = 9


@pytest.mark.slow  # imports transformers
def test_a_chat_template_renders_like_transformers(tmp_path):
    transformers = pytest.importorskip("transformers")
    folder = tmp_path / "tok"
    folder.mkdir()
    (folder / "tokenizer.json").write_bytes((RL.BUNDLED_TOKENIZER / "tokenizer.json").read_bytes())
    cfg = json.loads((RL.BUNDLED_TOKENIZER / "tokenizer_config.json").read_text())
    cfg["chat_template"] = ("{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n"
                            "{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
                            "{{ eos_token if false else '' }}")
    (folder / "tokenizer_config.json").write_text(json.dumps(cfg))
    msgs = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "x = 1"}]
    ht = transformers.AutoTokenizer.from_pretrained(str(folder))
    want = ht(ht.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True),
              add_special_tokens=False)["input_ids"]
    f = _log(tmp_path, [{"messages": msgs, "response": " ok"}])
    assert RL.read(f, tokenizer=folder)[0].prompt_ids.tolist() == want


@pytest.mark.parametrize("row,msg", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "must be a JSON object"),
    ({"prompt": "p"}, "needs the served response"),
    ({"response": "r"}, "needs its prompt"),
    ({"prompt": "p", "response": ""}, "non-empty string"),
    ({"prompt_ids": [1], "response_ids": []}, "'response_ids' must be a non-empty list"),
    ({"prompt_ids": [1.5], "response_ids": [1]}, "'prompt_ids' must be a list of token ids"),
    ({"prompt_ids": [-1], "response_ids": [1]}, "negative token id -1"),
    ({"prompt_ids": [1], "response_ids": [10 ** 7]}, "outside the tokenizer's vocabulary"),
    ({"prompt_ids": [1], "response_ids": [1], "task": 3}, "'task' must be a string"),
    ({"prompt_ids": [1], "response_ids": [1], "temperature": -1}, "'temperature' must be"),
    ({"prompt_ids": [1], "response_ids": [1], "timestamp": "noon"}, "ISO-8601"),
    ({"messages": [{"role": "user", "content": "q"}]}, "needs the assistant's reply"),
    ({"messages": [{"role": "assistant", "content": "a"}]}, "only the assistant's reply"),
])
def test_bad_rows_name_their_line_and_skip_bad_counts_them(tmp_path, row, msg):
    good = {"prompt_ids": [1, 2], "response_ids": [3]}
    f = _log(tmp_path, [good, row])
    with pytest.raises(ValueError, match=f"log.jsonl:2: .*{msg}"):
        RL.read(f)
    log = RL.read(f, skip_bad=True)
    assert len(log) == 1 and [n for n, _ in log.skipped] == [2]


def test_a_missing_log_names_the_bundled_log_not_the_prompts(tmp_path, capsys):
    """Trial 8a T8a-03: replay's "does not exist; the bundled one is ..." named measure's
    prompt file, which replay refuses (no responses); it names the bundled request log now,
    for a missing file and for a folder, through read() and `specnb replay`."""
    from specnb.cli import main

    for path in (tmp_path / "none.jsonl", tmp_path):
        with pytest.raises(FileNotFoundError) as info:
            RL.read(path)
        assert str(info.value).endswith(f"the bundled one is {RL.BUNDLED_LOGGED})"
                                        if path.is_dir() else
                                        f"the bundled one is {RL.BUNDLED_LOGGED}")
        assert str(RL.BUNDLED_PROMPTS) not in str(info.value)
        assert main(["replay", str(path)]) == 2
        err = capsys.readouterr().err
        assert f"request log {str(path)!r}" in err and str(RL.BUNDLED_LOGGED) in err
    first = json.loads(RL.BUNDLED_LOGGED.read_text().splitlines()[0])
    assert "response" in first and "response" not in json.loads(  # a log replay can read
        RL.BUNDLED_PROMPTS.read_text().splitlines()[0])
    with pytest.raises(FileNotFoundError, match="bundled one is .*stdlib_heldout.jsonl"):
        RL.load_prompts(tmp_path / "none.jsonl")  # measure's prompts: the prompt file
    with pytest.raises(FileNotFoundError, match="bundled one is .*stdlib_heldout_responses"):
        RL.load_prompts(tmp_path / "none.jsonl", logged=True)


def test_empty_and_all_bad_logs_and_missing_files(tmp_path):
    with pytest.raises(ValueError, match="holds no request: it is empty"):
        RL.read(_log(tmp_path, ["", "  "]))
    with pytest.raises(ValueError, match=r"holds no request: every row was bad \(1 skipped"):
        RL.read(_log(tmp_path, [{"prompt": "p"}]), skip_bad=True)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        RL.read(tmp_path / "none.jsonl")
    with pytest.raises(ValueError, match="no tokenizer.json"):
        RL.read(_log(tmp_path, [{"prompt": "p", "response": "r"}]), tokenizer=tmp_path)
    # no tokenizer: id rows only, no vocabulary bound
    ids = _log(tmp_path, [{"prompt_ids": [1], "response_ids": [10 ** 7]}], "ids.jsonl")
    assert RL.read(ids, tokenizer=False)[0].response_ids.tolist() == [10 ** 7]
    with pytest.raises(ValueError, match="needs a tokenizer"):
        RL.read(_log(tmp_path, [{"prompt": "p", "response": "r"}]), tokenizer=False)
    assert np.asarray(RL.read(ids, tokenizer=False)[0].prompt_ids).dtype == np.int64


def test_read_lengths_takes_each_side_from_ids_then_counts_then_text(tmp_path):
    """T8a-08: the simulator's reader is this module's: the rows read() reads, plus token
    counts; each side from its ids, else its count, else its text (the bundled tokenizer)."""
    tok = RL.load_tokenizer()
    f = _log(tmp_path, [
        {"prompt_ids": [1, 2, 3], "response_ids": [4, 5], "arrival_time": 3},
        {"prompt": "def f(x):", "response_len": 7, "prompt_tokens": 99},  # count wins over text
        {"prompt": "def f(x):", "usage": {"completion_tokens": 4}},  # text prompt, counted reply
        {"messages": [{"role": "user", "content": "hi"},
                      {"role": "assistant", "content": "hello there"}], "created": 5},
        {"input_len": 11, "response_ids": [1] * 5}])
    got = RL.read_lengths(f)
    want_p = [3, 99, len(RL.encode_prompt(tok, prompt="def f(x):")),
              len(RL.encode_prompt(tok, messages=[{"role": "user", "content": "hi"}])), 11]
    want_r = [2, 7, 4, len(tok.encode("hello there", special=False)), 5]
    assert got.prompt_len.tolist() == want_p and got.response_len.tolist() == want_r
    assert got.arrival_time == (3.0, None, None, 5.0, None) and got.lines == (1, 2, 3, 4, 5)
    assert got.encoded == 2 and got.tokenizer == str(tok.path)
    # the chat row read() reads gives read()'s lengths
    r = RL.read(_log(tmp_path, [json.loads(f.read_text().splitlines()[3])], "chat.jsonl"))[0]
    assert (r.prompt_len, r.response_len) == (want_p[3], want_r[3])


def test_read_lengths_bounds_ids_only_by_a_tokenizer_given(tmp_path):
    f = _log(tmp_path, [{"prompt_ids": [128_000], "response_ids": [1]}])
    assert RL.read_lengths(f).prompt_len.tolist() == [1]  # the default bounds no id
    assert RL.read_lengths(f).tokenizer is None  # no text row: nothing encoded
    with pytest.raises(ValueError, match="outside the tokenizer's vocabulary"):
        RL.read_lengths(f, tokenizer=RL.BUNDLED_TOKENIZER)
    g = _log(tmp_path, [{"prompt": "a", "response": "b"}], "text.jsonl")
    with pytest.raises(ValueError, match="text.jsonl:1: a text or chat row needs a tokenizer"):
        RL.read_lengths(g, tokenizer=False)
    with pytest.raises(ValueError, match="empty"):
        RL.read_lengths(_log(tmp_path, [], "empty.jsonl"))


def test_a_pipe_is_read_once_and_dev_null_is_empty(tmp_path, capsys):
    """Trial 9, T9-09: ``specnb replay <(zcat log.jsonl.gz)`` and /dev/null were "does not
    exist" (Path.is_file() is False for a FIFO / device); a pipe is read now, once, its text
    kept for a second read in the same process (a command checks, then reads)."""
    import os
    import socket
    import threading

    from specnb.cli import main

    rows = [{"prompt_ids": [1, 2, 3, 1, 2, 3], "response_ids": [1, 2, 3, 4]},
            {"prompt_ids": [5, 6], "response_ids": [5, 6, 5]}]
    text = "".join(json.dumps(r) + "\n" for r in rows)
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)

    def write():
        with open(fifo, "w", encoding="utf-8") as fh:
            fh.write(text)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    log = RL.read(fifo, tokenizer=False)
    writer.join(timeout=10)
    assert not writer.is_alive()
    assert [r.response_ids.tolist() for r in log] == [r["response_ids"] for r in rows]
    again = RL.read_lengths(fifo, tokenizer=False)  # the pipe is drained: its kept text
    assert again.response_len.tolist() == [4, 3]
    assert main(["replay", str(fifo), "--gamma", "1"]) == 0
    capsys.readouterr()
    with pytest.raises(ValueError, match="holds no request: it is empty"):
        RL.read("/dev/null")
    assert main(["replay", "/dev/null"]) == 2
    assert "holds no request: it is empty" in capsys.readouterr().err
    sock_path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(sock_path))
        with pytest.raises(FileNotFoundError, match="is not a file, a pipe or a device"):
            RL.read(sock_path)
