"""Fifth trial T5-W1, T5-W2, T5-W5, T5-C2: the serve line ``plan`` / ``simulate`` print loads
the weights the plan assumed and starts on the GPU planned for, and ``config check --serve
--gpu`` reads that line as vLLM would (weight dtype, vLLM V1's start-up KV check)."""

from __future__ import annotations

import json
import re
import shlex

import pytest

from specnb import serving as S
from specnb.cli import main

NGRAM = ('{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 2, '
         '"prompt_lookup_max": 5}')


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def plan_json(capsys, *argv):
    code, out, err = run(capsys, "plan", *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def check(capsys, line, gpu):
    code, out, err = run(capsys, "config", "check", "--serve", line, "--gpu", gpu, "--json")
    assert code in (0, 1), err
    return code, {f["code"]: f for f in json.loads(out)["findings"]}


def words(line):
    return shlex.split(line)


# ------------------------------------------------------------------ T5-W1: weight dtype
def test_plan_fp8_on_a_bf16_checkpoint_serves_with_quantization_fp8(capsys):
    res = plan_json(capsys, "--gpu", "H100-SXM", "--model", "Llama-3.1-70B", "--dtype", "fp8",
                    "--draft", "ngram", "--context", "4096", "--batch", "1", "4", "--gamma",
                    "3", "--alpha", "0.5")
    w = words(res["serve"])
    assert w[2] == "meta-llama/Llama-3.1-70B"
    assert w[w.index("--quantization") + 1] == "fp8"  # vLLM 0.33 QuantizationMethods
    assert "fp8-online-quantization" in res["note_codes"]
    # the plan's sequences: (0.92 x 79.11 GiB - 71.6 GB fp8 weights, the embedding and LM
    # head in bf16) / (4096 x 327,680 B) (T7-02, T7-06)
    st = S.setup("H100-SXM", "Llama-3.1-70B", "ngram", dtype="fp8")
    a = st.target
    w = (a.params - 2 * a.embedding_params) + 4 * a.embedding_params
    by_hand = int((0.92 * st.gpu.total_memory_bytes - w) // (4096 * 327680))
    assert res["max_num_seqs"] == int(S.max_batch_in_memory(st, 4096)) == min(by_hand, 4)


def test_plan_int4_names_a_checkpoint_placeholder_not_the_bf16_one(capsys):
    res = plan_json(capsys, "--gpu", "H100-SXM", "--model", "Llama-3.1-70B", "--dtype", "int4",
                    "--draft", "ngram", "--context", "4096", "--batch", "1", "4", "--gamma",
                    "3", "--alpha", "0.5")
    w = words(res["serve"])
    assert w[2] == "<Llama-3.1-70B-int4-checkpoint>" and "--quantization" not in w
    i = res["note_codes"].index("quantized-checkpoint-placeholder")
    assert "<Llama-3.1-70B-int4-checkpoint>" in res["notes"][i]


def test_config_check_reads_plans_own_target_placeholder_as_the_model_and_dtype(capsys):
    """T6-C8: plan's int4 line pasted into config check is checked as Llama-3.1-70B in int4,
    with a warning that the placeholder must be replaced (as the draft's placeholder gets)."""
    res = plan_json(capsys, "--gpu", "L40S", "--gpus", "2", "--model", "Llama-3.1-70B",
                    "--dtype", "int4", "--draft", "ngram", "--context", "4000", "--batch", "1",
                    "8", "--gamma", "2", "--alpha", "0.6")
    code, found = check(capsys, res["serve"], "L40S")
    assert code == 0 and found["target-placeholder"]["severity"] == "warning"
    assert "memory-not-checked" not in found
    assert "int4 weights" in found["verify-memory-cap"]["message"]


def test_plan_fp8_on_deepseek_v3_needs_no_flag_its_checkpoint_is_fp8(capsys):
    assert S.architecture("DeepSeek-V3").checkpoint_dtype == "fp8"
    res = plan_json(capsys, "--gpu", "H200", "--gpus", "8", "--model", "DeepSeek-V3", "--dtype",
                    "fp8", "--draft", "mtp", "--context", "4000", "--batch", "1", "8",
                    "--gamma", "1", "--alpha", "0.8")
    w = words(res["serve"])
    assert w[2] == "deepseek-ai/DeepSeek-V3" and "--quantization" not in w
    assert not {"fp8-online-quantization", "quantized-checkpoint-placeholder"} \
        & set(res["note_codes"])


def test_simulate_fp8_serve_line_quantizes_too(capsys):
    code, out, err = run(capsys, "simulate", "--gpu", "H100-SXM", "--model", "Llama-3.1-70B",
                         "--dtype", "fp8", "--draft", "eagle3", "--gamma", "3", "--tau", "2.6",
                         "--input-len", "1000", "--output-len", "64", "--num-prompts", "8",
                         "--concurrency", "4", "--json")
    assert code == 0, err
    res = json.loads(out)
    w = words(res["serve"])
    assert w[w.index("--quantization") + 1] == "fp8" and res["setup"]["dtype"] == "fp8"
    assert "fp8-online-quantization" in res["serve_note_codes"]
    # 70.55 GB of fp8 weights on 80 GB: one 131,072-token sequence does not fit, the longest
    # request (1064 tokens) is the line's --max-model-len (T5-W5)
    assert w[w.index("--max-model-len") + 1] == "1064"


# ------------------------------------------------- T5-W2: config check reads the dtype
def test_config_check_reads_deepseek_v3s_fp8_checkpoint(capsys):
    line = ("vllm serve deepseek-ai/DeepSeek-V3 --speculative-config '{\"method\": \"mtp\", "
            "\"num_speculative_tokens\": 1}' --max-num-seqs 155 --tensor-parallel-size 8")
    code, found = check(capsys, line, "H200")
    st = S.setup("H200", "DeepSeek-V3", "mtp", gpus=8, dtype="fp8")
    cap = int(S.max_batch_in_memory(st, 163840))
    # the trial's hand figure was 3 (45.9 GB per GPU / 11.5 GB per 163,840 tokens) on 141e9 B;
    # T7-06: the device's total, T7-02: the embedding and LM head in bf16
    room = 0.92 * 8 * st.gpu.device_memory_bytes - st.target.weight_bytes("fp8") \
        - st._draft_weight_bytes()
    per_seq = 163840 * 8 * (st.target.kv_bytes_per_token("bf16")
                            + st.draft.arch.kv_bytes_per_token("bf16"))
    assert cap == int(room // per_seq)
    assert code == 0 and found["verify-memory-cap"]["severity"] == "note"
    held = int(re.search(r"would hold (\d+)", found["verify-memory-cap"]["message"])[1])
    assert held == cap and "fp8 weights" in found["verify-memory-cap"]["message"]


def test_config_check_reads_quantization_fp8_as_plan_does(capsys):
    # plan --dtype fp8 -> 2 sequences at 4096; the line it prints, read back, says the same
    res = plan_json(capsys, "--gpu", "H100-SXM", "--model", "Llama-3.1-70B", "--dtype", "fp8",
                    "--draft", "ngram", "--context", "4096", "--batch", "1", "16", "--gamma",
                    "3", "--alpha", "0.5")
    cap = int(S.max_batch_in_memory(S.setup("H100-SXM", "Llama-3.1-70B", "ngram",
                                            dtype="fp8"), 4096))
    assert res["max_num_seqs"] == cap < 16
    code, found = check(capsys, res["serve"], "H100-SXM")
    assert code == 0 and "kv-cache-below-max-model-len" not in found
    assert "verify-memory-cap" not in found  # --max-num-seqs cap fits at --max-model-len 4096
    code, found = check(capsys, res["serve"].replace(f"--max-num-seqs {cap}",
                                                     f"--max-num-seqs {cap + 4}"), "H100-SXM")
    held = int(re.search(r"would hold (\d+)", found["verify-memory-cap"]["message"])[1])
    assert code == 0 and held == cap


def test_config_check_rejects_a_max_model_len_one_sequence_cannot_hold(capsys):
    # T5-W2 addendum: Llama-3.1-8B bf16 on a 4090, no --max-model-len: 131,072 positions need
    # 17.2 GB of KV, 6.0 GB is left; vLLM V1's check_enough_kv_cache_memory refuses to start
    line = f"vllm serve meta-llama/Llama-3.1-8B --speculative-config '{NGRAM}'"
    code, found = check(capsys, line, "RTX-4090")
    f = found["kv-cache-below-max-model-len"]
    assert code == 1 and f["severity"] == "error"
    st = S.setup("RTX-4090", "Llama-3.1-8B", "ngram")
    longest = S.max_model_len_that_fits(st, 131072)
    assert S.max_batch_in_memory(st, longest) == 1 and S.max_batch_in_memory(st, longest + 1) == 0
    assert f"--max-model-len {longest} or less" in f["fix"]
    assert "--max-num-seqs" not in f["fix"] and "verify-memory-cap" not in found
    # the fix it names starts: accepted, no error
    code, found = check(capsys, line + f" --max-model-len {longest}", "RTX-4090")
    assert code == 0 and "kv-cache-below-max-model-len" not in found
    code, _, _ = run(capsys, "config", "check", "--serve", line, "--gpu", "RTX-4090")
    assert code == 1


def test_config_check_a_quantization_it_cannot_size_is_not_checked(capsys):
    line = f"vllm serve meta-llama/Llama-3.1-8B --quantization gptq --speculative-config '{NGRAM}'"
    code, found = check(capsys, line, "RTX-4090")
    assert code == 0 and "memory-not-checked" in found
    assert "kv-cache-below-max-model-len" not in found


# -------------------------------------------------- T5-W5: --max-model-len in the line
def test_plan_line_on_a_small_gpu_sets_max_model_len_and_passes_config_check(capsys):
    res = plan_json(capsys, "--gpu", "RTX-4090", "--model", "Llama-3.1-8B", "--draft", "ngram",
                    "--context", "4000", "--batch", "1", "8", "--gamma", "3", "--alpha", "0.7")
    w = words(res["serve"])
    assert w[w.index("--max-model-len") + 1] == "4000"
    assert "max-model-len-set" in res["note_codes"]
    code, found = check(capsys, res["serve"], "RTX-4090")
    assert code == 0 and "kv-cache-below-max-model-len" not in found
    # on an H100 one 131,072-token sequence fits: no --max-model-len
    res = plan_json(capsys, "--gpu", "H100-SXM", "--model", "Llama-3.1-8B", "--draft", "ngram",
                    "--context", "4000", "--batch", "1", "8", "--gamma", "3", "--alpha", "0.7")
    assert "--max-model-len" not in words(res["serve"])


# ------------------------------------------- T5-C2: contexts above the model's positions
def test_a_context_above_max_positions_gets_no_verdict_but_the_others_do(capsys):
    res = plan_json(capsys, "--gpu", "H100-SXM", "--model", "Llama-3.1-8B", "--draft",
                    "eagle3", "--context", "4000", "200000", "--batch", "1", "8", "--gamma", "3",
                    "--alpha", "0.7")
    assert res["over_max_positions"] == [200000] and res["cannot_serve"] is None
    assert res["paying_batches"]["200000"] == [] and res["paying_batches"]["4000"] == [[1, 8]]
    assert "no-advice-over-max-positions" in res["note_codes"]
    assert {b["gamma"] for b in res["best"] if b["context"] == 200000} == {0}
    assert res["schedule"] == [[1, 8, 3]]
    code, out, _ = run(capsys, "plan", "--gpu", "H100-SXM", "--model", "Llama-3.1-8B",
                       "--draft", "eagle3", "--context", "4000", "200000", "--batch", "1", "8",
                       "--gamma", "3", "--alpha", "0.7")
    block = out.split("context 200000 tokens")[1].split("\n\n")[0].splitlines()
    assert block[-1].startswith("no advice: context 200000")
    assert not any(r.startswith(("pays", "does not pay")) for r in block)


@pytest.mark.parametrize("dtype, ck, args", [
    ("bf16", None, []), ("fp16", None, ["--dtype", "float16"]),
    ("fp8", None, ["--quantization", "fp8"]), ("fp8", "fp8", []), ("int4", "int4", [])])
def test_serve_weight_args_round_trip_through_serve_weight_dtype(dtype, ck, args):
    import dataclasses

    arch = dataclasses.replace(S.architecture("Llama-3.1-8B"), checkpoint_dtype=ck)
    model, got, _ = S.serve_weight_args(arch, dtype)
    assert got == args and model == "meta-llama/Llama-3.1-8B"
    flags = dict(zip(args[::2], args[1::2]))
    assert S.serve_weight_dtype(arch, flags.get("--quantization"),
                                flags.get("--dtype"))[0] == dtype


def test_checkpoint_dtype_is_read_from_a_config_quantization_config():
    assert S.checkpoint_dtype_of({"quantization_config": {"quant_method": "fp8",
                                                          "weight_block_size": [128, 128]}}) \
        == "fp8"
    assert S.checkpoint_dtype_of({"quantization_config": {"quant_method": "gptq", "bits": 8}}) \
        == "int8"
    assert S.checkpoint_dtype_of({"quantization_config": {"quant_method": "awq"}}) == "int4"
    assert S.checkpoint_dtype_of({}) is None
    assert S.checkpoint_dtype_of({"quantization_config": {"quant_method": "compressed-tensors"}}) \
        is None


# ----------------------------------- T5-W4: --max-num-seqs above vLLM's default budget
def test_plan_raises_the_token_budget_to_max_num_seqs_and_config_check_applies_the_default(
        capsys):
    from specnb.simulate.engine import default_batch_limits

    res = plan_json(capsys, "--gpu", "H200", "--model", "Llama-3.1-8B", "--draft", "ngram",
                    "--context", "100", "--batch", "1", "8600", "--gamma", "1", "--alpha", "0.9",
                    "--proposal-rate", "0.5")
    w = words(res["serve"])
    budget = default_batch_limits("H200")[0]
    assert budget == 8192 and res["max_num_seqs"] == 8600
    assert int(w[w.index("--max-num-batched-tokens") + 1]) >= res["max_num_seqs"]
    assert "max-num-batched-tokens-set" in res["note_codes"]
    code, found = check(capsys, res["serve"], "H200")  # the printed line starts
    assert code == 0 and "serve-default-batched-tokens-below-seqs" not in found
    # without the flag vLLM keeps 8192 < 8600 and SchedulerConfig refuses: an error
    bare = res["serve"].replace(" --max-num-batched-tokens 8600", "")
    code, found = check(capsys, bare, "H200")
    assert code == 1 and found["serve-default-batched-tokens-below-seqs"]["severity"] == "error"
    assert "--max-num-batched-tokens 8600" in found["serve-default-batched-tokens-below-seqs"]["fix"]
    # also for a line with no speculative config (the trial's second command)
    code, found = check(capsys, "vllm serve meta-llama/Llama-3.1-8B --max-num-seqs 9000",
                        "H100-SXM")
    assert code == 1 and "serve-default-batched-tokens-below-seqs" in found
    code, found = check(capsys, "vllm serve meta-llama/Llama-3.1-8B --max-num-seqs 8192",
                        "H100-SXM")
    assert "serve-default-batched-tokens-below-seqs" not in found
    # below the default the plan leaves the flag out
    res = plan_json(capsys, "--gpu", "H200", "--model", "Llama-3.1-8B", "--draft", "ngram",
                    "--context", "100", "--batch", "1", "64", "--gamma", "1", "--alpha", "0.9")
    assert "--max-num-batched-tokens" not in words(res["serve"])


# ------------------------------------------------ T5-M3: V0's figures, no V1 serve line
def test_plan_vllm_v0_gives_no_v1_schedule_or_serve_line(capsys):
    argv = ["--gpu", "H100-SXM", "--model", "Llama-3.1-8B", "--draft", "ngram", "--context",
            "512", "--batch", "1", "64", "256", "--gamma", "1", "2", "3", "--alpha", "0.7"]
    v0 = plan_json(capsys, *argv, "--engine", "vllm-v0")  # ngram: V0 had it, not eagle3 (T7-07)
    assert v0["serve"] is None and v0["schedule"] is None and v0["config"] is None
    assert "v0-no-serve-line" in v0["note_codes"]
    assert "no-schedule-for-every-context" not in v0["note_codes"]
    assert v0["paying_batches"]["512"]  # the verdicts stay: they are the V0 model's
    v1 = plan_json(capsys, *argv)
    assert v1["serve"].startswith("vllm serve ") and "v0-no-serve-line" not in v1["note_codes"]
    code, out, _ = run(capsys, "plan", *argv, "--engine", "vllm-v0")
    assert not any(r.startswith("vllm serve") for r in out.splitlines())
    assert "schedule: none (the figures are vLLM V0's" in out


def test_simulate_takes_kv_cache_dtype_as_plan_does(capsys):
    from specnb.simulate.engine import kv_blocks

    argv = ["simulate", "--gpu", "H100-SXM", "--model", "Llama-3.1-70B", "--dtype", "fp8",
            "--draft", "eagle3", "--gamma", "3", "--tau", "2.6", "--input-len", "1000",
            "--output-len", "64", "--num-prompts", "8", "--concurrency", "4", "--json"]
    runs = {}
    for kv in ("auto", "fp8"):
        code, out, err = run(capsys, *argv, "--kv-cache-dtype", kv)
        assert code == 0, err
        runs[kv] = json.loads(out)
    for kv, res in runs.items():
        st = S.setup("H100-SXM", "Llama-3.1-70B", "eagle3", dtype="fp8", kv_dtype=kv)
        assert res["setup"]["num_gpu_blocks"] == kv_blocks(st)
    assert runs["fp8"]["setup"]["num_gpu_blocks"] > 1.9 * runs["auto"]["setup"]["num_gpu_blocks"]
    w = words(runs["fp8"]["serve"])
    assert w[w.index("--kv-cache-dtype") + 1] == "fp8"
    assert "--kv-cache-dtype" not in words(runs["auto"]["serve"])


def test_the_sglang_launch_line_loads_the_planned_weight_dtype_too(capsys):
    # 2 GPUs: 70B fp8 (70.6 GB) is above SGLang's 0.824 share of one H100 (T7-03)
    argv = ["--gpu", "H100-SXM", "--gpus", "2", "--model", "Llama-3.1-70B", "--draft", "eagle3",
            "--engine", "sglang", "--context", "4096", "--batch", "1", "2", "--gamma", "3",
            "--alpha", "0.7"]
    fp8 = words(plan_json(capsys, *argv, "--dtype", "fp8")["serve"])
    assert fp8[fp8.index("--model-path") + 1] == "meta-llama/Llama-3.1-70B"
    assert fp8[fp8.index("--quantization") + 1] == "fp8"
    int4 = words(plan_json(capsys, *argv, "--dtype", "int4")["serve"])
    assert int4[int4.index("--model-path") + 1] == "<Llama-3.1-70B-int4-checkpoint>"


def test_a_draft_counted_in_fp8_is_noted_vllm_loads_it_unquantized(capsys):
    argv = ["--gpu", "H100-SXM", "--model", "Llama-3.1-70B", "--dtype", "fp8", "--draft",
            "eagle3", "--context", "4096", "--batch", "1", "2", "--gamma", "3", "--alpha", "0.7"]
    assert "draft-dtype-not-in-line" in plan_json(capsys, *argv, "--draft-dtype",
                                                  "fp8")["note_codes"]
    # T7-12: without --draft-dtype the head is counted as vLLM loads it (bf16): no note
    default = plan_json(capsys, *argv)
    assert default["setup"]["draft_dtype"] == "bf16"
    assert "draft-dtype-not-in-line" not in default["note_codes"]
    # mtp runs the target's own layers: vLLM gives it the target's --quantization
    mtp = plan_json(capsys, "--gpu", "H200", "--gpus", "8", "--model", "DeepSeek-V3", "--dtype",
                    "fp8", "--draft", "mtp", "--context", "4000", "--batch", "1", "8",
                    "--gamma", "1", "--alpha", "0.8")
    assert "draft-dtype-not-in-line" not in mtp["note_codes"]


@pytest.mark.parametrize("value", ["auto", "-1"])
def test_config_check_reads_max_model_len_auto_as_vllms_auto_fit(capsys, value):
    """T6-W10: vLLM 0.33 fits max_model_len to the KV cache for 'auto' / -1, not the model's
    full length; the 4090's fit is the refusal's own fix length."""
    line = (f"vllm serve meta-llama/Llama-3.1-8B --max-model-len {value} "
            f"--speculative-config '{NGRAM}'")
    code, found = check(capsys, line, "RTX-4090")
    n = S.max_model_len_that_fits(S.setup("RTX-4090", "Llama-3.1-8B", "ngram"), 131072)
    assert code == 0 and "kv-cache-below-max-model-len" not in found
    assert f"about {n} of" in found["max-model-len-auto-fit"]["message"]
    assert f"--max-model-len {n}," in found["verify-memory-cap"]["message"]


def test_config_check_reads_vllm_allow_long_max_model_len_before_the_command(capsys):
    """T6-C7: the env var config check's own refusal names, set before the command, makes
    vLLM warn instead of refusing (vLLM 0.33 config/model.py); a script's comments parse."""
    line = (f"vllm serve meta-llama/Llama-3.1-8B \\\n --max-model-len 200000 "
            f"--speculative-config '{NGRAM}'")
    code, found = check(capsys, line, "H100-SXM")
    assert code == 1 and found["serve-max-model-len-above-target"]["severity"] == "error"
    code, found = check(capsys, "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 " + line, "H100-SXM")
    assert code == 0 and "serve-max-model-len-above-target" not in found
    assert found["serve-max-model-len-above-target-allowed"]["severity"] == "warning"
    code, found = check(capsys, "# serve it\nexport VLLM_ALLOW_LONG_MAX_MODEL_LEN=0\n" + line,
                        "H100-SXM")
    assert code == 1 and "serve-max-model-len-above-target" in found


# Sixth trial T6-W2, T6-W7, T6-M1, T6-W5, T6-C1, T6-W6, T6-W3, T6-C5, T6-C6 (faults7b): the
# checkpoint's own quantization (gpt-oss's MXFP4 experts, DeepSeek-V3's fp8) is what plan
# assumes by default and what config check holds a --quantization against (vLLM 0.33
# _verify_quantization); config check --serve applies the target rules with or without
# --speculative-config; the serve line never sets a --max-model-len vLLM refuses, and V0 runs
# print none.


def check_any(capsys, line, gpu=None):
    """config check --serve LINE [--gpu G] --json: (exit code, {code: finding})."""
    code, out, err = run(capsys, "config", "check", "--serve", line, "--json",
                         *(["--gpu", gpu] if gpu else []))
    assert code in (0, 1), err
    return code, {f["code"]: f for f in json.loads(out)["findings"]}


GPT_OSS = ["--model", "gpt-oss-20b", "--draft", "ngram", "--context", "4000", "--batch", "1",
           "16", "--gamma", "3", "--alpha", "0.7"]


def test_gpt_oss_checkpoint_is_mxfp4_experts_and_bf16_rest():
    a = S.architecture("gpt-oss-20b")
    assert a.checkpoint_dtype == "mxfp4"
    routed = 24 * 32 * 3 * 2880 * 2880  # layers x experts x gate/up/down
    assert a.routed_expert_params == routed
    want = (a.params - routed) * 2.0 + routed * 4.25 / 8
    assert a.weight_bytes("mxfp4") == want
    assert f"{want / 1e9:.1f}" == "13.7"  # OpenAI: gpt-oss-20b runs within 16 GB
    assert f"{S.architecture('gpt-oss-120b').weight_bytes('mxfp4') / 1e9:.1f}" == "65.2"
    # a dense model or a head has no routed experts: mxfp4 leaves them bf16
    assert S.weight_bytes_of(1e9, "mxfp4") == 2e9
    assert S.checkpoint_dtype_of({"model_type": "gpt_oss",
                                  "quantization_config": {"quant_method": "mxfp4"}}) == "mxfp4"
    assert S.checkpoint_dtype_of({"model_type": "llama",
                                  "quantization_config": {"quant_method": "mxfp4"}}) is None


def test_mxfp4_step_reads_the_experts_at_425_bits():
    # the plain step's weight read at batch 1: fewer bytes than bf16, more than all at 4.25 bits
    mx = S.setup("H100", "gpt-oss-20b", "ngram")
    bf = S.setup("H100", "gpt-oss-20b", "ngram", dtype="bf16")
    assert mx.dtype == "mxfp4" and bf.dtype == "bf16"
    assert mx.target.weight_bytes(mx.dtype) < bf.target.weight_bytes("bf16") / 3


def test_plan_on_l4_serves_gpt_oss_in_its_mxfp4(capsys):
    code, out, err = run(capsys, "plan", "--gpu", "L4", *GPT_OSS)
    assert code == 0, err
    assert out.splitlines()[0].startswith("gpt-oss-20b on 1 x L4 (mxfp4, the checkpoint's,")
    assert "nothing can be served" not in out
    code, js, _ = run(capsys, "plan", "--gpu", "L4", *GPT_OSS, "--json")
    res = json.loads(js)
    assert res["cannot_serve"] is None and res["setup"]["dtype"] == "mxfp4"
    assert res["setup"]["dtype_from"] == "checkpoint"
    assert shlex.split(res["serve"])[2] == "openai/gpt-oss-20b"


def test_plan_fp8_of_an_mxfp4_checkpoint_writes_no_quantization_flag(capsys):
    code, js, err = run(capsys, "plan", "--gpu", "H100", *GPT_OSS, "--dtype", "fp8", "--json")
    assert code == 0, err
    res = json.loads(js)
    words = shlex.split(res["serve"])
    assert "--quantization" not in words and words[2] == "<gpt-oss-20b-fp8-checkpoint>"
    assert "quantized-checkpoint-placeholder" in res["note_codes"]


def test_deepseek_v3_plans_in_its_fp8_by_default(capsys):
    argv = ["plan", "--gpu", "H200", "--gpus", "8", "--model", "DeepSeek-V3", "--draft", "mtp",
            "--context", "8000", "--batch", "1", "8", "--gamma", "1", "--alpha", "0.8", "--json"]
    code, js, err = run(capsys, *argv)
    assert code == 0, err
    res = json.loads(js)
    assert res["cannot_serve"] is None
    assert (res["setup"]["dtype"], res["setup"]["dtype_from"]) == ("fp8", "checkpoint")
    assert "--quantization" not in shlex.split(res["serve"])
    code, js, _ = run(capsys, *argv, "--dtype", "bf16")  # an explicit override still wins
    res = json.loads(js)
    assert res["cannot_serve_code"] == "weights-do-not-fit" and res["setup"]["dtype"] == "bf16"
    assert S.setup("H200", "Llama-3.1-8B", "eagle3").dtype == "bf16"  # unquantized: bf16


DSV3 = ("vllm serve deepseek-ai/DeepSeek-V3 -tp 8 --speculative-config "
        "'{\"method\": \"mtp\", \"num_speculative_tokens\": 1}'")


def test_config_check_refuses_a_quantization_the_checkpoint_contradicts(capsys):
    code, found = check_any(capsys, DSV3 + " --quantization awq", "H200")
    assert code == 1 and found["quantization-mismatch"]["severity"] == "error"
    assert "(fp8) does not match" in found["quantization-mismatch"]["message"]
    code, found = check_any(capsys, DSV3 + " --quantization fp8", "H200")  # the checkpoint's own
    assert code == 0 and "quantization-mismatch" not in found
    code, found = check_any(capsys, DSV3 + " --quantization awq")  # no --gpu: the target rule
    assert code == 1 and "quantization-mismatch" in found
    # gpt-oss: vLLM's GptOssMxfp4Config claims the checkpoint whatever the flag
    code, found = check_any(capsys, "vllm serve openai/gpt-oss-20b --quantization fp8", "L4")
    assert code == 0 and found["quantization-overridden"]["severity"] == "warning"
    assert "kv-cache-below-max-model-len" not in found  # 13.7 GB of MXFP4 leaves room on 24 GB


def test_config_check_applies_the_target_rules_without_speculation(capsys):
    code, found = check_any(capsys, "vllm serve Qwen/Qwen2.5-7B -tp 8")
    assert code == 1 and "serve-tensor-parallel" in found
    code, found = check_any(capsys, "vllm serve meta-llama/Llama-3.1-8B", "L4")
    assert code == 1 and "kv-cache-below-max-model-len" in found
    fits = S.max_model_len_that_fits(S.setup("L4", "Llama-3.1-8B", "ngram"), 131072)
    assert f"give --max-model-len {fits} or less" in found["kv-cache-below-max-model-len"]["fix"]


def test_the_proposed_speculative_config_draws_no_warning_when_pasted(capsys):
    code, found = check_any(capsys, "vllm serve meta-llama/Llama-3.1-8B --max-model-len 4096")
    fix = found["no-speculative-config"]["fix"]
    config = fix.split("'")[1]
    assert json.loads(config) == {"method": "ngram", "num_speculative_tokens": 4,
                                  "prompt_lookup_min": 2, "prompt_lookup_max": 5}
    code, found = check_any(capsys, "vllm serve meta-llama/Llama-3.1-8B --max-model-len 4096 "
                        f"--speculative-config '{config}'")
    assert code == 0 and not [f for f in found.values() if f["severity"] != "note"], found


# T6-W6: the serve line's --max-model-len is never one vLLM refuses
def test_serve_line_caps_max_model_len_at_the_longest_that_fits(capsys):
    argv = ["plan", "--gpu", "RTX-4090", "--model", "Llama-3.1-8B", "--draft", "ngram",
            "--context", "4000", "60000", "--batch", "1", "4", "--gamma", "3", "--alpha", "0.5"]
    code, js, err = run(capsys, *argv, "--json")
    assert code == 0, err
    res = json.loads(js)
    st = S.setup("RTX-4090", "Llama-3.1-8B", "ngram")
    fits = S.max_model_len_that_fits(st, 131072)
    # (0.92 x 23.64 GiB - 16.06 GB) / 131,072 B per token (T7-06: the device's total)
    assert fits == int((0.92 * st.gpu.total_memory_bytes - st.target.weight_bytes())
                       // 131072) and 4000 < fits < 60000
    words = shlex.split(res["serve"])
    assert words[words.index("--max-model-len") + 1] == str(fits)
    assert "max-model-len-capped" in res["note_codes"]
    capped = res["notes"][res["note_codes"].index("max-model-len-capped")]
    assert "60,000" in capped and "does not serve that context" in capped
    code, found = check_any(capsys, res["serve"], "RTX-4090")  # pasted: vLLM starts
    assert code == 0 and "kv-cache-below-max-model-len" not in found


SIM = ["simulate", "--gpu", "L4", "--model", "Llama-3.1-8B", "--draft", "ngram", "--gamma",
       "3", "--tau", "1.6", "--input-len", "1000", "--output-len", "64", "--num-prompts", "16",
       "--concurrency", "4"]


def test_simulate_v0_prints_no_v1_serve_line(capsys):
    code, js, err = run(capsys, *SIM, "--engine", "vllm-v0", "--json")
    assert code == 0, err
    res = json.loads(js)
    assert res["verdict"] == "pays"  # a V1 engine would print a line here
    assert res["serve"] is None and res["serve_note_codes"] == ["v0-no-serve-line"]
    code, out, _ = run(capsys, *SIM, "--engine", "vllm-v0")
    assert not [ln for ln in out.splitlines() if ln.startswith("vllm serve")]
    assert "serve: none (the run is vLLM V0's" in out
    code, js, _ = run(capsys, *SIM, "--json")  # V1: the line
    assert json.loads(js)["serve"].startswith("vllm serve ")


def test_simulate_nothing_fits_names_its_own_flags(capsys):
    code, _, err = run(capsys, "simulate", "--gpu", "RTX-4090", "--model", "Llama-3.1-8B",
                       "--draft", "ngram", "--gamma", "3", "--tau", "1.6", "--input-len",
                       "60000", "--output-len", "64", "--num-prompts", "4", "--concurrency", "1")
    assert code == 2
    fits = S.max_model_len_that_fits(S.setup("RTX-4090", "Llama-3.1-8B", "ngram"), 131072)
    assert f"--input-len + --output-len (vLLM's --max-model-len) at most {fits:,}" in err
    assert "--context" not in err
    # fp8 of an unquantized checkpoint is vLLM's online quantization, not another checkpoint
    assert "--dtype fp8 (vLLM's online --quantization fp8 of the same checkpoint)" in err


def test_nothing_fits_hint_keeps_a_quantized_checkpoint_for_int4(capsys):
    code, js, _ = run(capsys, "plan", "--gpu", "RTX-3090", "--gpus", "2", "--model",
                      "Llama-3.1-70B", "--draft", "eagle3", "--context", "4000", "--batch", "1",
                      "--gamma", "3", "--alpha", "0.7", "--json")
    msg = json.loads(js)["cannot_serve"]
    assert "--dtype int4 (a quantized checkpoint)" in msg and "change --gpus 8" in msg


def test_a_head_drafts_in_bf16_beside_a_quantized_checkpoint_by_default(capsys):
    # vLLM loads a head unquantized (SpeculativeConfig.quantization None); mtp is the target's
    eagle = S.setup("H200", "DeepSeek-V3", "eagle3", gpus=8)
    mtp = S.setup("H200", "DeepSeek-V3", "mtp", gpus=8)
    assert (eagle.dtype, eagle.draft_dtype) == ("fp8", "bf16")
    assert (mtp.dtype, mtp.draft_dtype) == ("fp8", None)  # None: the target's fp8
    # T7-12: an explicit --dtype too (the head is unquantized whatever the target's dtype)
    assert S.setup("H200", "DeepSeek-V3", "eagle3", gpus=8, dtype="fp8").draft_dtype == "bf16"
    code, js, err = run(capsys, "plan", "--gpu", "H100", "--model", "gpt-oss-20b", "--draft",
                        "eagle3", "--context", "4000", "--batch", "1", "--gamma", "3",
                        "--alpha", "0.7", "--json")
    assert code == 0, err
    res = json.loads(js)
    assert res["setup"]["draft_dtype"] == "bf16"
    assert "draft-dtype-not-in-line" not in res["note_codes"]


def test_config_check_reads_env_and_docker_lines_and_names_another_command(capsys):
    """T7-09: ``env NAME=value vllm serve`` sets NAME as ``NAME=value vllm serve`` does; the
    vllm/vllm-openai image's args (and its -e NAME=value) are the serve line's; another
    leading command is bad input naming it, not vLLM's parser blaming vllm serve."""
    tail = f"--max-model-len 200000 --speculative-config '{NGRAM}'"
    code, found = check(capsys, "env VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 vllm serve "
                        f"meta-llama/Llama-3.1-8B {tail}", "H100-SXM")
    assert code == 0 and "serve-max-model-len-above-target-allowed" in found
    code, found = check(capsys, "docker run --gpus all -e VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 "
                        f"vllm/vllm-openai:latest --model meta-llama/Llama-3.1-8B {tail}",
                        "H100-SXM")
    assert code == 0 and "serve-max-model-len-above-target-allowed" in found
    assert main(["config", "check", "--serve", "sudo vllm serve meta-llama/Llama-3.1-8B"]) == 2
    err = capsys.readouterr().err
    assert "'sudo'" in err and "vllm serve: error" not in err


# ------------------------------------------------------------------ trial 7 (t7mem)
def test_config_check_auto_fit_counts_fp8_weights_as_vllm_loads_them(capsys):
    """T7-02 / T7-06: the trial's L4 line; the auto-fit length is the room left by the fp8
    layers, the bf16 embedding and LM head, in 0.92 of the 22.03 GiB an L4 reports."""
    code, found = check_any(capsys, "vllm serve meta-llama/Llama-3.1-8B --quantization fp8 "
                            "--max-model-len auto", "L4")
    a, g = S.architecture("Llama-3.1-8B"), S.gpu("L4")
    w = (a.params - 2 * a.embedding_params) * 1.0 + 2 * a.embedding_params * 2.0
    fits = int((0.92 * g.total_memory_bytes - w) // a.kv_bytes_per_token("bf16"))
    assert f"about {fits} of the target" in found["max-model-len-auto-fit"]["message"]
    old = int((0.92 * 24e9 - a.params * 1.0) // a.kv_bytes_per_token("bf16"))
    assert old == 107191 and fits < old  # the trial's printed figure


@pytest.mark.parametrize("model", ["meta-llama/Llama-3.1-8B", "Qwen/Qwen3-8B"])
def test_mtp_on_a_catalogue_target_without_mtp_layers_is_refused(capsys, model):
    """T7-10: the trial's line: vLLM raises "Unsupported speculative method: 'mtp'"."""
    line = (f"vllm serve {model} --speculative-config "
            "'{\"method\": \"mtp\", \"num_speculative_tokens\": 1}' --max-num-seqs 1")
    code, out, _ = run(capsys, "config", "check", "--serve", line, "--gpu", "H100-SXM", "--json")
    found = {f["code"]: f["severity"] for f in json.loads(out)["findings"]}
    assert code == 1 and found["mtp-target-without-mtp"] == "error"
