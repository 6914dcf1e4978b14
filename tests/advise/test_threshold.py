"""specnb.advise.threshold: the peak batch from which to measure first, fixed (the EAGLE-3
paper's batch tables) or from the step-time model's crossover."""

from __future__ import annotations

import pytest

from specnb.advise import MEASURE_BATCH, batch_evidence, measure_threshold


def test_measure_threshold_is_where_the_paper_measured_a_loss():
    batch, source = measure_threshold()
    assert batch == MEASURE_BATCH == int(batch_evidence()["first_below_1x"].min())
    assert "Table 3" in source



def test_measure_threshold_with_the_model_is_the_batch_after_the_crossover():
    from specnb import serving

    st = serving.setup("L40S", "Qwen2.5-7B", "eagle3")
    cross = serving.crossover_batch(st, 2000, [2], max_batch=300, alpha=0.4)
    batch, source = measure_threshold("l40s", "Qwen2.5-7B", 2000, method="eagle3", gamma=2,
                                      alpha=0.4, max_batch=300)
    assert 1 < batch == cross + 1 < 300 and f"crossover {cross}" in source and "L40S" in source
    with pytest.raises(ValueError, match="method must be one of"):
        measure_threshold("H200", "Llama-3.1-8B", 1000, method="medusa")
    with pytest.raises(ValueError, match=r"gamma 6: SpecDecode-Bench's released data give "
                                         r"tau\(k\) at k = 1, 2, 3, 5"):
        measure_threshold("H200", "Llama-3.1-8B", 1000, method="eagle3", gamma=6)


# ----------------------------------------------------------------- edge and bad input (r2)
@pytest.mark.parametrize("kwargs, match", [
    ({"gamma": 0}, r"gamma=0: only with gpu, model and context"),
    ({"alpha": 0.7}, r"alpha=0.7: only with gpu, model and context"),
    ({"gpu": "H100", "model": "Llama-3.1-8B", "context": 4096, "draft_model": "Llama-3.2-1B"},
     r"draft_model='Llama-3.2-1B' is modelled only with method='draft_model'; got "
     r"method='eagle3'"),
    ({"gpu": "H100", "model": "Llama-3.1-8B", "context": 4096, "max_batch": 10 ** 9},
     r"max_batch must be an integer in \[1, 65536\], got 1000000000"),
    ({"gpu": "H100", "model": "Llama-3.1-8B", "context": 4096, "gpus": 3},
     r"^gpus = 3 does not divide the target Llama-3.1-8B's num_attention_heads \(32\)"),
])
def test_measure_threshold_refuses_what_it_would_ignore_or_cannot_do(kwargs, match):
    """Arguments the fixed rule would drop, a draft the method does not model, a search that
    would not fit in memory (10**9 batch sizes), a TP size vLLM refuses."""
    with pytest.raises(ValueError, match=match):
        measure_threshold(**kwargs)
