"""`specnb replay`: the table and the profile for the model-free methods, and exit 2 with one
line for every bad input the issue lists, before torch is imported."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from specnb import acceptance_profile as AP
from specnb.cli import main
from specnb.cli import replay as CR


def run(capsys, *argv):
    code = main(["replay", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def _log(tmp_path, rows):
    f = tmp_path / "log.jsonl"
    f.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return str(f)


def test_table_json_and_profile(capsys, tmp_path):
    out_file = tmp_path / "p.json"
    code, out, err = run(capsys, "--gamma", "1", "3", "--context-buckets", "64",
                         "--prompt-lookup-max", "3", "--out", str(out_file))
    assert code == 0, err
    assert "ngram replay of stdlib_heldout_responses.jsonl: 72 requests" in out
    assert "ctx 64-" in out and "prose" in out and f"wrote {out_file}" in out
    prof = AP.load(out_file)
    assert prof.method == "ngram" and prof.gammas == (1, 3) and prof.context_edges == (64,)
    assert prof.params["prompt_lookup_min"] == prof.params["prompt_lookup_max"] == 3
    code, out, _ = run(capsys, "--method", "suffix", "--gamma", "2", "--json")
    d = json.loads(out)
    assert code == 0 and d["method"] == "suffix" and d["gammas"] == [2]
    assert d["params"]["suffix_decoding_max_tree_depth"] == 24


def test_the_table_names_the_acceptance_rate_and_prints_eq1_alpha(capsys):
    """T5-M1: the column that was "alpha" is vLLM's acceptance rate (accepted / draft tokens);
    Eq. 1's alpha is beside it, and it is the one that gives the printed tau at that gamma
    (what `plan --alpha` plans with)."""
    from specnb import replay as R
    from specnb import theory

    code, out, err = run(capsys, "--gamma", "3", "5", "--runner", "v1")
    assert code == 0, err
    head = next(line for line in out.splitlines() if line.startswith("gamma"))
    assert "acc.rate" in head and "Eq.1 alpha" in head and " alpha " not in head.replace("Eq.1 alpha", "")
    assert "acc.rate = accepted / draft tokens" in out and "not Leviathan's alpha" in out
    prof = R.replay(gammas=[3, 5], runner="v1")
    for g in (3, 5):
        row = next(line.split() for line in out.splitlines()
                   if line.split()[:2] == [str(g), "all"])
        rate, tau, eq1 = float(row[6]), float(row[7]), float(row[10])
        c = prof.entry(g).counters
        assert rate == round(c.num_accepted_tokens / c.num_draft_tokens, 3)
        assert tau == round(1 + c.num_accepted_tokens / c.num_drafts, 3)
        assert round(theory.expected_tokens_per_step(eq1, g), 2) == pytest.approx(tau, abs=0.01)
        # the acceptance rate read as alpha plans a tau well below the one replayed
        assert theory.expected_tokens_per_step(rate, g) < tau - 0.3


def test_the_runner_is_v2_by_default_for_ngram_and_the_plan_flags_carry_the_proposal_rate(
        capsys):
    """T8a-01 / T8a-15: vLLM 0.33 serves ngram on Model Runner V2 (a draft at every step, the
    profile says so); the V1 replay drafts on a share of the steps and its plan flags carry
    that share (--proposal-rate), never --alpha alone."""
    from specnb import replay as R

    code, out, err = run(capsys, "--gamma", "3")
    assert code == 0, err
    assert "runner v2 (Model Runner V2's n-gram kernel" in out
    c = R.replay(gammas=[3]).entry(3).counters
    assert c.num_drafts == c.num_steps and c.num_draft_tokens == 3 * c.num_steps
    assert f"gamma 3: --gamma 3 --tau {c.tau:.3f}" in out and "--proposal-rate" not in out
    code, out, err = run(capsys, "--gamma", "3", "--runner", "v1")
    c1 = R.replay(gammas=[3], runner="v1").entry(3).counters
    assert code == 0 and c1.proposal_rate < 0.2
    assert f"--tau {c1.tau:.3f} --proposal-rate {c1.proposal_rate:.3f}" in out
    assert "VLLM_USE_V2_MODEL_RUNNER=0" in out


def test_a_runner_vllm_cannot_serve_the_method_on_is_refused(capsys):
    code, out, err = run(capsys, "--method", "suffix", "--runner", "v2")
    assert code == 2 and "runner v2 does not run suffix" in err
    code, out, err = run(capsys, "--method", "draft_model", "--runner", "v1")
    assert code == 2 and "--runner is a setting of --method ngram / ngram_gpu / suffix" in err


def test_token_id_rows_and_skip_bad(capsys, tmp_path):
    log = _log(tmp_path, [{"prompt_ids": [1, 2, 3, 1, 2], "response_ids": [3, 1, 2, 9],
                           "task": "t"}, {"prompt_ids": [1]}])
    code, out, err = run(capsys, log, "--gamma", "3", "--prompt-lookup-min", "2",
                         "--prompt-lookup-max", "2", "--skip-bad", "--json")
    assert code == 0 and "1 bad row(s) skipped" in err
    e = AP.from_dict(json.loads(out)).entry(3)
    assert (e.counters.num_steps, e.counters.num_accepted_tokens) == (1, 2)


@pytest.mark.parametrize("rows,argv,msg", [
    ([], [], "holds no request: it is empty"),
    ([{"prompt": "p", "task": "t"}], [], r"log.jsonl:1: a row needs the served response"),
    ([{"prompt_ids": [1], "response_ids": [99999]}], [], "outside the tokenizer's vocabulary"),
    (None, ["--gamma", "0"], r"--gamma must be in \[1, 64\], got 0"),
    (None, ["--prompt-lookup-min", "4", "--prompt-lookup-max", "2"],
     "--prompt-lookup-min = 4 must be <= --prompt-lookup-max = 2"),
    (None, ["--method", "suffix", "--prompt-lookup-min", "2"],
     "--prompt-lookup-min is a setting of --method ngram / ngram_gpu"),
    (None, ["--suffix-decoding-min-token-prob", "2", "--method", "suffix"],
     "--suffix-decoding-min-token-prob"),
    (None, ["--context-buckets", "100", "50"], "--context-buckets must be increasing"),
    (None, ["--method", "draft_model", "--gamma", "-1"], r"--gamma must be in \[1, 64\], got -1"),
    (None, ["--gamma", "3", "100000"], r"--gamma must be in \[1, 64\], got 100000"),  # hung
    (None, ["--suffix-backend", "python"], "--suffix-backend is a setting of --method suffix"),
    (None, ["--workers", "0"], "--workers must be >= 1, got 0"),
    (None, ["--gamma", "3", "3"], "--gamma lists a value twice: 3 3"),  # trial4 C5: rows twice
    (None, ["--method", "draft_model", "--workers", "2"],
     "--workers is a setting of --method ngram / ngram_gpu / suffix"),
])
def test_bad_input_exits_2_with_one_line(capsys, tmp_path, rows, argv, msg):
    log = [] if rows is None else [_log(tmp_path, rows)]
    code, out, err = run(capsys, *log, *argv)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("specnb replay: error: ")
    assert pytest.importorskip("re").search(msg, err), err


def test_suffix_backend_named_in_the_table_and_arctic_missing_exits_2(capsys, monkeypatch):
    from specnb.replay import suffix as S

    code, out, err = run(capsys, "--method", "suffix", "--gamma", "1", "--suffix-backend",
                         "python", "--workers", "2")
    assert code == 0 and "; backend: python" in out.splitlines()[1], err
    monkeypatch.setattr(S, "arctic_version", lambda: None)
    code, out, err = run(capsys, "--method", "suffix", "--suffix-backend", "arctic")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "--suffix-backend 'arctic'" in err and "make suffix-backend" in err


def test_the_dispatch_table_names_every_methods_flags():
    assert set(CR.METHODS) == {"ngram", "ngram_gpu", "suffix", "draft_model", "eagle", "eagle3",
                               "mtp"}
    assert all(CR.METHODS[m].models and "head" in CR.METHODS[m].flags
               for m in ("eagle", "eagle3", "mtp"))
    assert CR.METHODS["draft_model"].models and not CR.METHODS["suffix"].models
    assert "prompt_lookup_min" in CR.METHODS["ngram_gpu"].flags


@pytest.mark.slow  # a fresh interpreter (about 1 s)
def test_bad_input_and_model_free_methods_never_import_torch(tmp_path):
    log = _log(tmp_path, [{"prompt": "p", "task": "t"}])
    code = ("import sys; from specnb.cli import main; "
            f"a = main(['replay', {log!r}, '--method', 'draft_model']); "
            "b = main(['replay', '--method', 'suffix', '--gamma', '1']); "
            "print(a, b, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip().splitlines()[-1] == "2 0 False"


@pytest.mark.slow  # loads the bundled target and head
def test_eagle3_row_on_the_bundled_head(capsys, tmp_path):
    """--method eagle3 without --head on the bundled target: the bundled EAGLE-3 head, its
    profile written with vLLM's counters; the MTP row on a target without MTP layers, a head
    of another format and a missing head exit 2 with one line naming the file."""
    pytest.importorskip("torch")
    out_file = tmp_path / "p.json"
    code, out, err = run(capsys, "--method", "eagle3", "--gamma", "1", "3", "--out",
                         str(out_file))
    assert code == 0, err
    assert out.startswith("eagle3 replay of") and "eagle3-head-target-4x256" in out
    prof = AP.load(out_file)
    assert prof.method == "eagle3" and prof.gammas == (1, 3)
    assert prof.entry(3).counters.num_drafts == prof.entry(3).counters.num_steps > 0
    for argv, msg in [(["--method", "mtp"], "MTP was asked for"),
                      (["--method", "eagle3", "--head", "data/models/draft-1x64"],
                       "draft-1x64/config.json: not a head"),
                      (["--method", "eagle3", "--target", "data/models/draft-1x64"],
                       "needs a head (--head PATH)")]:
        code, out, err = run(capsys, *argv)
        assert code == 2 and len(err.strip().splitlines()) == 1 and msg in err, (argv, err)


def test_out_in_a_missing_directory_exits_2_with_one_line(capsys, tmp_path):
    # was a FileNotFoundError traceback after the whole replay had run
    code, out, err = run(capsys, "--gamma", "1", "--out", str(tmp_path / "no" / "p.json"))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith("specnb replay: error: --out ") and "No such file" in err



def test_out_never_replaces_a_file_that_is_not_a_profile(capsys, tmp_path):
    # a trial wrote a profile over /etc/passwd: --out now refuses what is not a profile
    mine = tmp_path / "mine.txt"
    mine.write_text("keep me")
    code, out, err = run(capsys, "--gamma", "1", "--out", str(mine))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "not an acceptance profile: not replaced" in err and mine.read_text() == "keep me"
    assert run(capsys, "--gamma", "1", "--out", str(mine), "--force")[0] == 0
    assert run(capsys, "--gamma", "1", "--out", str(mine))[0] == 0  # a profile now
