"""benchmarks/bench_measure_loops.py: a small run prints its timing table per loop, the speedup
table, the fit-quality line (and quotes t_round only when both fits reach R2_MIN), the measured
host time per round for every gamma, and its goal lines (slow: loads and runs the bundled
models); its forward timer leaves the models as it found them."""

import importlib.util
import inspect
import re
import sys
import time
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent.parent / "benchmarks" / "bench_measure_loops.py"


def _bench():
    sys.path.insert(0, str(BENCH.parent))
    spec = importlib.util.spec_from_file_location("bench_measure_loops", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_forward_timer_counts_forward_time_and_is_undone():
    """No torch needed: any object whose call goes through ``self.forward``, as nn.Module's."""
    bench = _bench()

    class Model:
        def __call__(self, *a, **k):
            return self.forward(*a, **k)

        def forward(self, x, scale=2):
            t = time.process_time()
            while time.process_time() - t < 0.02:
                pass
            return x * scale

    m = Model()
    inside = [0.0]
    undo = bench.timed_forwards([m], inside)
    assert "scale" in inspect.signature(m.forward).parameters  # logits_to_keep stays visible
    assert m(1, scale=3) == 3
    assert inside[0] >= 0.02
    undo()
    assert "forward" not in m.__dict__ and m(1) == 2


@pytest.mark.slow
def test_a_small_run_prints_its_figures_fit_quality_and_goal_lines(capsys):
    pytest.importorskip("torch")
    bench = _bench()
    gammas = (1, 2)
    assert bench.main(["--per-task", "1", "--gamma", *map(str, gammas), "--max-new-tokens",
                       "8", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    # the timing model per loop and the speedup per loop, both loops
    table = out.split("timing model per loop")[1].split("speedup per loop")[0]
    assert re.search(r"^transformers\s", table, re.M) and re.search(r"^reference\s", table, re.M)
    speed = out.split("speedup per loop")[1].split("fit quality")[0]
    for loop in ("transformers", "reference"):
        assert {int(g) for g in re.findall(rf"^{loop}\s+\S+\s+(\d+)\s", speed, re.M)} == \
            set(gammas)
    # the fit-quality lines (r2, and the residual in ms per run), and t_round quoted only when both fits are good enough
    m = re.search(r"fit quality: r2 transformers (-?[\d.]+|nan), reference (-?[\d.]+|nan) "
                  rf"\(below {bench.R2_MIN:g} the fitted t_round is not quoted\)", out)
    assert m, out
    r2 = [float(v) for v in m.groups()]
    assert re.search(r"^fit residual \(rms per run\): transformers [\d.]+ ms, reference [\d.]+ ms",
                     out, re.M)
    quoted = re.search(r"^t_round: transformers [\d.]+ ms, reference [\d.]+ ms", out, re.M)
    assert bool(quoted) == (min(r2) >= bench.R2_MIN)
    assert ("the fit is too poor to quote" in out) == (not quoted)
    # the machine's load, the measured host time per round for every gamma beside the minimal
    # loop's and their ratio, then the goal lines
    assert re.search(r"^machine: load average \(1 min\) [\d.]+ before and [\d.]+ after .*: "
                     r"(loaded|quiet)", out, re.M)
    for g in gammas:
        h = re.search(rf"gamma {g}: ([\d.]+) ms per round over \d+ rounds \(forwards \d+ % of "
                      r"the CPU time\); minimal loop ([\d.]+) ms, reference / minimal ([\d.]+)",
                      out)
        assert h, out
        ms, mm, ratio = map(float, h.groups())
        assert ratio == pytest.approx(ms / mm, abs=0.01)
    goals = [ln for ln in out.splitlines() if ln.startswith(("goal:", "reference loop host"))]
    assert len(goals) >= 2 and all(ln.rstrip().endswith("met") or "MISSED" in ln
                                   for ln in goals)


@pytest.mark.slow
def test_the_minimal_loop_decodes_greedily():
    """The yardstick loop is a speculative loop: at T = 0 its tokens are plain greedy
    decoding's, at several gammas, and it counts one round per target forward."""
    pytest.importorskip("torch")
    from specnb import measure as M

    bench = _bench()
    tgt, tok = M.load_model(M.BUNDLED_TARGET, device="cpu")
    dm = M.load_model(M.BUNDLED_DRAFTS[1], device="cpu", need_tokenizer=False)[0]
    items = M.load_prompts(per_task=1)[:4]
    for x in M.encode_prompts(tok, items, max_new_tokens=16, context=256):
        plain = M.run_generate(tgt, x, max_new_tokens=16).tokens
        for g in (1, 3, 5):
            toks, rounds = bench.minimal_loop(tgt, dm, x, gamma=g, max_new_tokens=16)
            n = len(plain)  # plain greedy stops at the end-of-sequence token; this loop does not
            assert toks[:n] == plain and len(toks) == 16
            assert 16 / (g + 1) <= rounds <= 16
