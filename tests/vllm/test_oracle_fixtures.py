"""Replay the oracle's fixtures (tests/cases/vllm/<version>/, written by ``make oracle`` from
vLLM's own code) without vLLM: the config checker gives vLLM's verdict, the log and metrics
readers recover the counts that produced vLLM's own output, and the bench reader reads every
file ``vllm bench serve`` wrote.

vLLM's verdict on a config, for the checker: rejected when ``create_speculative_config``
raised (or the argument parser stopped), or when the schedule it accepted is then refused by
the scheduler at engine start (``later.stage == "scheduler"``); a schedule that only the GPU
runner's CUDA-graph setup refuses (the empty one) stays accepted, and the checker must say so
with the warning ``schedule-empty-fails-later``.

Configs whose verdict depends on the checkpoint or the serve flags (``target_dependent``) are
replayed with the stand-ins' config.json as ``draft_config`` / ``target_config``.

Known disagreements are listed, with the reason, in tests/cases/vllm/known_disagreements.txt;
each is an xfail(strict) so a fix must remove it from the list.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from specnb.vllm import check_speculative_config
from specnb.vllm._versions import versions_checked

CASES = Path(__file__).resolve().parent.parent / "cases" / "vllm"
VERSIONS = sorted(p.name for p in CASES.iterdir() if (p / "configs.jsonl").exists())


def _known():
    out = {}
    path = CASES / "known_disagreements.txt"
    if path.exists():
        for line in path.read_text().splitlines():
            line = line.split("  #", 1) if not line.startswith("#") else ["", ""]
            body, why = line[0].strip(), (line[1].strip() if len(line) > 1 else "")
            if body:
                version, cid = body.split(None, 1)
                out[(version, cid)] = why
    return out


KNOWN = _known()


def _configs(version):
    path = CASES / version / "configs.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def vllm_verdict(rec) -> bool:
    """True when vLLM starts with this config (see the module docstring)."""
    if rec["verdict"] != "accepted":
        return False
    later = rec.get("later") or {}
    return not (later.get("verdict") == "rejected" and later.get("stage") == "scheduler")


def string_judged(version):
    return [r for r in _configs(version) if not r["target_dependent"] and r["argv"] is None]


def specnb_verdict(rec, version):
    check = check_speculative_config(rec["input"], vllm_version=version)
    return check.accepted, check


def _params():
    out = []
    for v in VERSIONS:
        for r in string_judged(v):
            marks = []
            if (v, r["id"]) in KNOWN:
                marks.append(pytest.mark.xfail(strict=True, reason=KNOWN[(v, r["id"])]))
            out.append(pytest.param(v, r, id=f"{v}:{r['id']}", marks=marks))
    return out


# ------------------------------------------------------------------ tables and their wheels

REPO = CASES.parent.parent.parent
TABLES = REPO / "specnb" / "vllm" / "versions"


def _releases(tabled=True):
    """oracle/releases.txt: a release a line; "RELEASE untabled: why" where no table could be made
    yet (skipped unless ``tabled`` is False)."""
    text = (REPO / "oracle" / "releases.txt").read_text()
    rows = [ln.split(None, 1) for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    return [r[0] for r in rows if not tabled or len(r) == 1]


def _table(version):
    return json.loads((TABLES / f"{version}.json").read_text())


def test_every_release_listed_has_its_table():
    assert sorted(p.stem for p in TABLES.glob("*.json")) == sorted(_releases())
    assert set(_releases()) <= set(_releases(tabled=False))


@pytest.mark.parametrize("version", [p.stem for p in sorted(TABLES.glob("*.json"))])
def test_every_table_was_made_from_the_wheel_it_names(version):
    """The table's release, its wheel's version and file name agree; the fixtures (where the
    release has them) were made from the same wheel (``make oracle-check`` hashes the wheel it
    installs and compares, oracle/compare.py). Nothing is downloaded here."""
    t = _table(version)
    wheel = t["wheel"]
    assert t["vllm"] == version == wheel["version"]
    assert re.fullmatch(rf"vllm-{re.escape(version)}(-\d\w*)?-[\w.]+-[\w.]+-[\w.]+\.whl", wheel["filename"])
    assert re.fullmatch(r"[0-9a-f]{64}", wheel["sha256"])
    assert re.fullmatch(r"\d+\.\d+(\.\d+)?", t["pydantic_version"])
    assert isinstance(t["quantization_methods"], list) and t["quantization_methods"]
    meta = CASES / version / "oracle.json"
    if meta.exists():
        assert json.loads(meta.read_text())["wheel"] == wheel
    # how the flag's text is read, only where the release has the flag (oracle/table.py)
    if t["speculative_config_flag"]:
        assert t["speculative_config_text"] in ("json", "ast.literal_eval")
    else:
        assert "speculative_config_text" not in t


FLAGS = REPO / "specnb" / "vllm" / "flags"


@pytest.mark.parametrize("version", [p.stem for p in sorted(FLAGS.glob("*.json"))])
def test_every_flag_table_was_made_from_the_wheel_of_its_release_table(version):
    """specnb/vllm/flags/<v>.json (oracle/table.py --flags, the same pass as the release table)
    names the wheel its release table names; its parser's flags are there."""
    flags = json.loads((FLAGS / f"{version}.json").read_text())
    assert flags["vllm"] == version and flags["wheel"] == _table(version)["wheel"]
    assert flags["model_tag"] in ("make_arg_parser", "serve subcommand")
    assert {"--model", "--max-model-len", "--tensor-parallel-size"} <= set(flags["flags"])
    assert ("--speculative-config" in flags["flags"]) == \
        _table(version)["speculative_config_flag"]


def test_every_fixture_release_has_its_flag_table():
    assert set(VERSIONS) <= {p.stem for p in FLAGS.glob("*.json")}


def test_no_two_tables_name_the_same_wheel():
    shas = [_table(p.stem)["wheel"]["sha256"] for p in TABLES.glob("*.json")]
    assert len(shas) == len(set(shas))


def test_every_fixture_version_has_a_profile():
    assert VERSIONS, "no oracle fixtures under tests/cases/vllm/"
    assert set(VERSIONS) <= set(versions_checked())


def test_corpus_is_large_enough():
    for v in VERSIONS:
        assert len(_configs(v)) >= 200, v


@pytest.mark.fast_sample(every=20, groups=2)  # make check: a sample per release and kind
@pytest.mark.parametrize("version,rec", _params())
def test_checker_gives_vllms_verdict(version, rec):
    ok, check = specnb_verdict(rec, version)
    expected = vllm_verdict(rec)
    assert ok == expected, (f"vLLM {version}: {rec['verdict']} at {rec['stage']} "
                            f"({rec.get('exception')}: {rec.get('message')}); specnb: "
                            f"{[(f.severity, f.code, f.message[:120]) for f in check]}")
    later = rec.get("later") or {}
    if later.get("verdict") == "rejected" and later.get("stage") != "scheduler":
        assert "schedule-empty-fails-later" in {f.code for f in check}


# ------------------------------------------------------------------ logs and metrics

def _logs(version):
    path = CASES / version / "logs.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] \
        if path.exists() else []


@pytest.mark.parametrize("version", VERSIONS)
def test_log_reader_recovers_the_counts(version):
    from specnb.vllm import log_counts
    recs = _logs(version)
    assert recs
    for rec in recs:
        counts = log_counts("\n".join(rec["lines"]))
        assert counts.accepted_tokens == sum(i["num_accepted_tokens"] for i in rec["intervals"])
        assert counts.draft_tokens == sum(i["num_draft_tokens"] for i in rec["intervals"])
        drafts = sum(i["num_drafts"] for i in rec["intervals"])
        # the line prints no draft count: the reader derives it from the mean acceptance
        # length, printed with 2 decimals
        assert math.isclose(counts.drafts, drafts, rel_tol=0.02), (rec["id"], counts)


@pytest.mark.parametrize("version", VERSIONS)
def test_metrics_reader_recovers_the_counts(version):
    from specnb.vllm import read_metrics
    path = CASES / version / "metrics.jsonl"
    recs = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    assert recs
    for rec in recs:
        counts = read_metrics((CASES / version / rec["file"]).read_text())
        eng = rec["engines"].values()
        assert counts.drafts == sum(e["num_drafts"] for e in eng)
        assert counts.draft_tokens == sum(e["num_draft_tokens"] for e in eng)
        assert counts.accepted_tokens == sum(e["num_accepted_tokens"] for e in eng)
        per_pos = [sum(e["accepted_per_pos"][i] for e in eng)
                   for i in range(rec["num_speculative_tokens"])]
        assert list(counts.accepted_per_position) == per_pos
        assert counts.label_sets == len(rec["engines"])


# ------------------------------------------------------------------ bench files

def _bench_inputs(version):
    path = CASES / version / "bench" / "inputs.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] \
        if path.exists() else []


@pytest.mark.parametrize("version", VERSIONS)
def test_bench_reader_reads_every_file(version):
    from specnb.vllm import read_bench, read_bench_results
    inputs = _bench_inputs(version)
    assert inputs
    saved = [i for i in inputs if i["mode"] == "--save-result"]
    appended = read_bench_results(CASES / version / "bench" / "appended.jsonl")
    # --append-result: one object a line, one per run, in run order
    assert [r["label"] for r in appended] == [i["run"] for i in inputs
                                              if i["mode"] == "--append-result"]
    assert read_bench(CASES / version / "bench" / "appended.jsonl") == appended[-1]
    for inp in saved:
        run = read_bench(CASES / version / inp["file"])
        assert run["label"] == inp["run"]
        before, after = inp["server_counts_before"], inp["server_counts_after"]
        if inp["num_speculative_tokens"] is None:
            assert "spec_decode_num_drafts" not in run
            continue
        # the bench's spec-decode section is the /metrics delta over the run
        drafts = after["num_drafts"] - before["num_drafts"]
        assert run["spec_decode_num_drafts"] == drafts
        assert run["spec_decode_draft_tokens"] == after["num_draft_tokens"] - before["num_draft_tokens"]
        accepted = after["num_accepted_tokens"] - before["num_accepted_tokens"]
        assert run["spec_decode_accepted_tokens"] == accepted
        assert math.isclose(run["spec_decode_acceptance_length"], 1 + accepted / drafts)
        from specnb.vllm import per_position_rates
        per_pos = [a - b for a, b in zip(after["accepted_per_pos"], before["accepted_per_pos"])]
        assert per_position_rates(run) == pytest.approx([p / drafts for p in per_pos])


@pytest.mark.parametrize("version", VERSIONS)
def test_compare_bench_flags_and_shows(version):
    from specnb.advise.bench import compare_bench
    b = CASES / version / "bench"
    same = compare_bench(b / "spec-k3.json", b / "baseline.json")
    assert "input-lengths-differ" not in {n.code for n in same.comparability}
    longer = compare_bench(b / "spec-k5-longer-inputs.json", b / "baseline.json")
    assert "input-lengths-differ" in {n.code for n in longer.comparability}
    on = json.loads((b / "spec-k3.json").read_text())
    rows = {(r.metric, r.stat) for r in same.table.itertuples()}
    assert ("request goodput", "") in rows and on["request_goodput"] is not None
    assert ("peak output throughput", "") in rows and ("peak concurrent requests", "") in rows
    assert {("TPOT", "std"), ("TTFT", "std"), ("ITL", "std")} <= rows
    text = str(same)
    rates = on["spec_decode_per_position_acceptance_rates"]
    assert "per-position acceptance (ON) " + ", ".join(
        f"{i}: {100 * r:.1f} %" for i, r in enumerate(rates)) in text
    # an --append-result file compares too (its newest run)
    assert compare_bench(b / "appended.jsonl", b / "baseline.json").verdict


# ------------------------------------------------------------------ configs that need the target

def _standins(root: Path) -> dict:
    """Write the oracle's stand-in checkpoints (config.json only) under ``root``."""
    data = json.loads((CASES / "standins.json").read_text())
    for name, s in data["local"].items():
        (root / name).mkdir(parents=True, exist_ok=True)
        (root / name / "config.json").write_text(json.dumps(s["config"]))
    return data


def _flag(args, name, default=None):
    return int(args[args.index(name) + 1]) if name in args else default


def _target_params():
    out = []
    for v in VERSIONS:
        for r in _configs(v):
            if r["target_dependent"] and r["argv"] is None:
                marks = []
                if (v, r["id"]) in KNOWN:
                    marks.append(pytest.mark.xfail(strict=True, reason=KNOWN[(v, r["id"])]))
                out.append(pytest.param(v, r, id=f"{v}:{r['id']}", marks=marks))
    return out


@pytest.mark.fast_sample(every=20, groups=2)  # make check: a sample per release and kind
@pytest.mark.parametrize("version,rec", _target_params())
def test_target_aware_checks_give_vllms_verdict(version, rec, tmp_path):
    data = _standins(tmp_path)
    text = rec["input"].replace("{standins}", str(tmp_path))
    try:
        cfg = json.loads(text)
    except ValueError:
        cfg = None
    draft = None
    if isinstance(cfg, dict):
        model = cfg.get("model")
        if isinstance(model, str) and model in data["hub"]:
            draft = data["local"][data["hub"][model]]["config"]
    target = data["local"][rec["target"]]["config"]
    check = check_speculative_config(
        text, vllm_version=version, draft_config=draft, target_config=target,
        tensor_parallel_size=_flag(rec["serve_args"], "--tensor-parallel-size", 1),
        max_model_len=_flag(rec["serve_args"], "--max-model-len"))
    assert check.accepted == vllm_verdict(rec), (
        f"vLLM {version}: {rec['verdict']} at {rec['stage']} ({rec.get('exception')}: "
        f"{rec.get('message')}); specnb: {[(f.severity, f.code) for f in check]}")
