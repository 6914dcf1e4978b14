"""Time vLLM's own V1 ``Scheduler`` on this CPU: the host time of ``schedule()`` +
``update_from_output()`` per engine step in steady decode, by batch, prompt length and
speculation (n-gram configured, k = 4, drafts on every request), the part of a step's host
work that async scheduling overlaps and that a speculating n-gram run pays in series
(``specnb/simulate/host.py``). The model runner (input preparation, sampling, the n-gram
scan) and the API server's output processing are not included: there is no model on the CPU.

Built as ``oracle/drive_scheduler.py`` builds the scheduler (stand-in target, stand-in KV
cache). MEASURED on whatever host runs it: a shared VM under load gives an upper bound.

Usage: ``.venv-vllm-0.33.0/bin/python oracle/time_scheduler_host.py``; prints one line per
(batch, prompt, method): mean us per step and per scheduled request.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import drive_scheduler as D  # noqa: E402


def time_case(paths, batch: int, prompt: int, method: str | None, steps: int = 60) -> float:
    from vllm.sampling_params import SamplingParams
    from vllm.v1.outputs import DraftTokenIds, ModelRunnerOutput
    from vllm.v1.request import Request

    k = 4 if method else 0
    D.MAX_MODEL_LEN = prompt + 512
    case = dict(method=method, k=k, max_num_seqs=batch,
                max_num_batched_tokens=max(2048, batch * (1 + k)),
                num_blocks=batch * ((prompt + 400) // D.BLOCK_SIZE + 2))
    sched = D._scheduler(paths, case)
    for i in range(batch):
        sched.add_request(Request(request_id=str(i), prompt_token_ids=[7] * prompt,
                                  sampling_params=SamplingParams(max_tokens=10_000,
                                                                 ignore_eos=True),
                                  pooling_params=None, arrival_time=float(i)))
    timed = []
    while len(timed) < steps:
        t0 = time.perf_counter()
        out = sched.schedule()
        order = list(out.num_scheduled_tokens)
        sampled = []
        decoding = True
        for rid in order:
            req = sched.requests[rid]
            if req.num_computed_tokens < req.num_tokens:
                sampled.append([])
                decoding = False
                continue
            sampled.append([11] * (1 + (1 if out.scheduled_spec_decode_tokens.get(rid) else 0)))
        mro = ModelRunnerOutput(req_ids=order, req_id_to_index={r: j for j, r in
                                                                enumerate(order)},
                                sampled_token_ids=sampled)
        sched.update_from_output(out, mro)
        if k:
            sched.update_draft_token_ids(DraftTokenIds(order, [[13] * k for _ in order]))
        dt = time.perf_counter() - t0
        if decoding and len(order) == batch:
            timed.append(dt)
    timed.sort()
    return 1e6 * sum(timed[: len(timed) // 2]) / (len(timed) // 2)  # lower half: less noise


def main() -> int:
    import os

    os.environ["VLLM_ALLOW_LONG_MAX_MODEL_LEN"] = "1"  # the stand-in's 4096 positions
    with tempfile.TemporaryDirectory() as tmp:
        paths = D._env(Path(tmp))
        for prompt in (2000, 8000):
            for batch in (8, 32, 64):
                for method in (None, "ngram"):
                    us = time_case(paths, batch, prompt, method)
                    print(f"batch {batch:3d} prompt {prompt:5d} {method or 'off':5s}: "
                          f"{us:7.0f} us per step, {us / batch:5.1f} us per request")
    return 0


if __name__ == "__main__":
    sys.exit(main())
