"""specnb.vllm.read: one entry point for every input vLLM writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from specnb.vllm import read_acceptance


# ----------------------------------------------------------------- edge and bad input (r2)
from tests.vllm_support import CASES, FIELD, SCRAPE as _SCRAPE, field  # noqa: F401


def test_a_log_that_also_holds_a_scrape_or_printout_says_which_part_it_read():
    from specnb.vllm import read_acceptance

    line = ("INFO [metrics.py:100] SpecDecoding metrics: Mean acceptance length: 2.50, "
            "Accepted: 150 tokens, Drafted: 300 tokens, Per-position acceptance rate: 0.700, "
            "0.500, 0.300\n")
    scrape = _SCRAPE.format(d=100, t=300, a=150)
    header = read_acceptance(scrape + line).header
    assert any("also holds a /metrics scrape" in h for h in header), header
    printout = "num_drafts: 10\nnum_draft_tokens: 30\nnum_accepted_tokens: 15\n"
    assert any("spec_decode.py printout" in h for h in read_acceptance(printout + line).header)
    assert not any("also holds" in h for h in read_acceptance(line).header)


# --------------------------------------------------------------------------- offline printout
def test_offline_printout_is_read_not_a_prometheus_error():
    s = read_acceptance(field("metrics_offline_printout.txt")).stats
    assert f"{100 * s.acceptance_rate:.2f}" == "36.21"   # 12208 / 33712
    assert f"{s.mean_acceptance_length:.2f}" == "3.53"   # 1 + 12208 / 4816
    assert s.num_speculative_tokens == 7                 # 33712 / 4816


# ------------------------------------------------------ streamed files (issue 26, R4)
def test_streamed_log_and_scrape_read_as_the_whole_text(tmp_path):
    from specnb._stream import scan
    from specnb.vllm import read_acceptance
    from specnb.vllm.read import MARKERS, read_acceptance_scans

    log = (CASES / "vllm" / "0.33.0" / "spec_decode.log").read_text()
    noisy = "\n".join(f"INFO request {i}\n{line}" for i, line in enumerate(log.splitlines()))
    path = tmp_path / "server.log"
    path.write_text(noisy)
    whole = read_acceptance(noisy)
    streamed = read_acceptance_scans([scan(path, MARKERS, block=64)])
    assert streamed.stats.counts == whole.stats.counts
    assert streamed.stats.per_position == pytest.approx(whole.stats.per_position)
    assert streamed.header == whole.header
    prom = tmp_path / "big.prom"
    scrape = _SCRAPE.format(d=10, t=30, a=12)
    filler = "".join(f'vllm:other_total{{id="{i}"}} {i}.0\n' for i in range(200))
    prom.write_text(filler + scrape)
    read = read_acceptance_scans([scan(prom, MARKERS)])
    assert read.stats.counts == read_acceptance(filler + scrape).stats.counts
    assert not any(h.startswith("warning:") for h in read.header)


def test_a_scrape_larger_than_a_scrape_usually_is_is_warned_with_its_size(tmp_path, monkeypatch):
    from specnb._stream import scan
    from specnb.vllm import read as R

    prom = tmp_path / "big.prom"
    prom.write_text("x_total 1.0\n" * 1000 + _SCRAPE.format(d=10, t=30, a=12))
    monkeypatch.setattr(R, "LARGE_SCRAPE", 1000)
    warn = [h for h in R.read_acceptance_scans([scan(prom, R.MARKERS)]).header
            if h.startswith("warning:")]
    assert len(warn) == 1 and f"{prom.stat().st_size / 1e6:,.1f} MB" in warn[0]


# ------------------------------- files of nothing but spec-decode lines (issue 26, bigscan)
def _spec_line(i):
    a, k = 100 + i % 50, 3
    d = 60 + i % 7
    return (f"INFO 12-01 20:00:{i % 60:02d} [metrics.py:96] SpecDecoding metrics: Mean "
            f"acceptance length: {1 + a / d:.2f}, Accepted throughput: 1.00 tokens/s, Drafted "
            f"throughput: 2.00 tokens/s, Accepted: {a} tokens, Drafted: {d * k} tokens, "
            f"Per-position acceptance rate: 0.{500 + i % 400}, 0.400, 0.300, Avg Draft "
            f"acceptance rate: {100 * a / (d * k):.1f}%")


def _streamed(path, **kw):
    from specnb._stream import scan
    from specnb.vllm.read import MARKERS

    sc = scan(path, MARKERS, block=kw.pop("block", 4096), keep=kw.pop("keep", 2000))
    assert sc.rest is not None  # more kept lines than held: read again, folded as they come
    return sc


def test_a_log_of_only_spec_decode_lines_streamed_reads_as_the_whole_text(tmp_path):
    from specnb.vllm.read import read_acceptance_scans

    lines = [_spec_line(i) for i in range(3000)]
    lines[1234] = "INFO SpecDecoding metrics: Accepted: 5 tokens"  # unreadable: skipped
    lines[2000] = "vllm:spec_decode_num_drafts_total 5.0"  # a scrape line
    lines[2500:2500] = ["num_drafts: 10", "num_draft_tokens: 30"]  # a printout
    text = "\n".join(lines) + "\n"
    path = tmp_path / "spec.log"
    path.write_text(text)
    whole, streamed = read_acceptance(text), read_acceptance_scans([_streamed(path)])
    assert streamed.stats == whole.stats and streamed.header == whole.header
    assert any("line(s) [1235]" in h for h in whole.header)  # the line number quoted
    assert sum("also holds" in h for h in whole.header) == 1


def _series(n, scale=1, extra=""):
    fams = (("drafts", 10), ("draft_tokens", 30), ("accepted_tokens", 18))
    out = "".join(f"# TYPE vllm:spec_decode_num_{f} counter\n" + "".join(
        f'vllm:spec_decode_num_{f}_total{{engine="{j}",model_name="m{j % 3}"}} '
        f"{v * scale}.0\n" for j in range(n)) for f, v in fams)
    return out + "".join(
        f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="{j}",model_name='
        f'"m{j % 3}",position="{p}"}} {v * scale}.0\n' for p, v in enumerate((8, 6, 4))
        for j in range(n)) + extra


@pytest.mark.parametrize("model_name", [None, "m1"])
def test_a_scrape_of_only_spec_decode_series_streamed_reads_as_the_whole_text(tmp_path,
                                                                              model_name):
    from specnb.vllm.read import read_acceptance_scans

    before, after = tmp_path / "before.prom", tmp_path / "after.prom"
    before.write_text(_series(2000))
    after.write_text(_series(2000, scale=3))
    for paths in ([after], [before, after]):
        texts = [p.read_text() for p in paths]
        whole = read_acceptance(texts, model_name=model_name)
        streamed = read_acceptance_scans([_streamed(p) for p in paths], model_name=model_name)
        assert streamed.stats == whole.stats and streamed.header == whole.header
    assert whole.stats.counts.label_sets == (2000 if model_name is None else 667)


@pytest.mark.parametrize("extra", [
    'vllm:spec_decode_num_drafts_total{engine="7",model_name="m1"} 1.0\n',  # pasted twice
    'vllm:spec_decode_num_drafts_total{engine="x",model_name="m1"} -1.0\n',
    "vllm:spec_decode_num_drafts_total{engine=| 5\n",
])
def test_a_streamed_scrape_is_refused_with_the_whole_texts_message(tmp_path, extra):
    from specnb.vllm.read import read_acceptance_scans

    path = tmp_path / "bad.prom"
    path.write_text(_series(500, extra=extra))
    with pytest.raises(ValueError) as whole:
        read_acceptance(path.read_text())
    with pytest.raises(ValueError) as streamed:
        read_acceptance_scans([_streamed(path)])
    assert str(streamed.value) == str(whole.value)


def test_a_streamed_log_is_folded_in_memory_that_does_not_grow_with_it(tmp_path):
    import tracemalloc

    from specnb.vllm.read import read_acceptance_scans

    peaks = []
    for n in (200, 2000, 8000):  # the first warms up (imports)
        path = tmp_path / f"spec{n}.log"
        path.write_text("\n".join(_spec_line(i) for i in range(n)) + "\n")
        tracemalloc.start()
        read_acceptance_scans([_streamed(path, block=64 << 10, keep=16 << 10)])
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    # four times the lines (0.7 and 2.7 MB), not more memory: a block, not the kept lines
    # (holding them all: 1.1 and 3.7 MB)
    assert peaks[2] < 1.2 * peaks[1] and peaks[2] < 1.0e6, peaks
