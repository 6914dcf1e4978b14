"""specnb.vllm.serve: the whole ``vllm serve`` line. The parser replays vLLM 0.33.0's own parser
on the lines of tests/cases/vllm/0.33.0/serve.jsonl (oracle/drive_strings.py drove
``make_arg_parser(FlexibleArgumentParser())``); the serve-line rules get a code and a fix."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from specnb.vllm.serve import API_SERVER, ServeLineError, check_serve_line, parse_serve_line

FIXTURE = Path(__file__).resolve().parent.parent / "cases" / "vllm" / "0.33.0" / "serve.jsonl"
ALL = [json.loads(x) for x in FIXTURE.read_text().splitlines() if x.strip()]
RECS = [r for r in ALL if r["id"].startswith("serve:")]
#: lines vLLM's ``python -m vllm.entrypoints.openai.api_server`` parser took or refused
API = [r for r in ALL if r["id"].startswith("api:")]
BY_ID = {r["id"]: r for r in ALL}
#: What vLLM's parser gives for a flag the line does not set (the plain line's values).
DEFAULTS = next(r for r in RECS if r["id"] == "serve:plain")["values"]


@pytest.mark.parametrize("rec", [r for r in RECS if r["id"] != "serve:served-name-first"],
                         ids=lambda r: r["id"])
def test_the_line_parses_as_vllms_parser_does(rec):
    if rec["verdict"] == "rejected":
        with pytest.raises(ServeLineError) as err:
            parse_serve_line("vllm serve " + rec["line"], vllm_version="0.33.0")
        if rec["message"].startswith("vllm serve: error:"):
            strip = re.compile(r" at 0x[0-9a-f]+")
            assert strip.sub("", str(err.value)) == strip.sub("", rec["message"])
        return
    line = parse_serve_line("vllm serve " + rec["line"], vllm_version="0.33.0")
    for dest, value in rec["values"].items():
        if dest in ("model", "model_tag", "structured_outputs_config"):
            continue
        mine = (json.loads(line.speculative_config) if line.speculative_config else None) \
            if dest == "speculative_config" else line.settings.get(dest)
        if mine is None and dest != "speculative_config":
            assert value == DEFAULTS[dest], dest
        else:
            assert mine == value, dest
    if rec["values"].get("model_tag") or "--model" in rec["line"]:
        assert line.model == (rec["values"].get("model_tag") or rec["values"]["model"])


def test_bad_lines_are_one_line_errors():
    for bad in ("vllm serve 'MODEL", "", "MODEL --max-model-len lots"):
        with pytest.raises(ServeLineError) as err:
            parse_serve_line(bad)
        assert "\n" not in str(err.value)
    with pytest.raises(TypeError, match="line must be"):
        parse_serve_line(42)


@pytest.mark.parametrize("rec", API, ids=lambda r: r["id"])
def test_the_api_server_module_is_a_serve_line_with_its_own_parser(rec):
    line = f"python -m {API_SERVER} {rec['line']}"
    if rec["verdict"] == "rejected":
        with pytest.raises(ServeLineError) as err:
            parse_serve_line(line, vllm_version="0.33.0")
        assert str(err.value).split("error: ", 1)[1] == rec["message"].split("error: ", 1)[1]
    else:
        assert parse_serve_line(line, vllm_version="0.33.0").model == \
            (rec["values"]["model_tag"] or rec["values"]["model"])


def test_a_line_of_another_command_is_not_a_serve_line():
    for bad in ("python -m foo --model M", "python3 -m vllm.entrypoints.cli.main bench serve",
                "/opt/venv/bin/python3.11 -m vllm.scripts", "vllm bench serve --model M", "vllm"):
        with pytest.raises(ServeLineError, match="^not a vllm serve line: ") as err:
            parse_serve_line(bad)
        assert "unrecognized" not in str(err.value) and "\n" not in str(err.value)
    assert parse_serve_line("python3 -m vllm.entrypoints.cli.main serve M -tp 2").model == "M"


def test_no_model_serves_vllms_default_and_says_so():
    rec = BY_ID["serve:no-model"]  # vLLM's parser takes the line, --model keeps its default
    assert rec["verdict"] == "accepted" and rec["values"]["model_tag"] is None
    parsed, check = check_serve_line("vllm serve", vllm_version="0.33.0")
    assert parsed.model is None and check.codes()[0] == "no-model"
    assert f"({rec['values']['model']})" in check.findings[0].message


def test_a_kv_cache_dtype_the_parser_takes_and_the_engine_refuses():
    rec = BY_ID["serve:kv-int3"]  # 0.33.0's parser: CacheDType | str, the names in metavar
    assert rec["verdict"] == "accepted" and rec["values"]["kv_cache_dtype"] == "int3"
    for line in ("MODEL --kv-cache-dtype int3", "MODEL --kv-cache-dtype int3 "
                 "--speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 3}'"):
        codes = _codes(line, vllm_version="0.33.0")
        assert codes.count("serve-unknown-kv-cache-dtype") == 1, codes
    assert "serve-unknown-kv-cache-dtype" not in _codes("MODEL --kv-cache-dtype fp8")


@pytest.mark.parametrize("extra, code", [
    ("--gpu-memory-utilization 1.5", "serve-gpu-memory-utilization-range"),  # cache.py gt=0,
    ("--gpu-memory-utilization 0", "serve-gpu-memory-utilization-range"),  # le=1 (trial4 W3)
    ("--gpu-memory-utilization nan", "serve-gpu-memory-utilization-range"),
    ("-tp 0", "serve-tensor-parallel-size-range"),  # parallel.py ge=1 (trial4 C2): not exit 2
])
def test_engine_config_bounds_are_errors_not_acceptance(extra, code):
    spec = " --speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 3}' "
    _, check = check_serve_line("vllm serve MODEL" + spec + extra, vllm_version="0.33.0")
    assert not check.accepted and code in [f.code for f in check.errors], check.codes()
    _, ok = check_serve_line("vllm serve MODEL" + spec + "--gpu-memory-utilization 1 -tp 1",
                             vllm_version="0.33.0")
    assert not [f for f in ok.errors if f.code.endswith("-range")]


def test_dotted_flag_findings_name_the_flag_not_a_position():
    _, check = check_serve_line("MODEL --speculative-config.method ngram "
                                "--speculative-config.num_speculative_tokens '{3'")
    (f,) = [f for f in check.errors if f.code != "no-speculative-config"]
    assert f.line is None and f.column is None
    assert f.key == "--speculative-config.num_speculative_tokens" and '"{3"' in f.message
    assert "line" not in f.format() and "\n" not in f.message


@pytest.mark.parametrize("cid", ["dotted-nested-conflict", "dotted-list-concat"])
def test_dotted_flags_merge_as_vllms_parser_merges_them(cid):
    rec = BY_ID[f"serve:{cid}"]
    spec = parse_serve_line(rec["line"], vllm_version="0.33.0").speculative_config
    assert json.loads(spec) == rec["values"]["speculative_config"]


def _codes(line, **kw):
    return check_serve_line(line, **kw)[1].codes()


SPEC = "--speculative-config '{}'"


def test_the_scheduled_token_budget_with_speculation_as_vllm_033():
    # trial 7 T7-01: VllmConfig._set_max_num_scheduled_tokens (warning below 8192; error when
    # max_num_batched_tokens <= num_lookahead_tokens; max_num_scheduled_tokens is ge=1)
    eagle = json.dumps({"method": "eagle3", "model": "org/head", "num_speculative_tokens": 3})

    def found(flags, **kw):
        check = check_serve_line(f"vllm serve MODEL --speculative-config '{eagle}' {flags}",
                                 **kw)[1]
        return {f.code: f.severity for f in check.findings}, check.accepted

    codes, ok = found("--max-num-seqs 256 --max-num-batched-tokens 2048")
    assert ok and codes["spec-scheduled-tokens-below-8192"] == "warning"
    assert "spec-batched-tokens-within-lookahead" not in codes
    codes, ok = found("--max-num-batched-tokens 8192")
    assert ok and "spec-scheduled-tokens-below-8192" not in codes
    codes, _ = found("--max-num-batched-tokens 8192 --max-num-scheduled-tokens 4096")
    assert codes["spec-scheduled-tokens-below-8192"] == "warning"
    codes, ok = found("--max-num-seqs 2 --max-num-batched-tokens 3")  # 3 <= lookahead 3
    assert not ok and codes["spec-batched-tokens-within-lookahead"] == "error"
    assert found("--max-num-seqs 2 --max-num-batched-tokens 4")[1]
    codes, ok = found("--max-num-scheduled-tokens 0")
    assert not ok and codes["serve-max-num-scheduled-tokens-range"] == "error"
    assert "spec-scheduled-tokens-below-8192" not in found(  # 0.32.0 was not read
        "--max-num-batched-tokens 2048", vllm_version="0.32.0")[0]
    # ngram drafts without lookahead slots (num_lookahead_tokens 0)
    from specnb.vllm.rules.serve import lookahead_tokens

    assert [lookahead_tokens(m, 3) for m in ("ngram", "suffix", "eagle3", "deepseek_mtp",
                                              "draft_model", "dflash")] == [0, 0, 3, 3, 3, 4]


def test_a_suffix_schedule_is_dropped_and_v2_refuses_suffix():
    # trial 7 T7-05: vLLM 0.33 runs suffix on Model Runner V1, drops the schedule (a warning)
    sched = json.dumps({"method": "suffix", "num_speculative_tokens": 4,
                        "num_speculative_tokens_per_batch_size": [[1, 8, 4], [9, 64, 1]]})
    codes = _codes(f"vllm serve MODEL --speculative-config '{sched}'")
    assert "dynamic-schedule-disabled-for-method" in codes and "schedule-explained" not in codes
    check = check_serve_line(f"vllm serve MODEL --speculative-config '{sched}'")[1]
    assert check.accepted and {f.severity for f in check.findings
                               if f.code == "dynamic-schedule-disabled-for-method"} == {"warning"}
    eagle = json.dumps({"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 2,
                        "prompt_lookup_max": 5,
                        "num_speculative_tokens_per_batch_size": [[1, 8, 4], [9, 64, 1]]})
    assert "dynamic-schedule-disabled-for-method" not in _codes(
        f"vllm serve MODEL --speculative-config '{eagle}'")
    plain = json.dumps({"method": "suffix", "num_speculative_tokens": 4})
    on_v2 = check_serve_line(f"VLLM_USE_V2_MODEL_RUNNER=1 vllm serve MODEL "
                             f"--speculative-config '{plain}'")[1]
    assert not on_v2.accepted and "v2-runner-unsupported-method" in on_v2.codes()
    assert "v2-runner-unsupported-method" not in _codes(
        f"vllm serve MODEL --speculative-config '{plain}'")
    # older releases were not read: no finding from 0.32.0's table
    assert "dynamic-schedule-disabled-for-method" not in _codes(
        f"vllm serve MODEL --speculative-config '{sched}'", vllm_version="0.32.0")


def test_the_serve_context_rules(tmp_path):
    head = {"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama",
            "max_position_embeddings": 2048, "torch_dtype": "bfloat16", "vocab_size": 128256}
    (tmp_path / "head").mkdir()
    (tmp_path / "head" / "config.json").write_text(json.dumps(head))
    cfg = json.dumps({"method": "eagle3", "model": str(tmp_path / "head"),
                      "num_speculative_tokens": 3})
    line = f"vllm serve meta-llama/Llama-3.1-8B-Instruct --speculative-config '{cfg}'"
    assert "draft-context-below-max-model-len" in _codes(line + " --max-model-len 8192")
    assert "draft-context-below-max-model-len" not in _codes(line + " --max-model-len 2048")
    assert "quantized-target-bf16-head" in _codes(line + " --quantization fp8")
    assert "draft-tp-vs-target" in _codes(line.replace('"num_speculative_tokens": 3',
                                                       '"num_speculative_tokens": 3, '
                                                       '"draft_tensor_parallel_size": 2')
                                          + " -tp 4")
    sched = json.dumps({"method": "ngram", "num_speculative_tokens": 3,
                        "num_speculative_tokens_per_batch_size": [[1, 8, 3], [9, 512, 1]]})
    assert "schedule-with-data-parallel" in _codes(f"MODEL --speculative-config '{sched}' -dp 2")
    assert "schedule-with-data-parallel" not in _codes(f"MODEL --speculative-config '{sched}'")
    ngram = "MODEL --speculative-config.method ngram --speculative-config.num_speculative_tokens 3"
    assert "serve-unknown-quantization" in _codes(ngram + " --quantization bogus")
    assert "serve-unknown-kv-cache-dtype" in _codes(ngram + " --kv-cache-dtype fp9")
    assert _codes("MODEL --max-model-len 4096") == ["no-speculative-config"]
    both = ("MODEL --speculative-config '{\"method\": \"ngram\"}' "
            "--speculative-config.num_speculative_tokens 3")
    parsed, check = check_serve_line(both)
    assert json.loads(parsed.speculative_config) == {"num_speculative_tokens": 3}
    assert check.codes()[0] == "dotted-flags-replace-json"
    # T5-C5: two JSONs and no dotted flag: argparse keeps the last; no word of dotted flags
    twice = ("MODEL --speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 3}' "
             "--speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 5}'")
    parsed, check = check_serve_line(twice)
    assert json.loads(parsed.speculative_config)["num_speculative_tokens"] == 5
    assert check.codes()[0] == "speculative-config-twice"
    assert "dotted" not in check.findings[0].message
    for f in check_serve_line(line + " --max-model-len 8192 --quantization fp8")[1]:
        assert f.code and f.fix
    # the target's config.json from a local model folder in the line; a draft path that is not
    (tmp_path / "target").mkdir()
    (tmp_path / "target" / "config.json").write_text(json.dumps(
        {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 128256,
         "max_position_embeddings": 8192}))
    local = f"vllm serve {tmp_path / 'target'} --speculative-config '{cfg}'"
    assert "draft-context-below-max-model-len" in _codes(local)
    gone = cfg.replace(str(tmp_path / "head"), str(tmp_path / "nowhere"))
    assert "draft-path-missing" in _codes(f"vllm serve M --speculative-config '{gone}'")


def test_a_line_for_a_release_before_the_json_flag():
    """0.7.3's own flags (specnb/vllm/flags/0.7.3.json): no --speculative-config, so its
    parser refuses the flag; the V0 flags it has turn speculative decoding on."""
    with pytest.raises(ServeLineError, match="unrecognized arguments: --speculative-config"):
        parse_serve_line(f"vllm serve M {SPEC}", vllm_version="0.7.3")
    v0 = "vllm serve M --speculative-model '[ngram]' --num-speculative-tokens 3"
    assert _codes(v0, vllm_version="0.7.3") == ["v0-speculative-flags"]
    with pytest.raises(ServeLineError, match="unrecognized arguments: --speculative-model"):
        parse_serve_line(v0, vllm_version="0.33.0")


def test_a_release_without_a_flag_table_is_parsed_with_the_nearest_older_and_says_so():
    from specnb.vllm._versions import flags_for, version_key, versions_checked

    flagged = sorted((p.stem for p in (Path(__file__).resolve().parents[2] / "specnb" / "vllm"
                                       / "flags").glob("*.json")), key=version_key)
    without = [v for v in versions_checked() if v not in flagged
               and version_key(v) > version_key(flagged[0])]
    if not without:
        pytest.skip("every release has its flag table")
    v = without[0]
    nearest = [f for f in flagged if version_key(f) < version_key(v)][-1]
    assert flags_for(v)["vllm"] == nearest
    parsed, check = check_serve_line(f"vllm serve M {SPEC}", vllm_version=v)
    assert parsed.vllm == nearest and check.codes()[0] == "flags-from-other-release"
    assert f"vLLM {nearest}'s serve flags" in check.findings[0].message


def test_a_served_name_without_a_model_first():
    """The driver parses without the subcommand word; FlexibleArgumentParser.parse_args
    refuses ``vllm serve --served-model-name x ...`` only when ``args[0] == "serve"``
    (``vllm/utils/argparse_utils.py``, 0.25.1 on; the flag tables' served_name_needs_model)."""
    assert BY_ID["serve:served-name-first"]["verdict"] == "accepted"  # without "serve"
    line = "vllm serve --served-model-name x --max-model-len 4096"
    with pytest.raises(ServeLineError, match="should be provided as the first positional"):
        parse_serve_line(line, vllm_version="0.33.0")
    assert parse_serve_line(line.replace("4096", "4096 --model M"), "0.33.0").model == "M"
    assert _codes(line, vllm_version="0.15.1")[:1] == ["no-model"]


def test_pipeline_parallelism_with_speculation_is_flagged_up_to_0_15_0():
    """T5-C7: vLLM's docs: 'Pipeline parallelism is not composible with speculative decoding
    as of vllm<=0.15.0' (notebook 05 says it too); the check now says so for those releases."""
    line = ("MODEL -pp 2 --speculative-config '{\"method\": \"ngram\", "
            "\"num_speculative_tokens\": 3, \"prompt_lookup_min\": 2, \"prompt_lookup_max\": 5}'")
    for version, flagged in (("0.15.0", True), ("0.10.0", True), ("0.15.1", False),
                             ("0.33.0", False)):
        codes = check_serve_line(line, version)[1].codes()
        assert ("pipeline-parallel-with-speculation" in codes) == flagged, version
    assert "pipeline-parallel-with-speculation" not in check_serve_line(
        line.replace("-pp 2", "-tp 2"), "0.15.0")[1].codes()


def test_leading_assignments_and_comment_lines_are_read_as_a_shell_reads_them():
    """T6-C7: 'NAME=1 vllm serve ...' sets the command's environment; a pasted script's
    comment lines and 'export NAME=value' lines before the command are not flags."""
    spec = "'{\"method\": \"ngram\", \"num_speculative_tokens\": 3}'"
    one = parse_serve_line("VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 A=b vllm serve m \\\n"
                           f" --max-model-len 200000 --speculative-config {spec}")
    assert one.env == {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1", "A": "b"}
    assert one.model == "m" and one.settings["max_model_len"] == 200000
    script = parse_serve_line(f"# serve it\n  # again\nexport X=0\nvllm serve m "
                              f"--speculative-config {spec}  \n")
    assert script.env == {"X": "0"} and script.model == "m"
    assert parse_serve_line(f"vllm serve m --speculative-config {spec}").env == {}
    with pytest.raises(ServeLineError, match="empty"):
        parse_serve_line("# nothing but a comment\nX=1")


@pytest.mark.parametrize("flags, named", [
    ("--max-num-seqs " + "9" * 400, "--max-num-seqs"),
    ("-tp " + "9" * 400, "--tensor-parallel-size/-tp"),
    ("--max-model-len -" + "9" * 400, "--max-model-len"),
    ("--max-model-len " + "9" * 400 + "k", "--max-model-len"),  # int(float(...) * 1000)
])
def test_an_integer_flag_above_2_53_is_refused_naming_it(flags, named):
    # trial 6 T6-T2 / T3: a KeyError and an escaped ParamTypeError further on
    with pytest.raises(ServeLineError, match=rf"{re.escape(named)}.*too large") as info:
        parse_serve_line(f"vllm serve meta-llama/Llama-3.1-8B {flags}")
    assert "9" * 40 not in str(info.value)
    assert parse_serve_line(f"vllm serve m --max-num-seqs {2 ** 53}").settings == {
        "max_num_seqs": 2 ** 53}


def test_the_batched_tokens_rule_reads_only_the_flags_given():
    _, check = check_serve_line("vllm serve m --max-num-seqs 300")
    assert "serve-batched-tokens-below-seqs" not in [f.code for f in check.findings]
    _, check = check_serve_line("vllm serve m --max-num-seqs 300 --max-num-batched-tokens 200")
    assert "serve-batched-tokens-below-seqs" in [f.code for f in check.findings]


def test_env_and_docker_lines_are_serve_lines_and_other_commands_are_named():
    # trial 7 T7-09: env NAME=value cmd is NAME=value cmd; the vllm/vllm-openai image's
    # entrypoint is vllm serve (its docker/Dockerfile), so the words after it are serve args
    line = parse_serve_line("env VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 vllm serve org/m "
                            "--max-model-len 200000")
    assert (line.model, line.env, line.settings["max_model_len"]) == (
        "org/m", {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}, 200000)
    line = parse_serve_line("docker run --runtime nvidia --gpus all -v ~/.cache:/root/.cache "
                            "--env HF_TOKEN=x -e VLLM_USE_V2_MODEL_RUNNER=0 -p 8000:8000 "
                            "--ipc=host vllm/vllm-openai:latest --model org/m -tp 2")
    assert (line.model, line.settings["tensor_parallel_size"]) == ("org/m", 2)
    assert line.env == {"HF_TOKEN": "x", "VLLM_USE_V2_MODEL_RUNNER": "0"}
    assert parse_serve_line("docker run vllm/vllm-openai org/m").model == "org/m"
    assert parse_serve_line("A=1 env -u A B=2 vllm serve org/m").env == {"B": "2"}
    for bad in ("sudo vllm serve org/m", "nohup vllm serve org/m --max-num-seqs 4",
                "docker run --gpus all vllm/vllm-openai vllm serve org/m",
                "docker run --gpus all other/image --model org/m", "docker ps",
                "docker run --entrypoint bash vllm/vllm-openai"):
        with pytest.raises(ServeLineError) as err:
            parse_serve_line(bad)
        assert not str(err.value).startswith("vllm serve: error")  # not blamed on vLLM's parser
    # a line without the command (a bare model first) still parses
    assert parse_serve_line("org/m --max-model-len 10").model == "org/m"


def test_async_scheduling_with_a_method_v1_cannot_overlap_is_refused():
    # trial 9, T9-02: vLLM 0.33 config/vllm.py VllmConfig.__post_init__ raises "Async
    # scheduling is not supported by the V1 model runner with suffix-based speculative decoding."
    sfx = json.dumps({"method": "suffix", "num_speculative_tokens": 5})
    ng = json.dumps({"method": "ngram", "num_speculative_tokens": 5})
    e3 = json.dumps({"method": "eagle3", "model": "x/y", "num_speculative_tokens": 3})
    code = "v1-async-scheduling-unsupported"
    for line in (f"vllm serve MODEL --speculative-config '{sfx}' --async-scheduling",
                 f"VLLM_USE_V2_MODEL_RUNNER=0 vllm serve MODEL --speculative-config '{ng}' "
                 "--async-scheduling"):
        check = check_serve_line(line)[1]
        assert not check.accepted and code in {f.code for f in check.errors}
    for line in (f"vllm serve MODEL --speculative-config '{sfx}'",  # vLLM turns it off
                 f"vllm serve MODEL --speculative-config '{sfx}' --no-async-scheduling",
                 f"vllm serve MODEL --speculative-config '{ng}' --async-scheduling",  # V2
                 f"VLLM_USE_V2_MODEL_RUNNER=0 vllm serve MODEL --speculative-config '{e3}' "
                 "--async-scheduling"):
        assert code not in _codes(line)
    assert code not in _codes(f"vllm serve MODEL --speculative-config '{sfx}' "
                              "--async-scheduling", vllm_version="0.32.0")  # not read


def test_a_runner_env_vllm_cannot_start_with_is_refused():
    # trial 9, T9-03: envs.py maybe_convert_bool = bool(int(value)); _validate_v1_model_runner
    sfx = json.dumps({"method": "suffix", "num_speculative_tokens": 5})
    for value in ("true", "yes", ""):
        check = check_serve_line(f"VLLM_USE_V2_MODEL_RUNNER={value} vllm serve MODEL "
                                 f"--speculative-config '{sfx}'")[1]
        assert not check.accepted and "v2-runner-env-not-integer" in check.codes()
    ds = json.dumps({"method": "dspark", "model": "x/y", "num_speculative_tokens": 3})
    check = check_serve_line(f"VLLM_USE_V2_MODEL_RUNNER=0 vllm serve MODEL "
                             f"--speculative-config '{ds}'")[1]
    assert not check.accepted and "v1-runner-unsupported-method" in check.codes()
    assert "v1-runner-unsupported-method" not in _codes(
        f"vllm serve MODEL --speculative-config '{ds}'")
    e3 = json.dumps({"method": "eagle3", "model": "x/y", "num_speculative_tokens": 3,
                     "enable_adaptive_verification": True})
    assert "v1-runner-unsupported-feature" in _codes(
        f"VLLM_USE_V2_MODEL_RUNNER=0 vllm serve MODEL --speculative-config '{e3}'")
    assert "v1-runner-unsupported-feature" not in _codes(
        f"vllm serve MODEL --speculative-config '{e3}'")
