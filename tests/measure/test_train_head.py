"""specnb.measure.train_head: the draft vocabulary (the most frequent ids, d2t offsets that map
them back) and a seconds-long training run of the same code path (slow) that writes a head
load_head reads back for the bundled target."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from specnb.measure import train_head as T  # noqa: E402


def test_draft_vocab_keeps_the_most_frequent_ids():
    ids = np.array([5, 5, 5, 2, 2, 9, 7, 7, 7, 7])
    keep, d2t = T._draft_vocab(ids, 10, 3)
    assert keep.tolist() == [2, 5, 7]
    assert (np.arange(3) + d2t).tolist() == [2, 5, 7]


@pytest.mark.slow
def test_smoke_run_writes_a_loadable_head(tmp_path, models):
    from specnb.measure import heads

    info = T.train_head(tmp_path / "h", recipe=T.SMOKE, log=lambda m: None)
    assert info["steps"] == T.SMOKE["max_steps"]
    assert len(info["validation_agreement_by_step"]) == T.SMOKE["depth"]
    target = models["target"][0]
    head = heads.load_head(tmp_path / "h", target)
    assert head.hc.fmt == "eagle3-speculators" and head.aux_layers == (1, 2, 3)
    assert head.hc.draft_vocab_size == T.SMOKE["draft_vocab_size"]
