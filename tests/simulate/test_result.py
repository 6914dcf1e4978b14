"""specnb/simulate/result.py: the bench-format file, read by specnb's own bench readers as a
real `vllm bench serve --save-result` file."""

import json

import numpy as np
import pytest

from specnb import serving as S
from specnb import simulate as M
from specnb.vllm import bench_point, bench_summary, read_bench


def _sim():
    st = S.setup("H100-SXM", "Llama-3.1-8B", "eagle3")
    w = M.synthetic(40, 300, 20, concurrency=8, seed=3)
    return M.simulate(st, w, [M.policy("off"), M.policy("static", k=3)],
                      acceptance=M.acceptance(tau=2.5, gamma=3), seed=1), w


def test_metrics_are_computed_as_vllm_bench_serve_does():
    sim, w = _sim()
    r, tr = sim.results["k=3"], sim.traces["k=3"]
    dur = tr.finish_s.max() - tr.send_s.min()
    assert r["duration"] == pytest.approx(dur)
    assert r["output_throughput"] == pytest.approx(w.output_len.sum() / dur)
    assert r["total_token_throughput"] == pytest.approx((w.output_len.sum()
                                                         + w.input_len.sum()) / dur)
    tpot = ((tr.finish_s - tr.first_token_s) / (w.output_len - 1)) * 1000
    assert r["mean_tpot_ms"] == pytest.approx(tpot.mean())
    assert r["p99_ttft_ms"] == pytest.approx(np.percentile((tr.first_token_s - tr.send_s)
                                                           * 1000, 99))
    assert r["spec_decode_acceptance_length"] == pytest.approx(
        1 + tr.num_accepted_tokens / tr.num_drafts)
    assert len(r["spec_decode_per_position_acceptance_rates"]) == 3
    # with speculation a streamed chunk holds several tokens: ITL above TPOT
    assert r["mean_itl_ms"] > r["mean_tpot_ms"]
    assert "spec_decode_num_drafts" not in sim.results["off"]


def test_specnbs_bench_readers_take_the_files(tmp_path):
    sim, _ = _sim()
    paths = {}
    for name, r in sim.results.items():
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(json.dumps(r))
    on, off = bench_point(paths["k=3"]), bench_point(paths["off"])
    assert on["speculation"] and not off["speculation"] and on["gamma"] == 3
    assert on["concurrency"] == 8 and on["tau"] == pytest.approx(
        sim.results["k=3"]["spec_decode_acceptance_length"])
    assert read_bench(paths["off"])["mean_tpot_ms"] == sim.results["off"]["mean_tpot_ms"]
    assert len(bench_summary(paths["k=3"])) > 0
