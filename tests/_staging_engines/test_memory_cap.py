"""specnb/_staging_engines/memory_cap.py: KV room after weights, the draft's displacement."""

import numpy as np
import pytest

from specnb import memory, serving as S
from specnb._staging_engines import memory_cap as MC


def test_issue_example_llama8b_eagle3_h100_context_2000():
    # the issue's case: Llama-3.1-8B, EAGLE-3, one H100, context 2000: 205 sequences fit
    st = S.setup("H100", "Llama-3.1-8B", "eagle3")
    a = st.target
    head = st.draft.arch
    cap = MC.memory_cap(st.gpu.memory_bytes, 1, 2000, a.weight_bytes(),
                        a.kv_bytes_per_token(), head.layer_params * 2.0,
                        head.kv_bytes_per_token())
    assert cap["max_batch"] == S.max_batch_in_memory(st, 2000) == 205
    assert cap["max_batch_without_draft"] == 213 and cap["displaced"] == 8
    assert MC.fits(205, cap["max_batch"]) and not MC.fits(512, cap["max_batch"])


def test_agrees_with_the_articles_rule_for_a_draft_model():
    room = 0.9 * 80e9 - 16.06e9
    cap = MC.memory_cap(80e9, 1, 1024, 16.06e9, 131072.0, 2.47e9, 32768.0)
    assert cap["displaced"] == memory.sequences_displaced(room, 2.47e9, 1024, 131072.0, 32768.0)


def test_weights_that_do_not_fit_and_arrays():
    cap = MC.memory_cap(24e9, 1, 512, 30e9, 131072.0)
    assert cap["max_batch"] == 0 and cap["room_bytes"] < 0
    many = MC.memory_cap(80e9, 2, np.array([512, 4096, 32768]), 16e9, 131072.0,
                         draft_kv_bytes_per_token=131072.0, draft_kv_budget=512)
    assert many["max_batch"].dtype == np.int64 and np.all(np.diff(many["max_batch"]) < 0)
    assert list(MC.fits([1, 10 ** 6], many["max_batch"][0])) == [True, False]


@pytest.mark.parametrize("u", [0, 1.5, -0.2])
def test_bad_utilization(u):
    with pytest.raises(ValueError, match=r"gpu_memory_utilization must be in \(0, 1\]"):
        MC.memory_cap(80e9, 1, 100, 1e9, 1e5, gpu_memory_utilization=u)


def test_bad_inputs():
    with pytest.raises(ValueError, match="context must be an integer >= 1"):
        MC.memory_cap(80e9, 1, 0, 1e9, 1e5)
    with pytest.raises(ValueError, match="gpus must be an integer >= 1"):
        MC.kv_room_bytes(80e9, 0, 1e9)


def test_paying_ranges_and_schedule_stop_at_the_cap():
    # the issue's case: "pays at every batch size up to 512" while 205 sequences fit
    assert MC.cap_ranges([[1, 512]], 205) == [[1, 205]]
    assert MC.cap_ranges([[1, 3], [40, 80], [300, 512]], 205) == [[1, 3], [40, 80]]
    assert MC.cap_ranges([[1, 512]], 0) == []
    sched = [[1, 64, 3], [65, 128, 1], [129, 512, 0]]
    assert MC.cap_schedule(sched, 205) == [[1, 64, 3], [65, 128, 1], [129, 205, 0]]
    assert MC.cap_schedule(sched, 100) == [[1, 64, 3], [65, 100, 1]]
    with pytest.raises(ValueError, match="max_batch_in_memory is 0"):
        MC.cap_schedule(sched, 0)
