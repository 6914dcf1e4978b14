"""specnb.serving.calibrate: reading measurements, fitting efficiencies, predicting held-out
rows, coded calibration notes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from specnb import data
from specnb import serving as S


@pytest.mark.parametrize("overlap", [0.0, 1.0])
def test_calibration_recovers_known_efficiencies(overlap):
    true = S.Efficiency(bandwidth=0.8, compute=0.5, fixed_ms=2.0, token_us=5.0, overlap=overlap)
    st_ = S.setup("H200", "Llama-3.1-8B", "self")
    b = np.array([1, 4, 16, 64, 256, 1, 4, 16, 64, 256, 8, 128])
    s = np.array([128, 128, 128, 128, 128, 8000, 8000, 8000, 8000, 8000, 30000, 512])
    q = np.array([1, 1, 4, 4, 8, 1, 4, 1, 8, 1, 2, 16])
    ms = S.step_time_ms(st_.target, st_.gpu, b, s, q, efficiency=true)
    df = pd.DataFrame({"role": "target", "batch_size": b, "context": s, "query_tokens": q,
                       "ms": ms})
    cal = S.calibrate(st_, df)
    got = cal.setup.target_efficiency
    assert got.overlap == overlap
    for f in ("bandwidth", "compute", "fixed_ms", "token_us"):
        assert getattr(got, f) == pytest.approx(getattr(true, f), rel=1e-6), f
    assert cal.report["relative_error"].abs().max() < 1e-9
    assert cal.setup.draft_efficiency == st_.draft_efficiency  # no draft rows: untouched


def test_calibration_csv_file(tmp_path):
    """A CSV in the calibration format (as a transformers measurement on one GPU would give:
    target rows only, ms to 2 decimals) is read and fitted directly."""
    true = S.Efficiency(bandwidth=0.85, compute=0.6, fixed_ms=3.0, token_us=10.0)
    st_ = S.setup("H200", "Llama-3.1-8B", "eagle3")
    grid = [(b, s, q) for b in (1, 4, 16, 64) for s in (512, 4096) for q in (1, 4)]
    lines = ["role,batch_size,context,query_tokens,ms"]
    for b, s, q in grid:
        ms = S.step_time_ms(st_.target, st_.gpu, b, s, q, efficiency=true)
        lines.append(f"target,{b},{s},{q},{ms:.2f}")
    p = tmp_path / "steps.csv"
    p.write_text("\n".join(lines) + "\n")
    cal = S.calibrate(st_, p)
    assert cal.report["relative_error"].abs().max() < 0.005
    assert S.t_plain_ms(cal.setup, 256, 8192) == pytest.approx(
        S.step_time_ms(st_.target, st_.gpu, 256, 8192, efficiency=true), rel=0.02)


@pytest.mark.parametrize("text, match", [
    ("role,batch_size,context,ms\ntarget,1,10,5\n", "missing column.*query_tokens"),
    ("role,batch_size,context,query_tokens,ms\ntarget,1,10,1,0\n", "row 2: ms must be a positive"),
    ("role,batch_size,context,query_tokens,ms\ntarget,1,10,1,-3\n", "ms must be a positive"),
    ("role,batch_size,context,query_tokens,ms\ntarget,1,10,1,abc\n", "ms must be a positive"),
    ("role,batch_size,context,query_tokens,ms\nverify,1,10,1,3\n", "role must be 'target' or"),
    ("role,batch_size,context,query_tokens,ms\ntarget,1.5,10,1,3\n", "batch_size must be an "
                                                                      "integer >= 1"),
    ("role,batch_size,context,query_tokens,ms\n", "no rows"),
    # trial 6 T6-C3: a cell no float holds is too large, shown by its length
    ("role,batch_size,context,query_tokens,ms\ntarget,1,10,1," + "9" * 400 + "\n",
     r"row 2: ms must be a positive time in milliseconds, got 999999999999\.\.\.9999 \(400 "
     r"digits\): too large"),
    ("role,batch_size,context,query_tokens,ms\ntarget,1,10,1,3\ntarget,2,10,1," + "9" * 400
     + "\n", r"row 3: ms .*\(400 digits\): too large"),
    ("role,batch_size,context,query_tokens,ms\ntarget," + "9" * 400 + ",10,1,3\n",
     r"row 2: batch_size must be an integer >= 1 \(at most 2\*\*53\), got .*: too large"),
    ("role,batch_size,context,query_tokens,ms\ntarget,1,10,1,\n", "got a missing value"),
    ("", "empty file"),
])
def test_bad_calibration_csv(tmp_path, text, match):
    p = tmp_path / "bad.csv"
    p.write_text(text)
    with pytest.raises(ValueError, match=match):
        S.read_measurements(p)


def test_calibration_rejects_draft_rows_without_a_draft_model():
    df = pd.DataFrame({"role": ["draft"], "batch_size": [1], "context": [1], "query_tokens": [1],
                       "ms": [1.0]})
    with pytest.raises(ValueError, match="no model to time"):
        S.calibrate(S.setup("H100", "Llama-3.1-8B", "ngram"), df)
    with pytest.raises(ValueError, match="fit must be one of"):
        S.calibrate(S.setup("H100", "Llama-3.1-8B", "self"), df, fit=("speed",))


def test_measured_h200_files_calibrate_and_predict_held_out_rows():
    from specnb import data
    path = data.DATA_DIR / "measured" / "h200_llama_steps.csv"
    rows = S.read_measurements(path)
    assert set(rows["role"]) == {"target", "draft"} and (rows["gpu"] == "NVIDIA H200").all()
    st = S.setup("H200", "Llama-3.1-8B", "Llama-3.2-1B")
    train = rows["batch_size"] <= 16
    cal = S.calibrate(st, rows[train])
    # the report of calibrate is predict_measurements on the rows it was fitted on
    again = S.predict_measurements(cal.setup, rows[train])
    np.testing.assert_allclose(again["predicted_ms"], cal.report["predicted_ms"])
    held = S.predict_measurements(cal.setup, rows[~train])
    assert len(held) == int((~train).sum()) and held["predicted_ms"].gt(0).all()
    np.testing.assert_allclose(held["relative_error"],
                               held["predicted_ms"] / held["ms"] - 1.0)


def test_predict_measurements_refuses_draft_rows_without_a_draft_model():
    rows = pd.DataFrame({"role": ["draft"], "batch_size": [1], "context": [10],
                         "query_tokens": [1], "ms": [1.0]})
    with pytest.raises(ValueError, match="no model to time"):
        S.predict_measurements(S.setup("H200", "Llama-3.1-8B", "ngram"), rows)


@pytest.mark.parametrize("text, match", [
    ("role,batch_size,context,query_tokens,ms\ntarget,1,10,1,3,9\n",
     r"a row has more fields than the header \(5: role, batch_size"),
    ("role,batch_size,context,query_tokens,ms\ntarget,1,10,1,3\ntarget,2,10,1,3,9\n",
     "not a regular CSV.*line 3"),
    ("role,batch_size,context,query_tokens,ms,ms\ntarget,1,10,1,3,4\n",
     "column.s. ms appear more than once"),
    ("role,batch_size,context,query_tokens,ms\ntarget,1e30,10,1,3\n",
     r"batch_size must be an integer >= 1 \(at most 2\*\*53\), got 1e\+30"),
    ("role,batch_size,context,query_tokens,ms\ntarget,,10,1,3\n",
     "batch_size must be an integer >= 1 .*got a missing value"),
    ("role,batch_size,context,query_tokens,ms\n,1,10,1,3\n",
     "role must be 'target' or 'draft', got a missing value"),
    ("role,batch_size,context,query_tokens,ms\ntarget,1,10,1,-1\n",
     "ms must be a positive time in milliseconds, got -1$"),
])
def test_calibration_csv_structure_errors(tmp_path, text, match):
    p = tmp_path / "m.csv"
    p.write_text(text)
    with pytest.raises(ValueError, match=match):
        S.read_measurements(p)


def test_calibration_csv_paths_bom_crlf_and_duplicate_rows(tmp_path):
    with pytest.raises(ValueError, match="is a folder"):
        S.read_measurements(tmp_path)
    with pytest.raises(FileNotFoundError, match="calibration CSV .*no.csv' does not exist"):
        S.read_measurements(tmp_path / "no.csv")
    p = tmp_path / "m.csv"
    p.write_bytes(("\ufeffrole,batch_size,context,query_tokens,ms\r\n"
                   + "target,1,1024,1,7.1\r\n" * 6).encode("utf-8"))
    assert list(S.read_measurements(p)["ms"]) == [7.1] * 6
    cal = S.calibrate(S.setup("H200", "Llama-3.1-8B", "ngram"), p)
    # six copies of one point still determine one parameter: the note says so
    (under,) = [n.message for n in cal.notes if n.code == "fit-underdetermined"]
    assert "only 1 distinct (batch_size, context, query_tokens) point (6 rows)" in under
    # one row: singular both (fault 40)
    p.write_text("role,batch_size,context,query_tokens,ms\ntarget,1,1024,1,7.1\n")
    (under,) = [n.message for n in S.calibrate(S.setup("H200", "Llama-3.1-8B", "ngram"),
                                               p).notes if n.code == "fit-underdetermined"]
    assert "only 1 distinct (batch_size, context, query_tokens) point (1 row)" in under


def test_calibration_notes_measurements_labelled_with_another_gpu_or_model():
    path = data.DATA_DIR / "measured" / "h200_llama_steps.csv"
    same = S.calibrate(S.setup("H200", "Llama-3.1-8B", "Llama-3.2-1B"), path)
    assert not {"measured-on-other-gpu", "measured-on-other-model"} & {n.code for n in same.notes}
    other = S.calibrate(S.setup("H100", "Llama-3.1-8B", "eagle3"), path)
    gpu_note = [n.message for n in other.notes if n.code == "measured-on-other-gpu"]
    assert gpu_note[0].startswith("the measurements name GPU NVIDIA H200, the setup H100-SXM")
    model_note = [n.message for n in other.notes if n.code == "measured-on-other-model"]
    assert model_note[0].startswith("the draft rows were measured on Llama-3.2-1B")


def test_one_batch_fit_is_noted():
    """Fault 18: a fit on rows that all have one batch size says so (code fit-one-batch)."""
    rows = S.magicdec_table("table3a")
    cal, _ = S.fit_and_predict("table3a", max_train_batch=32)
    assert "fit-one-batch" in {n.code for n in cal.notes}
    cal48, _ = S.fit_and_predict("table3a", max_train_batch=48)
    assert "fit-one-batch" not in {n.code for n in cal48.notes}
    assert rows["batch_size"].min() == 32


def test_calibration_recovers_a_kv_latency_floor_when_asked():
    """A decode kernel without split-KV (Efficiency.kv_token_ns): synthetic steps made with a
    known floor are fitted back when ``kv_token_ns`` is among the fitted fields, and left at
    the setup's value (0) by the default fields."""
    # compute at its default: at these short contexts it is collinear with token_us
    true = S.Efficiency(bandwidth=0.9, compute=0.722, fixed_ms=1.5, token_us=2.0, overlap=0.0,
                        kv_token_ns=13.0)
    st_ = S.setup("H200", "Llama-3.1-8B", "self")
    b = np.array([1, 2, 8, 16, 64, 256, 1, 4, 16, 64, 1, 8, 32, 128])
    s = np.array([512, 512, 512, 512, 512, 512, 2048, 2048, 2048, 2048, 1024, 1024, 1024, 256])
    q = np.array([1, 4, 1, 4, 1, 4, 1, 4, 1, 2, 1, 1, 4, 1])
    ms = S.step_time_ms(st_.target, st_.gpu, b, s, q, efficiency=true)
    df = pd.DataFrame({"role": "target", "batch_size": b, "context": s, "query_tokens": q,
                       "ms": ms})
    cal = S.calibrate(st_, df, fit=S.MEASURED_KV_FLOOR_FIT)
    got = cal.setup.target_efficiency
    assert got.kv_token_ns == pytest.approx(13.0, rel=1e-6)
    assert got.bandwidth == pytest.approx(0.9, rel=1e-6)
    assert cal.report["relative_error"].abs().max() < 1e-9
    assert S.calibrate(st_, df).setup.target_efficiency.kv_token_ns == 0.0
    with pytest.raises(ValueError, match="kv_token_ns"):
        S.Efficiency(kv_token_ns=-1.0)


def test_an_underdetermined_fit_moves_only_what_the_rows_determine():
    """T5-M7: one row the defaults already match (5.99 ms predicted, 6.0 measured) must leave
    every parameter at its default (the note says unfitted directions keep their defaults):
    the batch-16 plan stays 1.58x (it fell to 1.03x when the minimum-norm solve spread the
    change over every parameter from zero)."""
    import pandas as pd

    st = S.setup("H100-SXM", "Llama-3.1-8B", "eagle3")
    assert round(float(S.t_plain_ms(st, 1, 2000)), 2) == 5.99
    one = pd.DataFrame({"role": ["target"], "batch_size": [1], "context": [2000],
                        "query_tokens": [1], "ms": [6.0]})
    cal = S.calibrate(st, one)
    e0, e1 = st.target_efficiency, cal.setup.target_efficiency
    # the row sits 0.2 % above the default: no parameter moves by more than that share
    miss = 6.0 / float(S.t_plain_ms(st, 1, 2000)) - 1
    assert 0 < miss < 0.005
    assert abs(e1.bandwidth / e0.bandwidth - 1) <= 2 * miss
    assert abs(e1.fixed_ms / e0.fixed_ms - 1) <= 2 * miss
    assert e0.token_us == 0.0 and e1.token_us < 0.1  # was 262 us: a per-token cost from nothing
    assert e1.overlap == e0.overlap  # ties in the overlap grid keep the default
    assert "fit-underdetermined" in [n.code for n in cal.notes]
    for b in (1, 16):
        assert round(float(S.speedup(cal.setup, b, 2000, 3, alpha=0.7)), 2) == \
            round(float(S.speedup(st, b, 2000, 3, alpha=0.7)), 2)
    assert round(float(S.speedup(cal.setup, 16, 2000, 3, alpha=0.7)), 2) == 1.58
    # the row is still fitted: a slower measurement moves the step time to it
    slow = S.calibrate(st, one.assign(ms=[7.5]))
    assert round(float(S.t_plain_ms(slow.setup, 1, 2000)), 2) == 7.5
