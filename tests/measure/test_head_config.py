"""specnb.measure.heads' config-level checks on the bundled EAGLE-3 head, in the fast tier: JSON
and safetensors headers only (no weight read, no transformers model built; the forward, the
other formats and the copied-head agreement are tests/measure/test_heads.py, all slow)."""

import json
import re

import pytest

pytest.importorskip("torch")

from specnb.measure import args as A  # noqa: E402
from specnb.measure import heads as Hd  # noqa: E402


def _config(folder):
    return json.loads((folder / "config.json").read_text())


def test_the_bundled_eagle3_head_fits_the_bundled_target_as_its_config_says():
    head, target = _config(A.BUNDLED_EAGLE3_HEAD), _config(A.BUNDLED_TARGET)  # GPT-2 names
    hc = Hd.head_config(A.BUNDLED_EAGLE3_HEAD, target)
    assert (hc.method, hc.fmt) == ("eagle3", "eagle3-speculators")
    assert hc.hidden_size == head["transformer_layer_config"]["hidden_size"]
    assert hc.vocab_size == target["vocab_size"] and hc.draft_vocab_size == head["draft_vocab_size"]
    assert hc.aux_layers == tuple(sorted(head["eagle_aux_hidden_state_layer_ids"]))
    assert max(hc.aux_layers) <= target["n_layer"]
    assert hc.names["d2t"] == (hc.draft_vocab_size,)  # draft vocabulary < target vocabulary
    assert hc.names["fc.weight"][1] == len(hc.aux_layers) * target["n_embd"]
    assert Hd.head_config(A.BUNDLED_EAGLE3_HEAD, target, method="eagle3").fmt == hc.fmt


def test_a_head_that_does_not_fit_is_named_before_any_weight():
    target, cfg = _config(A.BUNDLED_TARGET), _config(A.BUNDLED_EAGLE3_HEAD)
    head, h, v = A.BUNDLED_EAGLE3_HEAD, target["n_embd"], target["vocab_size"]
    with pytest.raises(ValueError, match=rf"config\.json: the head reads target hidden states "
                                         rf"of size {h} .* the target's hidden size is {2 * h}"):
        Hd.head_config(head, {**target, "n_embd": 2 * h})
    with pytest.raises(ValueError, match=rf"config\.json: vocab_size {v} but the target's "
                                         rf"vocabulary has {2 * v} tokens"):
        Hd.head_config(head, {**target, "vocab_size": 2 * v})
    ids = cfg["eagle_aux_hidden_state_layer_ids"]
    with pytest.raises(ValueError, match=re.escape(f"{ids} must lie in [0, {max(ids) - 1}]")):
        Hd.head_config(head, {**target, "n_layer": max(ids) - 1})
    with pytest.raises(ValueError, match=r"method 'eagle' was asked for .* 'eagle3' head"):
        Hd.head_config(head, target, method="eagle")
    with pytest.raises(ValueError, match=r"MTP was asked for.*declares no MTP"):
        Hd.head_config(A.BUNDLED_TARGET, target, method="mtp")
    with pytest.raises(ValueError, match="not a head specnb reads"):
        Hd.head_config(A.BUNDLED_DRAFTS[0], target)
