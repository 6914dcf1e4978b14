"""The published tables: provenance, loading, and the paper's own inconsistencies."""

import pytest

from specnb import article, data

TASKS = ["mtbench", "humaneval", "gsm8k", "alpaca", "cnndm"]


def test_names_and_provenance_columns():
    names = data.names()
    for required in ["eagle3_table1", "eagle3_table3_sglang_batch", "eagle3_table4_sglang_bs1",
                     "eagle3_table5_vllm_batch", "leviathan_table2_t5", "leviathan_table3_alpha",
                     "leviathan_table4_theory_vs_measured", "vllm_methods", "gpu_prices"]:
        assert required in names
    for name in names:
        df = data.load(name)
        assert len(df) > 0, name
        for col in data.PROVENANCE_COLUMNS:
            assert col in df.columns, (name, col)
        assert (df["source"] != "").all(), name
        assert (df["table"] != "").all(), name


def test_unknown_name_lists_valid_ones():
    with pytest.raises(ValueError) as info:
        data.load("eagle4_table1")
    assert "eagle3_table1" in str(info.value) and "eagle4_table1" in str(info.value)


def test_table1_every_row():
    df = data.load("eagle3_table1")
    rows = df.groupby(["temperature", "model", "method"]).size()
    assert len(rows) == 26 and (rows == 6).all()  # 24 v3 rows + 2 HASS rows, 5 tasks + mean
    assert set(df["task"]) == set(TASKS) | {"mean"}


def test_table1_means_recomputed_find_exactly_the_known_mismatches():
    """Recompute every printed mean from its five tasks.

    Each task value and the mean are rounded to 2 decimals, so a printed mean can differ from
    the average of the printed tasks by up to 0.005 + 0.005 = 0.01 without any error (e.g. T=1
    LLaMA 3.1 8B EAGLE-2: tasks average 2.792, printed 2.80). Beyond that it is a mismatch.
    """
    df = data.load("eagle3_table1")
    mismatches = set()
    for (temp, model, method), g in df.groupby(["temperature", "model", "method"]):
        g = g.set_index("task")
        for col in ["speedup", "tau"]:
            avg = g.loc[TASKS, col].mean()
            if abs(avg - g.loc["mean", col]) > 0.01 + 1e-9:
                mismatches.add((temp, model, method, col))
    assert mismatches == {
        (0, "LLaMA-Instruct 3.3 70B", "EAGLE-3", "speedup"),
        (1, "LLaMA-Instruct 3.1 8B", "EAGLE-3", "speedup"),
        (1, "LLaMA-Instruct 3.1 8B", "HASS", "speedup"),
    }
    # and the data itself says so
    noted = df[df["note"].str.contains("differs from the average")]
    assert {(r.temperature, r.model, r.method) for r in noted.itertuples()} == {
        (t, m, meth) for t, m, meth, _ in mismatches}


def test_inconsistencies_recorded_not_fixed():
    df = data.load("eagle3_table1")
    dsl = df.query("temperature == 0 and model.str.startswith('DeepSeek') and method == 'EAGLE-2' "
                   "and task == 'cnndm'", engine="python")
    assert dsl["speedup"].item() == 3.53 and "typo" in dsl["note"].item()
    assert df["note"].str.contains("hardware contradictory").all()
    t5 = data.load("eagle3_table5_vllm_batch")
    assert t5["note"].str.contains("hardware conflict").all()
    lev = data.load("leviathan_table4_theory_vs_measured")
    assert lev["note"].str.contains("0.05").all()


def test_batch_tables_shape():
    sgl = data.load("eagle3_table3_sglang_batch")
    assert sorted(sgl["batch_size"].unique()) == [2, 4, 8, 16, 24, 32, 48, 56, 64]
    vll = data.load("eagle3_table5_vllm_batch")
    assert 64 not in set(vll["batch_size"])


def test_model_max_positions_have_a_value_and_a_source():
    # every catalogue model has max_position_embeddings (an int), and its note says where the
    # value was read; alias overrides name aliases of their own row
    df = data.load("model_architectures")
    for _, row in df.iterrows():
        value = int(row["max_position_embeddings"])
        assert value > 0 and float(row["max_position_embeddings"]) == value, row["model"]
        assert f"max_position_embeddings {value}" in row["note"] + row["source"], row["model"]
        overrides = str(row["max_position_embeddings_by_alias"] or "")
        aliases = {a.lower() for a in str(row["aliases"]).split(";")}
        for item in filter(None, overrides.split(";")):
            alias, _, v = item.partition("=")
            assert alias.lower() in aliases and int(v) > 0, (row["model"], item)
            assert f"says {v}" in row["note"], (row["model"], item)
