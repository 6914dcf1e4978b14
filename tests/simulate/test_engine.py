"""specnb/simulate/engine.py: vLLM V1's scheduler rules on hand-checked schedules (expected
steps worked out from scheduler.py's rules by hand), its defaults, the policies; and the
fixtures of vLLM's own Scheduler (tests/cases/vllm/0.33.0/scheduler/, make oracle)."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from specnb import serving as S
from specnb import simulate as M

EAGLE3 = S.setup("H100-SXM", "Llama-3.1-8B", "eagle3")
CASES = Path(__file__).resolve().parents[1] / "cases" / "vllm" / "0.33.0" / "scheduler"


def _load(ins, outs, conc=None):
    n = len(ins)
    return M.Workload(np.array(ins), np.array(outs), np.zeros(n), conc)


def _cfg(tokens, seqs=4, blocks=10_000, bs=16):
    return M.EngineConfig(seqs, tokens, blocks, 131072, bs)


def _steps(tr):
    return [s["scheduled"] for s in tr.steps]


def test_chunked_prefill_running_first_then_waiting_within_the_budget():
    tr = M.run(EAGLE3, _load([10, 3], [2, 1]), M.policy("off"), config=_cfg(8), record=True)
    assert _steps(tr) == [[[0, 8, 0]], [[0, 2, 0], [1, 3, 0]], [[0, 1, 0]]]
    assert [s["finished"] for s in tr.steps] == [[], [1], [0]]
    assert tr.first_token_s[1] == tr.first_token_s[0] < tr.finish_s[0]
    # per step: prompt tokens (request 0's last chunk and request 1's prompt in step 2)
    # and tokens sampled
    assert tr.prefill == [8, 5, 0] and tr.generated == [0, 2, 1]


def test_v0_without_chunked_prefill_prefills_alone_then_decodes():
    w = M.Workload(np.array([10, 3]), np.array([3, 2]), np.array([0.0, 1e-9]), None)
    v1 = M.run(EAGLE3, w, M.policy("off"), config=_cfg(100), record=True)
    assert _steps(v1) == [[[0, 10, 0]], [[0, 1, 0], [1, 3, 0]], [[0, 1, 0], [1, 1, 0]]]
    cfg = M.EngineConfig(4, 100, 10_000, 131072, 16, chunked_prefill=False)
    v0 = M.run(EAGLE3, w, M.policy("off"), config=cfg, record=True)
    # vLLM V0's _schedule_default: request 1's prompt runs alone; request 0 waits a step
    assert _steps(v0) == [[[0, 10, 0]], [[1, 3, 0]], [[0, 1, 0], [1, 1, 0]], [[0, 1, 0]]]
    with pytest.raises(ValueError, match="request 0: its 10-token prompt exceeds"):
        M.run(EAGLE3, w, M.policy("off"), config=M.EngineConfig(4, 8, 10_000, 131072, 16,
                                                                 chunked_prefill=False))


def test_verify_tokens_and_rollback_of_rejected_drafts():
    acc = M.acceptance(tau=2.0, gamma=2)
    tr = M.run(EAGLE3, _load([4], [5]), M.policy("static", k=2), acc, config=_cfg(100),
               record=True, accepted={0: [2, 0]})
    assert _steps(tr) == [[[0, 4, 0]], [[0, 3, 2]], [[0, 3, 2]]]
    assert (tr.num_drafts, tr.num_draft_tokens, tr.num_accepted_tokens) == (2, 4, 2)
    assert len(tr.chunks[0]) == 3  # one streamed chunk per step: 1, 3, 1 tokens
    assert tr.prefill == [4, 0, 0] and tr.generated == [1, 3, 1]  # verify tokens: no prefill


def test_preemption_by_recompute_and_the_full_sequence_admission_rule():
    # 5 blocks: 4 usable beside vLLM's null block
    tr = M.run(EAGLE3, _load([7, 4], [4, 4]), M.policy("off"),
               config=_cfg(100, blocks=5, bs=4), record=True)
    assert _steps(tr) == [[[0, 7, 0], [1, 4, 0]], [[0, 1, 0], [1, 1, 0]], [[0, 1, 0]],
                          [[0, 1, 0]], [[1, 6, 0]], [[1, 1, 0]]]
    assert [s["preempted"] for s in tr.steps] == [[], [], [1], [], [], []]
    assert tr.num_preemptions == 1


def test_closed_loop_sends_the_next_request_when_one_finishes():
    tr = M.run(EAGLE3, _load([5, 5, 5], [2, 2, 2], conc=1), M.policy("off"), config=_cfg(64))
    assert tr.send_s[0] == 0 and tr.send_s[1] == tr.finish_s[0] and tr.send_s[2] == tr.finish_s[1]


def test_vllm_defaults_by_gpu_and_usage():
    assert M.default_batch_limits("H100-SXM") == (8192, 1024)
    assert M.default_batch_limits("H100-SXM", "llm") == (16384, 1024)
    assert M.default_batch_limits("A100-SXM-80GB") == (2048, 256)
    assert M.default_batch_limits("L40S") == (2048, 256)
    cfg = M.engine_config(EAGLE3)
    assert cfg.num_gpu_blocks == S.memory_cap(EAGLE3, 16)["max_batch"]


def test_policies_follow_vllms_lookup():
    p = M.policy("schedule", schedule=[[1, 4, 3], [5, 8, 1], [9, 16, 0]], max_num_seqs=16)
    assert [p.k_at(b) for b in (1, 4, 5, 8, 9, 16)] == [3, 3, 1, 1, 0, 0] and p.k == 3
    d = M.policy("disable_by_batch_size", k=2, max_batch=3, max_num_seqs=8)
    assert [d.k_at(b) for b in (1, 3, 4, 8)] == [2, 2, 0, 0]
    with pytest.raises(ValueError, match="policy"):
        M.policy("sometimes")


def test_the_dynamic_k_is_the_lookup_at_this_steps_batch():
    acc = M.acceptance(alpha=0.0)
    pol = M.policy("schedule", schedule=[[1, 1, 3], [2, 4, 1]], max_num_seqs=4)
    tr = M.run(EAGLE3, _load([4, 4], [3, 3]), pol, acc, config=_cfg(100), record=True)
    assert [s["k"] for s in tr.steps][0] == 1  # two requests in the first step
    assert _steps(tr)[1] == [[0, 2, 1], [1, 2, 1]]


def test_bad_input_names_what_is_wrong():
    acc = M.acceptance(tau=2.0, gamma=3)
    with pytest.raises(ValueError, match="max_num_batched_tokens 3 is below one request's "
                                         "verify step"):
        M.run(EAGLE3, _load([4], [2]), M.policy("static", k=3), acc, config=_cfg(3))
    with pytest.raises(ValueError, match="request 0: .* KV blocks"):
        M.run(EAGLE3, _load([400], [2]), M.policy("off"), config=_cfg(64, blocks=4, bs=16))
    with pytest.raises(ValueError, match="acceptance_rates has 2 rate"):
        M.run(EAGLE3, _load([4], [2]), M.policy("static", k=3),
              M.acceptance(acceptance_rates=[0.8, 0.6]), config=_cfg(64))


def _fixtures():
    return sorted(CASES.glob("*.jsonl")) if CASES.is_dir() else []


@pytest.mark.skipif(not _fixtures(), reason="no scheduler fixtures (make oracle)")
@pytest.mark.parametrize("path", _fixtures(), ids=lambda p: p.stem)
def test_vllms_own_scheduler_fixture_step_for_step(path):
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    head, steps = lines[0], lines[1:]
    st = S.setup("H100-SXM", "Llama-3.1-8B", head["draft"])
    w = _load(head["input_len"], head["output_len"])
    cfg = M.EngineConfig(head["max_num_seqs"], head["max_num_batched_tokens"],
                         head["num_gpu_blocks"], head["max_model_len"], head["block_size"])
    pol = (M.policy("off") if not head["k"] else
           M.policy("schedule", schedule=head["schedule"], max_num_seqs=head["max_num_seqs"])
           if head.get("schedule") else M.policy("static", k=head["k"]))
    accepted = {int(r): v for r, v in head["accepted"].items()}
    drafts = {int(r): v for r, v in head.get("drafts", {}).items()} or None
    tr = M.run(st, w, pol, None, config=cfg, record=True, accepted=accepted, drafts=drafts)
    assert len(tr.steps) == len(steps)
    for i, (mine, theirs) in enumerate(zip(tr.steps, steps)):
        assert mine["scheduled"] == theirs["scheduled"], f"step {i + 1}"
        assert mine["preempted"] == theirs["preempted"], f"step {i + 1}"
        assert mine["finished"] == theirs["finished"], f"step {i + 1}"
    assert not np.isnan(tr.finish_s).any()


def test_a_request_sent_while_a_slot_is_free_starts_its_clock_at_its_arrival():
    # vllm bench serve: --max-concurrency is a semaphore; a request that finds a slot free is
    # sent at its arrival, so a cap that never binds leaves TTFT as without it
    ins, outs = [50, 50, 50], [4, 4, 4]
    base = _load(ins, outs)
    arr = np.array([0.0, 0.0013, 0.0291])
    free = M.Workload(base.input_len, base.output_len, arr, None, 1.0, 1.0, "t")
    capped = M.Workload(base.input_len, base.output_len, arr, 100, 1.0, 1.0, "t")
    a = M.run(EAGLE3, free, M.policy("off"), config=_cfg(64))
    b = M.run(EAGLE3, capped, M.policy("off"), config=_cfg(64))
    assert list(b.send_s) == list(arr) == list(a.send_s)
    assert list(b.first_token_s) == list(a.first_token_s)


def test_min_request_steps_is_every_draft_accepted_per_policy():
    pols = [M.policy("off"), M.policy("static", k=3)]
    assert M.min_request_steps([40, 41], pols) == (40 + 41) + (10 + 11)
    with pytest.raises(ValueError, match="output_lens"):
        M.min_request_steps([0], pols)
    with pytest.raises(ValueError, match="Policy"):
        M.min_request_steps([1], ["off"])


def test_v0_verify_steps_beyond_the_graph_cap_pay_the_eager_launch_time():
    """vLLM V0's batch expansion (spec_decode/batch_expansion.py) scores k + 1 one-token
    sequences per proposing sequence: past 256 of them the step runs without a CUDA graph and
    takes at least layers x eager_layer_us (the vllm-v0 profile); a plain step of the same
    batch stays graphed."""
    import dataclasses

    from specnb.serving import engines as P

    v0 = P.profile("vllm-v0")
    st = S.setup("H100-SXM", "Llama-3.2-1B", "ngram", engine="vllm-v0")
    bare = S.setup("H100-SXM", "Llama-3.2-1B", "ngram", engine=dataclasses.replace(v0, step={}))
    cap, us = v0.engine_step().graph_cap_tokens, v0.engine_step().eager_layer_us
    floor = st.target.n_layers * us * 1e-3
    for b, q in ((60, 5), (50, 5), (60, 1)):
        c, qq, k = np.full(b, 1000.0), np.full(b, float(q)), np.full(b, 4.0 * (q > 1))
        got = S.MixedStep(st).ms(c, qq, k, qq)["target_ms"]
        plain = S.MixedStep(bare).ms(c, qq, k, qq)["target_ms"]
        want = max(plain, floor) if b * q > cap else plain
        assert round(got, 3) == round(want, 3)
    assert S.MixedStep(bare).ms(np.full(60, 1000.0), np.full(60, 5.0), np.full(60, 4.0),
                                np.full(60, 5.0))["target_ms"] < floor  # the floor binds


def test_engine_config_caps_the_default_max_num_seqs_at_the_budget_as_vllm():
    """EngineArgs._set_default_max_num_seqs_and_batched_tokens_args: without max_num_seqs it
    is min(default, max_num_batched_tokens); given both, SchedulerConfig refuses a budget
    below max_num_seqs."""
    tok, seqs = M.default_batch_limits(EAGLE3.gpu)
    assert M.engine_config(EAGLE3).max_num_seqs == min(seqs, tok)
    assert M.engine_config(EAGLE3, max_num_batched_tokens=10).max_num_seqs == min(seqs, 10)
    assert M.engine_config(EAGLE3, max_num_batched_tokens=10, max_num_seqs=10).max_num_seqs == 10
    with pytest.raises(ValueError, match="max_num_batched_tokens 10 is below max_num_seqs 11"):
        M.engine_config(EAGLE3, max_num_batched_tokens=10, max_num_seqs=11)
    with pytest.raises(ValueError, match=f"max_num_batched_tokens {tok} is below max_num_seqs"):
        M.engine_config(EAGLE3, max_num_seqs=tok + 1)


def _ngram_ratio(gpu, prompt, conc):
    # engines.md section 4's shape: Llama-3.1-8B, prompts of thousands of tokens, 256 output
    # tokens, n-gram with proposal rate 0.17 (measured 0.13-0.21), tau 2.0 per draft at k = 4
    st = S.setup(gpu, "Llama-3.1-8B", "ngram", proposal_rate=0.17)
    w = M.synthetic(max(2 * conc, 8), prompt, 256, concurrency=conc)
    sim = M.simulate(st, w, [M.policy("off"), M.policy("static", k=4)],
                     config=M.engine_config(st, host=M.host_cost(st, runner="v1")),
                     acceptance=M.acceptance(tau=2.0, gamma=4, proposal_rate=0.17))
    return sim.results["k=4"]["output_throughput"] / sim.results["off"]["output_throughput"]


def test_ngram_pays_alone_and_loses_under_load_with_long_prompts_on_flash_attention_2():
    # issue 22's held-back finding: on an A40 (FlashAttention-2, whose decode path needs every
    # query to be one token) n-gram pays at concurrency 1 and loses at tens of requests, the
    # more the longer the prompt; on an H100 (FA3: split-KV and packed GQA at any query
    # length) the same load is about even
    a40 = {(n, c): _ngram_ratio("A40", n, c) for n in (2000, 8000) for c in (1, 32)}
    assert a40[(2000, 1)] > 1.0 and a40[(8000, 1)] > 1.0
    assert a40[(2000, 32)] < 1.0 and a40[(8000, 32)] < 1.0
    assert a40[(8000, 1)] < a40[(2000, 1)]
    assert _ngram_ratio("H100-SXM", 2000, 32) == pytest.approx(1.0, abs=0.02)
    assert a40[(2000, 32)] < 0.9


@pytest.mark.parametrize("model, mml, off, on", [
    # vLLM v0.6.3 arg_utils.create_engine_config: chunked prefill on by default above 32K,
    # unless a speculative model is set; its budget 512, else max(max_model_len, 2048)
    ("Llama-3.1-70B", None, (True, 512), (False, 131072)),
    ("Llama-3.1-70B", 8192, (False, 8192), (False, 8192)),
    ("Llama-3.1-70B", 32768, (False, 32768), (False, 32768)),   # "> 32K": not at 32,768
    ("Llama-2-7B", None, (False, 4096), (False, 4096)),
])
def test_v0_defaults_chunk_the_plain_run_of_a_long_context_model_only(model, mml, off, on):
    st = S.setup("H100-SXM", model, "ngram", gpus=4 if "70B" in model else 1)
    for speculative, (chunked, budget) in ((False, off), (True, on)):
        cfg = M.v0_engine_config(st, speculative=speculative, max_model_len=mml)
        assert (cfg.chunked_prefill, cfg.max_num_batched_tokens, cfg.max_num_seqs) \
            == (chunked, budget, 256)
        assert cfg.max_model_len == (mml or st.target.max_position_embeddings)


def test_v0_refuses_a_budget_below_max_model_len_without_chunked_prefill():
    """T6-W11: v0.6.3 SchedulerConfig._verify_args raises when max_num_batched_tokens <
    max_model_len and chunked prefill is off (every speculating run: create_engine_config)."""
    from specnb._check import ParamValueError

    st = S.setup("H100-SXM", "Llama-3.1-8B", "ngram")
    with pytest.raises(ParamValueError, match="max_num_batched_tokens 4096 is below "
                       "max_model_len 131072") as exc:
        M.v0_engine_config(st, speculative=True, max_num_batched_tokens=4096)
    assert exc.value.param == "max_num_batched_tokens"
    off = M.v0_engine_config(st, speculative=False, max_num_batched_tokens=4096)  # chunks
    assert off.chunked_prefill and off.max_num_batched_tokens == 4096
    on = M.v0_engine_config(st, speculative=True, max_num_batched_tokens=131072)  # = mml: ok
    assert on.max_num_batched_tokens == 131072
    short = S.setup("H100-SXM", "Llama-2-7B", "ngram")  # 4,096 positions: no chunking at all
    with pytest.raises(ParamValueError, match="below max_model_len 4096"):
        M.v0_engine_config(short, speculative=False, max_num_batched_tokens=2048)


def test_v0_defaults_make_ngram_lose_at_the_blogs_high_load():
    # the vLLM blog's n-gram series (V0, Llama-3.1-70B on 4x H100, 837 + 323 tokens): under
    # V0's defaults the plain run chunks its prefills and the n-gram run does not, so at QPS 8
    # the n-gram run's E2EL is the longer; read with both runs prefill-first it still pays
    st = S.setup("H100-SXM", "Llama-3.1-70B", "ngram", gpus=4, engine="vllm-v0")
    w = M.synthetic(200, 837, 323, request_rate=8.0, seed=1)
    acc = M.acceptance(tau=3.39, gamma=4)

    def e2el(policy, cfg):
        res = M.simulate(st, w, [policy], acceptance=acc, config=cfg).results
        return next(iter(res.values()))["mean_e2el_ms"]

    off, on = M.policy("off"), M.policy("static", k=4)
    v0 = [M.v0_engine_config(st, speculative=s) for s in (False, True)]
    assert e2el(off, v0[0]) / e2el(on, v0[1]) < 1.0
    short = [M.v0_engine_config(st, speculative=s, max_model_len=8192) for s in (False, True)]
    assert e2el(off, short[0]) / e2el(on, short[1]) > 1.0
