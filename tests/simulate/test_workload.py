"""specnb/simulate/workload.py: vllm bench serve's random lengths and arrivals
(vllm/benchmarks/datasets/utils.py get_sampling_params, serve.py get_request @ v0.33.0), and
request logs."""

import json
import math

import numpy as np
import pytest

from specnb import simulate as M
from specnb.simulate import workload as W


def test_lengths_are_uniform_integers_in_vllms_interval():
    ins, outs = W.bench_lengths(np.random.default_rng(0), 5000, 100, 10, 0.25)
    assert ins.min() == 75 and ins.max() == 125
    assert outs.min() == 7 and outs.max() == 13  # floor(7.5), ceil(12.5)
    fixed = M.synthetic(4, 100, 10, concurrency=2)
    assert fixed.input_len.tolist() == [100] * 4 and fixed.output_len.tolist() == [10] * 4


def test_arrivals_are_gamma_gaps_rescaled_to_n_over_rate():
    t = W.bench_arrivals(np.random.default_rng(1), 200, 4.0, 1.0)
    assert t[-1] == pytest.approx(200 / 4.0) and np.all(np.diff(t) >= 0)
    steady = W.bench_arrivals(np.random.default_rng(1), 5, 2.0, math.inf)
    assert steady.tolist() == pytest.approx([0.5, 1.0, 1.5, 2.0, 2.5])
    bursty = W.bench_arrivals(np.random.default_rng(1), 2000, 4.0, 0.25)
    poisson = W.bench_arrivals(np.random.default_rng(1), 2000, 4.0, 1.0)
    assert np.diff(bursty).std() > 1.5 * np.diff(poisson).std()
    assert W.bench_arrivals(None, 3, math.inf).tolist() == [0, 0, 0]


def test_log_rows_with_and_without_times(tmp_path):
    p = tmp_path / "log.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in [
        {"timestamp": 100.0, "prompt_len": 10, "output_len": 5},
        {"timestamp": 101.5, "usage": {"prompt_tokens": 20, "completion_tokens": 3}},
        {"input_len": 7, "output_len": 2}]))
    w = M.from_log(p, request_rate=2.0, burstiness=math.inf)
    assert w.input_len.tolist() == [10, 20, 7] and w.output_len.tolist() == [5, 3, 2]
    assert w.arrival_s.tolist() == pytest.approx([0.0, 1.5, 2.0])


@pytest.mark.parametrize("rows, match", [
    ([{"prompt_len": 10}], r"log.jsonl:1: a row needs the served response: .*or a token count "
                           r"\(output_len, .*usage.completion_tokens\)"),
    ([{"prompt_len": 10, "output_len": 2}, {"output_len": 2}],
     r"log.jsonl:2: a row needs its prompt: .*or a token count \(input_len, "),
    ([{"prompt_len": 0, "output_len": 2}],
     r"log.jsonl:1: 'prompt_len' \(a token count\) must be an integer in \[1, 2\*\*53\]"),
    ([{"prompt_len": 3, "output_len": 2}], "without a time: give a request rate"),
    ([{"t": 1}, 3], "log.jsonl:1: a row needs its prompt"),
    ([{"prompt_len": 3, "output_len": 2}, 3], "log.jsonl:2: each line must be a JSON object"),
    ([{"prompt_len": 3, "output_len": 2, "created": "yesterday"}],
     "log.jsonl:1: 'created' 'yesterday' is neither seconds nor an ISO-8601 time"),
])
def test_bad_logs_name_the_row(tmp_path, rows, match):
    p = tmp_path / "log.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows))
    with pytest.raises(ValueError, match=match):
        M.from_log(p)


@pytest.mark.parametrize("kwargs, match", [
    (dict(concurrency=0), "concurrency"), (dict(request_rate=0.0), "request_rate"),
    (dict(request_rate=-1.0), "request_rate"), (dict(), "give a concurrency"),
    (dict(concurrency=2, range_ratio=1.0), "range_ratio"),
    (dict(concurrency=2, burstiness=0.0), "burstiness"),
])
def test_bad_synthetic_loads(kwargs, match):
    with pytest.raises(ValueError, match=match):
        M.synthetic(10, 100, 10, **kwargs)
    with pytest.raises(ValueError, match="input_len"):
        M.synthetic(10, 0, 10, concurrency=1)


def test_a_binary_log_gets_the_request_log_readers_message_and_a_bom_is_skipped(tmp_path):
    """T4-C1: one reader of request logs (request_log.jsonl_lines) for simulate and replay."""
    from specnb import request_log

    p = tmp_path / "bin.dat"
    p.write_bytes(b"\x91\x00garbage")
    with pytest.raises(ValueError) as got:
        M.from_log(p, concurrency=1)
    with pytest.raises(ValueError) as replay:
        list(request_log.jsonl_lines(p))
    assert str(got.value) == str(replay.value) and "byte 0x91 at offset 0" in str(got.value)
    p.write_bytes(b'\xef\xbb\xbf{"prompt_len": 3, "output_len": 2}\n')
    assert M.from_log(p, concurrency=1).input_len.tolist() == [3]


def test_an_infinite_rate_sends_every_request_at_zero_without_a_cap():
    """T7-04: request_rate inf given (not left out) is vllm bench serve's default."""
    w = W.synthetic(5, 10, 10, request_rate=math.inf)
    assert w.max_concurrency is None and math.isinf(w.request_rate)
    assert np.array_equal(w.arrival_s, np.zeros(5))
    with pytest.raises(ValueError, match="give a concurrency"):
        W.synthetic(5, 10, 10)
    with pytest.raises(ValueError, match="request_rate"):
        W.synthetic(5, 10, 10, request_rate=-math.inf)


def _write(p, rows):
    p.write_text("\n".join(json.dumps(r) for r in rows))
    return p


def test_the_bundled_log_reads_as_replay_reads_it():
    """T8a-08: the rows `specnb replay` reads (here the bundled text log, encoded with the
    bundled tokenizer as replay's default) give the simulator the same token lengths."""
    from specnb import request_log

    log = request_log.read()  # replay's reader and default tokenizer
    w = M.from_log(request_log.BUNDLED_LOGGED, concurrency=4)
    assert w.input_len.tolist() == [r.prompt_len for r in log]
    assert w.output_len.tolist() == [r.response_len for r in log]
    assert w.tokenizer == log.tokenizer and "72 text row(s) encoded" in w.source


def test_id_rows_iso_times_and_chat_rows_with_usage_counts(tmp_path):
    ids = _write(tmp_path / "ids.jsonl", [
        {"prompt_ids": [1, 2, 3, 4], "response_ids": [5, 6, 7], "arrival_time": 10},
        {"prompt_ids": [9] * 6, "response_ids": [200_000], "arrival_time": 10.5}])
    w = M.from_log(ids)  # ids of any vocabulary: the default tokenizer bounds none
    assert w.input_len.tolist() == [4, 6] and w.output_len.tolist() == [3, 1]
    assert w.arrival_s.tolist() == [0.0, 0.5] and w.tokenizer is None
    iso = _write(tmp_path / "iso.jsonl", [  # replay's forms: ISO-8601 with or without a zone
        {"prompt_tokens": 100, "completion_tokens": 20, "created": "2026-12-03T08:00:00Z"},
        {"prompt_tokens": 50, "completion_tokens": 5, "timestamp": "2026-12-03T08:00:02.5+00:00"},
        {"prompt_tokens": 70, "completion_tokens": 7, "created": "2026-12-03T09:00:04+01:00"},
        {"usage": {"prompt_tokens": 9, "completion_tokens": 2}, "arrival_time": "2026-12-03T08:00:05"}])
    w = M.from_log(iso)  # every row timed: neither a rate nor a concurrency needed
    assert w.input_len.tolist() == [100, 50, 70, 9] and w.output_len.tolist() == [20, 5, 7, 2]
    assert w.arrival_s.tolist() == pytest.approx([0.0, 2.5, 4.0, 5.0])
    chat = _write(tmp_path / "chat.jsonl", [
        {"messages": [{"role": "user", "content": "hi"}],
         "choices": [{"message": {"role": "assistant", "content": "hello"}}],
         "usage": {"prompt_tokens": 12, "completion_tokens": 3}, "created": 1700000000}])
    w = M.from_log(chat, tokenizer=False)  # counts: no tokenizer needed
    assert (w.input_len.tolist(), w.output_len.tolist()) == ([12], [3])
    text = _write(tmp_path / "text.jsonl", [{"prompt": "hi", "response": "hello"}])
    with pytest.raises(ValueError, match="text.jsonl:1: a text or chat row needs a tokenizer"):
        M.from_log(text, concurrency=1, tokenizer=False)


def test_an_iso_time_that_goes_back_is_named_by_its_line(tmp_path):
    p = _write(tmp_path / "iso.jsonl", [
        {"prompt_tokens": 100, "completion_tokens": 20, "created": "2026-12-03T08:00:02Z"},
        {"prompt_tokens": 50, "completion_tokens": 5, "created": "2026-12-03T08:00:00Z"}])
    with pytest.raises(ValueError, match="iso.jsonl:2: time .* is earlier than the row before"):
        M.from_log(p)
