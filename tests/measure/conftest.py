"""Fixtures of the specnb.measure tests: the bundled pair, loaded once per session."""

import pytest


@pytest.fixture(scope="session")
def models():
    """The bundled target and both drafts on the CPU, as ``measure(models=...)`` takes them."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from specnb import measure as M

    torch.set_num_threads(2)
    target = M.load_model(M.BUNDLED_TARGET, device="cpu")
    drafts = {p.name: M.load_model(p, device="cpu", need_tokenizer=False)
              for p in M.BUNDLED_DRAFTS}
    return {"target": target, "drafts": drafts, "target_name": str(M.BUNDLED_TARGET)}


@pytest.fixture(scope="module")
def tok():
    """The bundled tokenizer (data/models/tokenizer)."""
    pytest.importorskip("transformers")
    from transformers import AutoTokenizer

    from .standins import TOKENIZER

    return AutoTokenizer.from_pretrained(TOKENIZER)
