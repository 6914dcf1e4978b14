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
    ([{"prompt_len": 10}], "row 1: no output length"),
    ([{"prompt_len": 10, "output_len": 2}, {"output_len": 2}], "row 2: no prompt length"),
    ([{"prompt_len": 0, "output_len": 2}],
     r"row 1: prompt length must be an integer in \[1, 2\*\*53\]"),
    ([{"prompt_len": 3, "output_len": 2}], "without a time: give a request rate"),
    ([{"t": 1}, 3], "row 1: no prompt length"),
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
