"""A simulated run as a ``vllm bench serve --save-result`` file (``vllm/benchmarks/serve.py``
@ v0.33.0: ``calculate_metrics`` and ``benchmark``'s ``result``), so that ``specnb bench``
and ``specnb plan --calibrate-bench`` read simulated and real runs alike.

:func:`bench_result`, :data:`PERCENTILES`.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["bench_result", "PERCENTILES", "METRICS"]

#: ``--metric-percentiles 50,90,99`` (vLLM's default is 99 alone).
PERCENTILES = (50, 90, 99)
#: ``--percentile-metrics ttft,tpot,itl,e2el`` (vLLM's default leaves e2el out).
METRICS = ("ttft", "tpot", "itl", "e2el")


def _stats(result: dict, name: str, values_s) -> None:
    v = np.asarray(values_s if len(values_s) else [0.0], dtype=float) * 1000.0
    result[f"mean_{name}_ms"] = float(np.mean(v))
    result[f"median_{name}_ms"] = float(np.median(v))
    result[f"std_{name}_ms"] = float(np.std(v))
    for p in PERCENTILES:
        result[f"p{p}_{name}_ms"] = float(np.percentile(v, p))


def bench_result(trace, workload, *, label: str, model_id: str, gamma: int = 0) -> dict:
    """The bench-format dict of a :class:`specnb.simulate.engine.Trace`.

    As vLLM computes them: ``duration`` from the first send to the last finish;
    ``request_throughput = completed / duration``, ``output_throughput = output tokens /
    duration``, ``total_token_throughput = (input + output tokens) / duration``; per request
    TTFT = first token - send, TPOT = (E2EL - TTFT) / (output tokens - 1) (requests of one
    output token have none), ITL = the gaps between streamed chunks (one chunk per engine
    step that produced tokens: with speculation a chunk holds 1 + accepted tokens), E2EL =
    finish - send; mean, median, std and p50 / p90 / p99 of each in ms. With drafts, the
    ``spec_decode_*`` keys from the run's counters: acceptance rate (percent), acceptance
    length (1 + accepted / drafts), drafts, draft and accepted tokens, per-position rates
    (accepted at position i / drafts, ``gamma`` of them). Extra keys: ``backend``
    ``"specnb-simulate"``, ``num_steps``, ``num_preemptions``, ``mean_batch``.
    """
    send, first, fin = trace.send_s, trace.first_token_s, trace.finish_s
    outs = np.asarray(workload.output_len, dtype=float)
    ins = np.asarray(workload.input_len, dtype=float)
    start = float(np.min(send))
    dur = float(np.max(fin) - start)
    dur = dur if dur > 0 else math.nan
    ttft = first - send
    e2el = fin - send
    many = outs > 1
    tpot = (e2el[many] - ttft[many]) / (outs[many] - 1)
    itls = [np.diff(np.asarray(c)).tolist() for c in trace.chunks]
    flat = [x for it in itls for x in it]
    r = {"backend": "specnb-simulate", "endpoint_type": "specnb-simulate", "label": label,
         "model_id": model_id, "num_prompts": int(workload.num_prompts),
         "request_rate": "inf" if math.isinf(workload.request_rate) else workload.request_rate,
         "burstiness": workload.burstiness, "max_concurrency": workload.max_concurrency,
         "duration": dur, "completed": int(workload.num_prompts), "failed": 0,
         "total_input_tokens": int(ins.sum()), "total_output_tokens": int(outs.sum()),
         "request_throughput": workload.num_prompts / dur,
         "request_goodput": None,
         "output_throughput": float(outs.sum()) / dur,
         "total_token_throughput": float(ins.sum() + outs.sum()) / dur,
         "input_lens": ins.astype(int).tolist(), "output_lens": outs.astype(int).tolist(),
         "ttfts": ttft.tolist(), "itls": itls,
         "num_steps": len(trace.step_ms), "num_preemptions": int(trace.num_preemptions),
         "mean_batch": float(np.mean(trace.batch)) if trace.batch else 0.0}
    if trace.num_drafts:
        d = trace.num_drafts
        r["spec_decode_acceptance_rate"] = 100.0 * trace.num_accepted_tokens / max(
            trace.num_draft_tokens, 1)
        r["spec_decode_acceptance_length"] = 1.0 + trace.num_accepted_tokens / d
        r["spec_decode_num_drafts"] = int(d)
        r["spec_decode_draft_tokens"] = int(trace.num_draft_tokens)
        r["spec_decode_accepted_tokens"] = int(trace.num_accepted_tokens)
        g = gamma or trace.k
        r["spec_decode_per_position_acceptance_rates"] = [
            trace.accepted_per_pos[i] / d for i in range(g)]
    _stats(r, "ttft", ttft)
    _stats(r, "tpot", tpot)
    _stats(r, "itl", flat)
    _stats(r, "e2el", e2el)
    return r
