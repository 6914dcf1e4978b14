"""The load: requests with arrival times and prompt / output lengths, as ``vllm bench serve``
sends them (``vllm/benchmarks/serve.py`` and ``vllm/benchmarks/datasets/utils.py`` @ v0.33.0),
or read from a request log.

:class:`Workload`, :func:`synthetic`, :func:`from_log`, :func:`bench_lengths`,
:func:`bench_arrivals`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import _check, limits, request_log

__all__ = ["Workload", "synthetic", "from_log", "bench_lengths", "bench_arrivals",
           "LOG_INPUT_KEYS", "LOG_OUTPUT_KEYS", "LOG_TIME_KEYS"]

#: Keys a request-log row may carry its prompt length under (tokens), first found wins; an
#: OpenAI ``usage`` object's ``prompt_tokens`` too.
LOG_INPUT_KEYS = ("input_len", "prompt_len", "prompt_tokens", "num_prompt_tokens")
#: ... its output length (tokens generated).
LOG_OUTPUT_KEYS = ("output_len", "response_len", "completion_tokens", "num_output_tokens")
#: ... its arrival time (seconds; relative or absolute, shifted so the first is 0).
LOG_TIME_KEYS = ("timestamp", "arrival_time", "arrival_s", "time")


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
    """

    input_len: np.ndarray
    output_len: np.ndarray
    arrival_s: np.ndarray
    max_concurrency: int | None = None
    request_rate: float = math.inf
    burstiness: float = 1.0
    source: str = ""

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


def _first(row: dict, keys):
    for k in keys:
        if row.get(k) is not None:
            return row[k]
    return None


def from_log(path, *, request_rate=None, burstiness: float = 1.0, concurrency=None,
             seed: int = 0) -> Workload:
    """Requests from a JSON-lines log, one request a line: the prompt and output lengths in
    tokens (:data:`LOG_INPUT_KEYS`, :data:`LOG_OUTPUT_KEYS`, or an OpenAI ``usage`` object)
    and, optionally, the arrival time (:data:`LOG_TIME_KEYS`, seconds; shifted so that the
    first is 0). Rows without a time arrive at ``request_rate`` (as :func:`bench_arrivals`)
    after the last timed row, or all at once in a closed loop of ``concurrency``.

    Raises
    ------
    ValueError
        a file that is not UTF-8 text; a row that is not a JSON object, or without a length,
        or with a length < 1 or a time that is not a number (naming the row, 1-based); an
        empty log; untimed rows with
        neither a rate nor a concurrency; times that go backwards.
    FileNotFoundError
        no such file.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"request log {str(p)!r} "
                                + ("is a folder, not a JSON-lines file" if p.is_dir()
                                   else "does not exist"))
    rate = _rate(request_rate)
    c = None if concurrency is None else _check.scalar_int("concurrency", concurrency, lo=1)
    b = _burst(burstiness)
    ins, outs, times = [], [], []
    for n, line in request_log.jsonl_lines(p):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{p.name} row {n}: not JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise ValueError(f"{p.name} row {n}: not a JSON object")
        usage = row.get("usage") if isinstance(row.get("usage"), dict) else {}
        got = []
        for what, keys, alt in (("prompt", LOG_INPUT_KEYS, "prompt_tokens"),
                                ("output", LOG_OUTPUT_KEYS, "completion_tokens")):
            v = _first(row, keys)
            v = usage.get(alt) if v is None else v
            if v is None:
                raise ValueError(f"{p.name} row {n}: no {what} length (one of "
                                 f"{', '.join(keys)}, or usage.{alt}); the simulator needs "
                                 "token counts")
            if (isinstance(v, bool) or not isinstance(v, (int, float)) or not _check.finite(v)
                    or v != int(v) or not 1 <= v <= _check.MAX_EXACT_INT):
                raise ValueError(f"{p.name} row {n}: {what} length must be an integer in "
                                 f"[1, 2**53], got {str(v)[:40]}")
            got.append(int(v))
        t = _first(row, LOG_TIME_KEYS)
        if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float))
                              or not _check.finite(t)):
            raise ValueError(f"{p.name} row {n}: time must be a number of seconds, got "
                             f"{str(t)[:40]}")
        ins.append(got[0])
        outs.append(got[1])
        times.append(None if t is None else float(t))
    if not ins:
        raise ValueError(f"request log {p.name} has no rows")
    timed = [t for t in times if t is not None]
    if len(timed) < len(times) and request_rate is None and c is None:
        raise ValueError(f"{p.name}: {len(times) - len(timed)} row(s) without a time: give "
                         "a request rate (or a concurrency) for them")
    t0 = min(timed) if timed else 0.0
    rng = np.random.default_rng(_check.scalar_int("seed", seed, lo=0))
    untimed = bench_arrivals(rng, len(times) - len(timed), rate, b) if len(timed) < len(times) \
        else np.zeros(0)
    out, last, j = [], 0.0, 0
    for n, t in enumerate(times, 1):
        if t is None:
            out.append(last + float(untimed[j]))
            j += 1
        else:
            if t - t0 < (out[-1] if out else 0.0) - 1e-9:
                raise ValueError(f"{p.name} row {n}: time {t} is earlier than the row before "
                                 "(sort the log by arrival)")
            out.append(t - t0)
            last = t - t0
    return Workload(np.array(ins, dtype=np.int64), np.array(outs, dtype=np.int64),
                    np.array(out), c, rate, float(b), f"log {p.name} ({len(ins)} requests)")
