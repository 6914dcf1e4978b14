"""Model shapes with their MoE and MLA parts from the catalogue CSVs (issue 16, staged).

Reads ``data/model_architectures.csv`` (dense models; the MoE columns empty) and
``data/model_architectures_moe.csv`` (the MoE rows, kept apart until the serving package reads
the new columns, so that ``serving.architecture`` does not take them for dense models). Names
are case-insensitive; aliases and Hugging Face ids work.
"""

from __future__ import annotations

import functools

from .moe import MLA, MoE, ModelShape

__all__ = ["TABLES", "shape_names", "shape", "published_params"]

#: The catalogue tables read, in order.
TABLES = ("model_architectures", "model_architectures_moe")


def _int(x):
    return None if x is None or str(x).strip() in ("", "nan") else int(float(x))


def _bool(x) -> bool:
    return str(x).strip().lower() == "true"


@functools.lru_cache(maxsize=None)
def _rows() -> dict:
    from .. import data

    out = {}
    for table in TABLES:
        for rec in data.load(table).to_dict("records"):
            for key in [rec["model"], rec["hf_id"], *str(rec["aliases"]).split(";")]:
                if str(key).strip():
                    out[str(key).strip().lower()] = rec
    return out


def shape_names() -> list[str]:
    """Model names of both tables, in file order."""
    return list(dict.fromkeys(r["model"] for r in _rows().values()))


def shape(name: str) -> ModelShape:
    """The :class:`~specnb._staging_engines.moe.ModelShape` of a catalogue model (MoE and MLA
    parts filled from the new columns where set).

    Raises
    ------
    ValueError
        an unknown name (the message lists the known ones).
    """
    rec = _rows().get(str(name).strip().lower())
    if rec is None:
        raise ValueError(f"unknown model {name!r}; known models: {', '.join(shape_names())}")
    moe = None
    if _int(rec["n_routed_experts"]):
        moe = MoE(_int(rec["n_routed_experts"]), _int(rec["experts_per_token"]),
                  _int(rec["n_shared_experts"]) or 0, _int(rec["moe_intermediate_size"]),
                  _int(rec["first_k_dense_layers"]) or 0)
    mla = None
    if _int(rec["kv_lora_rank"]):
        mla = MLA(_int(rec["kv_lora_rank"]), _int(rec["qk_rope_head_dim"]),
                  _int(rec["qk_nope_head_dim"]), _int(rec["v_head_dim"]), _int(rec["q_lora_rank"]))
    return ModelShape(int(rec["n_layers"]), int(rec["hidden_size"]), int(rec["n_heads"]),
                      int(rec["n_kv_heads"]), int(rec["head_dim"]), int(rec["intermediate_size"]),
                      int(rec["vocab_size"]), _bool(rec["tie_word_embeddings"]),
                      _bool(rec["attention_bias"]), _bool(rec["qk_norm"]), moe, mla,
                      _int(rec["mtp_layers"]) or 0, rec["model"])


def published_params(name: str) -> tuple[float, float | None]:
    """(total, active) parameter counts as the model card prints them (active None for dense
    rows, whose card prints one count)."""
    rec = _rows()[str(name).strip().lower()]
    act = str(rec["params_active_published"]).strip()
    return float(rec["params_published"]), (float(act) if act else None)
