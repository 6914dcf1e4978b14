"""The load: requests with arrival times and prompt / output lengths, as ``vllm bench serve``
sends them (``vllm/benchmarks/serve.py`` and ``vllm/benchmarks/datasets/utils.py`` @ v0.33.0),
or read from a request log.

:class:`Workload`, :func:`synthetic`, :func:`from_log`, :func:`bench_lengths`,
:func:`bench_arrivals`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import _check, limits, request_log

__all__ = ["Workload", "synthetic", "from_log", "bench_lengths", "bench_arrivals"]


@dataclass(frozen=True)
class Workload:
    """Requests to serve, in send order.

    Attributes
    ----------
    input_len, output_len : int arrays (n,), >= 1: prompt tokens and tokens to generate
        (``ignore_eos``: every request generates exactly its output_len)
    arrival_s : float array (n,), non-decreasing: when each request may be sent (0 for a
        closed loop at infinite rate)
    max_concurrency : int or None: at most this many requests in flight (``vllm bench
        serve --max-concurrency``; a request waits for a free slot, then is sent)
    request_rate : float (inf for a closed loop) and ``burstiness``: how the arrivals were
        drawn (written into the bench-format result)
    source : what built it
    tokenizer : the tokenizer that encoded a log's text rows (its path), or None
    """

    input_len: np.ndarray
    output_len: np.ndarray
    arrival_s: np.ndarray
    max_concurrency: int | None = None
    request_rate: float = math.inf
    burstiness: float = 1.0
    source: str = ""
    tokenizer: str | None = None

    @property
    def num_prompts(self) -> int:
        return int(self.input_len.size)


def bench_lengths(rng, num_prompts: int, input_len: int, output_len: int,
                  range_ratio: float = 0.0):
    """Prompt and output lengths as ``vllm bench serve --dataset-name random`` draws them
    (``get_sampling_params``): uniform integers in ``[floor(N (1 - r)), ceil(N (1 + r))]``,
    input first, then output (at least 1), from ``rng`` (a numpy Generator). The tokenizer's
    special tokens (which vLLM subtracts from the input length) are not known here: 0."""
    lo_i, hi_i = math.floor(input_len * (1 - range_ratio)), math.ceil(input_len * (1 + range_ratio))
    lo_o = max(math.floor(output_len * (1 - range_ratio)), 1)
    hi_o = max(math.ceil(output_len * (1 + range_ratio)), 1)
    ins = rng.integers(lo_i, hi_i + 1, size=num_prompts)
    outs = rng.integers(lo_o, hi_o + 1, size=num_prompts)
    return np.maximum(ins, 1).astype(np.int64), outs.astype(np.int64)


def bench_arrivals(rng, num_prompts: int, request_rate: float, burstiness: float = 1.0):
    """Send times as ``vllm bench serve``'s ``get_request`` draws them: gaps from a gamma
    distribution of shape ``burstiness`` and scale ``1 / (rate x burstiness)`` (burstiness 1:
    Poisson), cumulated, then rescaled so that the last is ``num_prompts / rate`` (vLLM's
    normalisation); all 0 at an infinite rate; ``1 / rate`` apart at infinite burstiness."""
    if math.isinf(request_rate):
        return np.zeros(num_prompts)
    if math.isinf(burstiness):
        gaps = np.full(num_prompts, 1.0 / request_rate)
    else:
        gaps = rng.gamma(shape=burstiness, scale=1.0 / (request_rate * burstiness),
                         size=num_prompts)
    t = np.cumsum(gaps)
    if t[-1] != 0:
        t = t * ((num_prompts / request_rate) / t[-1])
    return t


def _burst(burstiness) -> float:
    """burstiness > 0; inf (evenly spaced arrivals) allowed, as in vLLM."""
    if isinstance(burstiness, (int, float)) and not isinstance(burstiness, bool) \
            and math.isinf(burstiness) and burstiness > 0:
        return math.inf
    return float(_check.scalar_real("burstiness", burstiness, lo=0.0, lo_open=True))


def _rate(request_rate) -> float:
    if request_rate is None:
        return math.inf
    return float(limits.request_rate(request_rate))


def synthetic(num_prompts: int, input_len: int, output_len: int, *, range_ratio: float = 0.0,
              concurrency: int | None = None, request_rate=None, burstiness: float = 1.0,
              seed: int = 0) -> Workload:
    """A ``vllm bench serve --dataset-name random`` load: ``num_prompts`` requests of
    ``input_len`` + ``output_len`` tokens (``range_ratio`` as ``--random-range-ratio``), sent
    in a closed loop of ``concurrency`` (``--max-concurrency``, rate infinite) or at
    ``request_rate`` requests/s (Poisson, ``--burstiness``), optionally both; a rate given as
    ``inf`` is the bench's default: every request sent at t = 0, no concurrency cap beyond
    the server's (T7-04). ``seed``: one numpy Generator draws the lengths, then the gaps.

    Raises
    ------
    ValueError
        num_prompts, input_len, output_len or concurrency < 1; a rate <= 0; burstiness <= 0;
        range_ratio outside [0, 1); neither a concurrency nor a rate.
    """
    n = _check.scalar_int("num_prompts", num_prompts, lo=1)
    i = _check.scalar_int("input_len", input_len, lo=1)
    o = _check.scalar_int("output_len", output_len, lo=1)
    r = _check.scalar_real("range_ratio", range_ratio, lo=0.0, hi=1.0, hi_open=True)
    c = None if concurrency is None else _check.scalar_int("concurrency", concurrency, lo=1)
    rate = _rate(request_rate)
    b = _burst(burstiness)
    if c is None and request_rate is None:  # an explicit inf: all at t = 0 (T7-04)
        raise ValueError("give a concurrency (closed loop, --max-concurrency) or a "
                         "request_rate (requests/s, inf: all at once), or both")
    s = _check.scalar_int("seed", seed, lo=0)
    rng = np.random.default_rng(s)
    ins, outs = bench_lengths(rng, n, i, o, r)
    return Workload(ins, outs, bench_arrivals(rng, n, rate, b), c, rate, float(b),
                    f"random {i} + {o} tokens x {n}" + (f", range ratio {r:g}" if r else ""))


def from_log(path, *, tokenizer=None, request_rate=None, burstiness: float = 1.0,
             concurrency=None, seed: int = 0) -> Workload:
    """Requests from a request log (:func:`specnb.request_log.read_lengths`, the rows
    ``specnb replay`` reads, and token counts): each row's prompt and output lengths in
    tokens and, optionally, its arrival time (seconds or ISO-8601, shifted so that the
    first is 0). Rows without a time arrive at ``request_rate`` (as :func:`bench_arrivals`)
    after the last timed row, or all at once in a closed loop of ``concurrency``.
    ``tokenizer`` encodes text rows (``read_lengths``'s; None: the bundled one).

    Raises
    ------
    ValueError
        a bad row or log (``read_lengths``'s, naming the line); untimed rows with neither a
        rate nor a concurrency; times that go backwards.
    FileNotFoundError
        no such file, or a folder.
    """
    rate = _rate(request_rate)
    c = None if concurrency is None else _check.scalar_int("concurrency", concurrency, lo=1)
    b = _burst(burstiness)
    s = _check.scalar_int("seed", seed, lo=0)
    log = request_log.read_lengths(path, tokenizer=tokenizer)
    name = Path(log.path).name
    times = log.arrival_time
    timed = [t for t in times if t is not None]
    if len(timed) < len(times) and request_rate is None and c is None:
        raise ValueError(f"{name}: {len(times) - len(timed)} row(s) without a time: give "
                         "a request rate (or a concurrency) for them")
    t0 = min(timed) if timed else 0.0
    rng = np.random.default_rng(s)
    untimed = bench_arrivals(rng, len(times) - len(timed), rate, b) if len(timed) < len(times) \
        else np.zeros(0)
    out, last, j = [], 0.0, 0
    for n, t in zip(log.lines, times):
        if t is None:
            out.append(last + float(untimed[j]))
            j += 1
        else:
            if t - t0 < (out[-1] if out else 0.0) - 1e-9:
                raise ValueError(f"{log.path}:{n}: time {t} is earlier than the row before "
                                 "(sort the log by arrival)")
            out.append(t - t0)
            last = t - t0
    text = (f"; {log.encoded} text row(s) encoded by the tokenizer in "
            f"{Path(log.tokenizer).parent}"
            if log.tokenizer else "")
    return Workload(log.prompt_len, log.response_len, np.array(out), c, rate, float(b),
                    f"log {name} ({len(log)} requests{text})", log.tokenizer)
