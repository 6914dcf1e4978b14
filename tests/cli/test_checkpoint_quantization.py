"""Sixth trial T6-W2, T6-W7, T6-M1, T6-W5, T6-C1, T6-W6, T6-W3, T6-C5, T6-C6: the checkpoint's own
quantization (gpt-oss's MXFP4 experts, DeepSeek-V3's fp8) is what plan assumes by default and
what config check holds a ``--quantization`` against (vLLM 0.33 ``_verify_quantization``);
``config check --serve`` applies the target rules with or without ``--speculative-config``;
the serve line never sets a --max-model-len vLLM refuses, and V0 runs print none."""

from __future__ import annotations

import json
import shlex

from specnb import serving as S
from specnb.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def check(capsys, line, gpu=None):
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
    code, found = check(capsys, DSV3 + " --quantization awq", "H200")
    assert code == 1 and found["quantization-mismatch"]["severity"] == "error"
    assert "(fp8) does not match" in found["quantization-mismatch"]["message"]
    code, found = check(capsys, DSV3 + " --quantization fp8", "H200")  # the checkpoint's own
    assert code == 0 and "quantization-mismatch" not in found
    code, found = check(capsys, DSV3 + " --quantization awq")  # no --gpu: the target rule
    assert code == 1 and "quantization-mismatch" in found
    # gpt-oss: vLLM's GptOssMxfp4Config claims the checkpoint whatever the flag
    code, found = check(capsys, "vllm serve openai/gpt-oss-20b --quantization fp8", "L4")
    assert code == 0 and found["quantization-overridden"]["severity"] == "warning"
    assert "kv-cache-below-max-model-len" not in found  # 13.7 GB of MXFP4 leaves room on 24 GB


def test_config_check_applies_the_target_rules_without_speculation(capsys):
    code, found = check(capsys, "vllm serve Qwen/Qwen2.5-7B -tp 8")
    assert code == 1 and "serve-tensor-parallel" in found
    code, found = check(capsys, "vllm serve meta-llama/Llama-3.1-8B", "L4")
    assert code == 1 and "kv-cache-below-max-model-len" in found
    assert "give --max-model-len 45924 or less" in found["kv-cache-below-max-model-len"]["fix"]


def test_the_proposed_speculative_config_draws_no_warning_when_pasted(capsys):
    code, found = check(capsys, "vllm serve meta-llama/Llama-3.1-8B --max-model-len 4096")
    fix = found["no-speculative-config"]["fix"]
    config = fix.split("'")[1]
    assert json.loads(config) == {"method": "ngram", "num_speculative_tokens": 4,
                                  "prompt_lookup_min": 2, "prompt_lookup_max": 5}
    code, found = check(capsys, "vllm serve meta-llama/Llama-3.1-8B --max-model-len 4096 "
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
    assert fits == 45924
    words = shlex.split(res["serve"])
    assert words[words.index("--max-model-len") + 1] == str(fits)
    assert "max-model-len-capped" in res["note_codes"]
    capped = res["notes"][res["note_codes"].index("max-model-len-capped")]
    assert "60,000" in capped and "does not serve that context" in capped
    code, found = check(capsys, res["serve"], "RTX-4090")  # pasted: vLLM starts
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
                       "50000", "--output-len", "64", "--num-prompts", "4", "--concurrency", "1")
    assert code == 2
    assert "--input-len + --output-len (vLLM's --max-model-len) at most 45,924" in err
    assert "--context" not in err
    # fp8 of an unquantized checkpoint is vLLM's online quantization, not another checkpoint
    assert "--dtype fp8 (vLLM's online --quantization fp8 of the same checkpoint)" in err


def test_nothing_fits_hint_keeps_a_quantized_checkpoint_for_int4(capsys):
    code, js, _ = run(capsys, "plan", "--gpu", "RTX-3090", "--gpus", "2", "--model",
                      "Llama-3.1-70B", "--draft", "eagle3", "--context", "4000", "--batch", "1",
                      "--gamma", "3", "--alpha", "0.7", "--json")
    msg = json.loads(js)["cannot_serve"]
    assert "--dtype int4 (a quantized checkpoint)" in msg and "change --gpus 8" in msg
