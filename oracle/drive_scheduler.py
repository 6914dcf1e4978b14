"""Drive vLLM's own V1 ``Scheduler`` on the CPU and store what it schedules, step by step
(``tests/cases/vllm/<version>/scheduler/*.jsonl``), for ``specnb.simulate``'s engine to
reproduce (``tests/simulate/test_engine.py``).

The scheduler is built as vLLM's own tests build it (``tests/v1/core/utils.py``
``create_scheduler``): a ``VllmConfig`` of a ``SchedulerConfig``, a ``ModelConfig`` on a
config.json-only stand-in target (``oracle/standins.py``), a ``CacheConfig`` and, with
speculation, a ``SpeculativeConfig`` (ngram, eagle3, draft_model, dflash: a DFlash stand-in config written
here); a stand-in ``KVCacheConfig`` of ``num_blocks`` blocks (one
full-attention group). There is no model: each step's ``ModelRunnerOutput`` is made here,
with 1 + accepted sampled tokens per request that finished its prefill (accepted drawn from a
seeded generator and stored in the fixture, so that the simulator replays the same draws),
and after each step ``update_draft_token_ids`` proposes K draft tokens per request, K as the
GPU model runner takes it (``scheduler_output.num_spec_tokens_to_schedule``: the static
``num_speculative_tokens`` or the per-batch schedule's lookup). What cannot run on the CPU:
the model runner and its proposers (no kernels are needed here: the scheduler is pure
Python); their part, the draft lengths and the sampled tokens, follows
``vllm/v1/worker/gpu_model_runner.py`` (``propose_draft_token_ids``) and
``vllm/v1/sample/rejection_sampler.py`` (1 + accepted tokens, accepted <= drafts).

Fixture lines: the first is the workload and settings (``input_len``, ``output_len``,
``max_num_seqs``, ``max_num_batched_tokens``, ``num_gpu_blocks``, ``block_size``,
``max_model_len``, ``method``, ``draft`` (the specnb draft), ``k``, ``schedule``, ``accepted``
per request in order of its verifications); then one line per step: ``scheduled`` (``[request,
tokens, spec tokens]`` in vLLM's order), ``preempted``, ``finished``, ``k``.

Usage: ``.venv-vllm-0.33.0/bin/python oracle/drive_scheduler.py --out tests/cases/vllm/0.33.0``
(``make oracle-scheduler``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import standins  # noqa: E402

#: The workloads: name -> settings. Lengths are seeded draws; "tight" runs out of KV blocks.
CASES = {
    "off-chunked": dict(method=None, k=0, n=12, input=(40, 300), output=(3, 30),
                        max_num_seqs=6, max_num_batched_tokens=256, num_blocks=400),
    "ngram-k3": dict(method="ngram", k=3, n=12, input=(40, 300), output=(3, 40),
                     max_num_seqs=8, max_num_batched_tokens=200, num_blocks=400, alpha=0.6),
    "eagle3-k4-lookahead": dict(method="eagle3", k=4, n=10, input=(20, 200), output=(5, 40),
                                max_num_seqs=8, max_num_batched_tokens=128, num_blocks=300,
                                alpha=0.7),
    "eagle3-k4-tight": dict(method="eagle3", k=4, n=10, input=(30, 120), output=(20, 60),
                            max_num_seqs=8, max_num_batched_tokens=160, num_blocks=40,
                            alpha=0.7),
    "ngram-k2-preempt": dict(method="ngram", k=2, n=10, input=(30, 120), output=(20, 60),
                             max_num_seqs=8, max_num_batched_tokens=160, num_blocks=40,
                             alpha=0.5),
    "draft-model-k3-slots": dict(method="draft_model", k=3, n=10, input=(20, 200),
                                 output=(5, 40), max_num_seqs=8, max_num_batched_tokens=96,
                                 num_blocks=300, alpha=0.7),
    "dflash-k4-tight": dict(method="dflash", k=4, n=10, input=(30, 120), output=(20, 60),
                            max_num_seqs=8, max_num_batched_tokens=160, num_blocks=40,
                            alpha=0.7),
    "ngram-schedule": dict(method="ngram", k=4, n=12, input=(20, 100), output=(5, 40),
                           max_num_seqs=8, max_num_batched_tokens=256, num_blocks=400,
                           alpha=0.6, schedule=[[1, 2, 4], [3, 5, 2], [6, 8, 0]]),
}
BLOCK_SIZE = 16
MAX_MODEL_LEN = 4096
SEED = 7


#: A config.json-only DFlash drafter for the stand-in llama target (vLLM's
#: ``DFlashDraftModel``: its layers, ``block_size``, ``dflash_config``), written here.
DFLASH_STANDIN = dict(standins._LLAMA, architectures=["DFlashDraftModel"], num_hidden_layers=2,
                      block_size=8, dflash_config={"mask_token_id": 5,
                                                   "target_layer_ids": [0, 1]})


def _env(work: Path) -> dict:
    paths = standins.build(work / "standins")
    d = work / "standins" / "local" / "dflash-llama"
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text(json.dumps(DFLASH_STANDIN, indent=1, sort_keys=True))
    paths["dflash-llama"] = str(d)
    os.environ["HF_HOME"] = str(work / "standins" / "hf")
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    os.environ["VLLM_NO_USAGE_STATS"] = "1"
    return paths


def _scheduler(paths, case):
    import torch
    from vllm.config import (CacheConfig, ModelConfig, ParallelConfig, SchedulerConfig,
                             SpeculativeConfig, VllmConfig)
    from vllm.v1.core.sched.scheduler import Scheduler
    from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec
    from vllm.v1.structured_output import StructuredOutputManager

    sc = SchedulerConfig(max_num_seqs=case["max_num_seqs"],
                         max_num_batched_tokens=case["max_num_batched_tokens"],
                         max_model_len=MAX_MODEL_LEN, enable_chunked_prefill=True,
                         async_scheduling=False, is_encoder_decoder=False)
    mc = ModelConfig(model=paths["target-llama"], dtype="float16", seed=42,
                     skip_tokenizer_init=True, max_model_len=MAX_MODEL_LEN)
    cc = CacheConfig(block_size=BLOCK_SIZE, gpu_memory_utilization=0.9, cache_dtype="auto",
                     enable_prefix_caching=False)
    spec = None
    if case["method"] == "ngram":
        spec = SpeculativeConfig(method="ngram", num_speculative_tokens=case["k"],
                                 prompt_lookup_min=2, prompt_lookup_max=5)
    elif case["method"] == "eagle3":
        spec = SpeculativeConfig(method="eagle3", model=paths["llama-eagle3-head"],
                                 num_speculative_tokens=case["k"], target_model_config=mc,
                                 target_parallel_config=ParallelConfig())
    elif case["method"] == "dflash":
        spec = SpeculativeConfig(method="dflash", model=paths["dflash-llama"],
                                 num_speculative_tokens=case["k"], target_model_config=mc,
                                 target_parallel_config=ParallelConfig())
    elif case["method"] == "draft_model":
        spec = SpeculativeConfig(method="draft_model", model=paths["draft-llama"],
                                 num_speculative_tokens=case["k"], target_model_config=mc,
                                 target_parallel_config=ParallelConfig())
    if spec is not None and case.get("schedule"):
        spec.num_speculative_tokens_per_batch_size = case["schedule"]
    vc = VllmConfig(scheduler_config=sc, model_config=mc, cache_config=cc,
                    speculative_config=spec)
    kv = KVCacheConfig(num_blocks=case["num_blocks"], kv_cache_tensors=[],
                       kv_cache_groups=[KVCacheGroupSpec(
                           ["layer"], FullAttentionSpec(block_size=BLOCK_SIZE, num_kv_heads=1,
                                                        head_size=1, dtype=torch.float32))])
    cc.num_gpu_blocks = case["num_blocks"]
    return Scheduler(vllm_config=vc, kv_cache_config=kv,
                     structured_output_manager=StructuredOutputManager(vc),
                     block_size=BLOCK_SIZE, log_stats=True)


def drive(name, case, paths) -> list[dict]:
    import numpy as np
    from vllm.sampling_params import SamplingParams
    from vllm.v1.outputs import DraftTokenIds, ModelRunnerOutput
    from vllm.v1.request import Request

    rng = np.random.default_rng(SEED)
    n = case["n"]
    ins = rng.integers(case["input"][0], case["input"][1] + 1, size=n).tolist()
    outs = rng.integers(case["output"][0], case["output"][1] + 1, size=n).tolist()
    sched = _scheduler(paths, case)
    for i in range(n):
        sp = SamplingParams(max_tokens=outs[i], ignore_eos=True)
        sched.add_request(Request(request_id=str(i), prompt_token_ids=[7] * ins[i],
                                  sampling_params=sp, pooling_params=None, arrival_time=float(i)))
    accepted = {i: [] for i in range(n)}
    steps = []
    alpha = case.get("alpha", 0.0)
    while sched.has_unfinished_requests():
        out = sched.schedule()
        order = list(out.num_scheduled_tokens)
        scheduled, sampled = [], []
        for rid in order:
            req = sched.requests[rid]
            spec = out.scheduled_spec_decode_tokens.get(rid, [])
            scheduled.append([int(rid), int(out.num_scheduled_tokens[rid]), len(spec)])
            if req.num_computed_tokens < req.num_tokens:  # mid-prefill: no token sampled
                sampled.append([])
                continue
            a = 0
            while a < len(spec) and rng.random() < alpha:
                a += 1
            if spec:
                accepted[int(rid)].append(a)
            sampled.append([11] * (1 + a))
        mro = ModelRunnerOutput(req_ids=order, req_id_to_index={r: j for j, r in
                                                                enumerate(order)},
                                sampled_token_ids=sampled)
        sched.update_from_output(out, mro)
        finished = sorted(int(r) for r in order
                          if r not in sched.requests or sched.requests[r].is_finished())
        k = int(out.num_spec_tokens_to_schedule) if case["k"] else 0
        if k:
            live = [r for r in order if r in sched.requests
                    and not sched.requests[r].is_finished()]
            sched.update_draft_token_ids(DraftTokenIds(live, [[13] * k for _ in live]))
        steps.append({"scheduled": scheduled,
                      "preempted": sorted(int(r) for r in (out.preempted_req_ids or ())),
                      "finished": finished, "k": k})
        if len(steps) > 20000:
            raise RuntimeError(f"{name}: the scheduler does not drain")
    import vllm

    head = {"case": name, "vllm": vllm.__version__, "input_len": ins, "output_len": outs,
            "max_num_seqs": case["max_num_seqs"],
            "max_num_batched_tokens": case["max_num_batched_tokens"],
            "num_gpu_blocks": case["num_blocks"], "block_size": BLOCK_SIZE,
            "max_model_len": MAX_MODEL_LEN, "method": case["method"],
            "draft": {"ngram": "ngram", "eagle3": "eagle3", "draft_model": "Llama-3.2-1B",
                      "dflash": "dflash",
                      None: "ngram"}[case["method"]],
            "k": case["k"], "schedule": case.get("schedule"),
            "accepted": {str(i): v for i, v in accepted.items()}}
    return [head] + steps


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="tests/cases/vllm/<version>")
    ap.add_argument("--only", nargs="*", help="case names")
    args = ap.parse_args(argv)
    out = Path(args.out) / "scheduler"
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        paths = _env(Path(tmp))
        for name, case in CASES.items():
            if args.only and name not in args.only:
                continue
            lines = drive(name, case, paths)
            (out / f"{name}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
            print(f"{name}: {len(lines) - 1} steps, "
                  f"{sum(len(s['preempted']) for s in lines[1:])} preemptions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
