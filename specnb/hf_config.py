"""Hugging Face ``config.json``: the one reader, and what kind of checkpoint it describes.

Used by :mod:`specnb.serving` (a model's shape from a config path: ``serving.architecture``;
a draft head given as a draft model: ``serving.draft``) and :mod:`specnb.vllm` (the checker's
``draft_config`` and method re-detection). L0: imports only :mod:`specnb._check`.

* :func:`read_config` reads a ``config.json`` (a file or a folder holding one) once: a UTF-8
  BOM is skipped (Windows editors), bytes that are not UTF-8, text that is not JSON (line and
  column) and JSON that is not an object are refused, naming the file.
* :func:`config_int` checks one integer field (a size, a count, a length) against
  :data:`SIZE_LIMITS`: every reader of a config's integers goes through it, so a 400-digit
  ``num_hidden_layers`` is refused naming the field and the file, not met as an OverflowError
  deep in a formula (trial 6, T6-T6 and C2).
* :func:`checkpoint_method` says which speculative method a draft checkpoint needs, from its
  path and its config's ``architectures`` / ``model_type`` (the signs vLLM @ ``002e77c1``
  reads when it re-detects the method, and a few it misses); :func:`architectures`,
  :func:`model_type`, :func:`is_mtp_type` and :data:`MODEL_TYPE_METHOD` are its parts.
"""

from __future__ import annotations

import json
import numbers
import os
import re
from pathlib import Path


__all__ = ["read_config", "config_int", "MissingConfigKey", "SIZE_LIMITS", "SIZE_LIMIT",
           "MODEL_TYPE_METHOD", "architectures", "model_type", "is_mtp_type",
           "checkpoint_method", "NO_MTP_MODEL_TYPES", "MTP_LAYER_KEYS", "mtp_layers"]


class MissingConfigKey(ValueError):
    """A config.json without a key a reader needs (``num_hidden_layers``, ...): a config of a
    family the reader does not cover rather than a malformed one (a value of the wrong type is
    a plain ValueError). ``specnb config check --target-config`` still checks vLLM's rules
    against such a config; ``specnb plan --model`` cannot model it (trial 7, T7-08)."""

#: config.json ``model_type`` values vLLM maps to a method (@ 002e77c1, method re-detection).
MODEL_TYPE_METHOD = {"medusa": "medusa", "mlp_speculator": "mlp_speculator"}


#: Upper bounds of config.json integer fields, each 60x or more the largest published model's
#: (Llama-3.1-405B: 126 layers, hidden 16,384, FFN 53,248, 128 heads; Gemma 3: vocab 262,144;
#: Llama 4 Scout: 10M positions; DeepSeek-V3 / Kimi-K2: 256 / 384 experts): a value above one
#: is a typo or a damaged file (a 400-digit one overflowed the float64 formulas: trial 6).
#: Fields not listed: :data:`SIZE_LIMIT`.
SIZE_LIMITS = {
    "num_hidden_layers": 10_000, "num_nextn_predict_layers": 10_000,
    "first_k_dense_replace": 10_000, "mtp_num_hidden_layers": 10_000,
    "num_attention_heads": 65_536, "num_key_value_heads": 65_536,
    "hidden_size": 1 << 20, "intermediate_size": 1 << 24, "moe_intermediate_size": 1 << 24,
    "shared_expert_intermediate_size": 1 << 24, "head_dim": 1 << 20,
    "vocab_size": 1 << 28, "draft_vocab_size": 1 << 28,
    "max_position_embeddings": 1 << 30, "sliding_window": 1 << 30,
    "n_routed_experts": 65_536, "num_experts": 65_536, "num_local_experts": 65_536,
    "num_experts_per_tok": 65_536, "experts_per_token": 65_536, "n_shared_experts": 65_536,
}
#: The bound of an integer field :data:`SIZE_LIMITS` does not list (2**30).
SIZE_LIMIT = 1 << 30


def config_int(where: str, key: str, value, lo: int = 1) -> int:
    """``value``, config.json field ``key`` of the file ``where``, as an int after checking it is
    a JSON integer (not a bool, not a float) in [``lo``, its bound in :data:`SIZE_LIMITS`].

    Raises ValueError ``"<where>: <key> must be an integer >= lo (at most bound), got <value>"`` (a
    400-digit value shown by its length)."""
    hi = SIZE_LIMITS.get(key, SIZE_LIMIT)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not lo <= value <= hi:
        from ._check import number_text  # numpy: only on this error path

        too = ": too large (a typo or a damaged file?)" if isinstance(value, numbers.Integral) and \
            not isinstance(value, bool) and value > hi else ""
        raise ValueError(f"{where}: {key} must be an integer >= {lo} (at most {hi:,}), got "
                         f"{number_text(value)}{too}")
    return int(value)


def read_config(source, *, label: str = "config", hint: str = "") -> tuple[dict, Path]:
    """Read a Hugging Face ``config.json``: ``(config dict, path read)``.

    Parameters
    ----------
    source : str or os.PathLike, a ``config.json`` file or a folder holding one
    label : what the file is, for messages (``"model config"``, ``"draft_config"``)
    hint : what to give instead, appended to the missing-file message

    Raises
    ------
    FileNotFoundError
        no such file (``"<label> '<path>' does not exist (<hint>)"``).
    ValueError
        bytes that are not UTF-8 (byte and offset), text that is not JSON (line and column),
        or JSON that is not an object; each message starts ``<label> '<path>'``.
    """
    path = Path(os.fspath(source))
    if path.is_dir():
        path = path / "config.json"
    where = f"{label} {str(path)!r}"
    if not path.is_file():
        raise FileNotFoundError(f"{where} does not exist" + (f" ({hint})" if hint else ""))
    try:
        raw = path.read_text(encoding="utf-8-sig")  # a BOM (Windows editors) is not data
    except UnicodeDecodeError as exc:
        from . import _check  # numpy: only on this error path

        raise _check.utf8_error(where, exc, "give a Hugging Face config.json") from None
    try:
        cfg = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: not valid JSON at line {exc.lineno}, column {exc.colno}: "
                         f"{exc.msg} (a Hugging Face config.json is one JSON object)") from None
    if not isinstance(cfg, dict):
        raise ValueError(f"{where}: a config.json must hold a JSON object, got "
                         f"{type(cfg).__name__}")
    return cfg, path


def architectures(config) -> list[str]:
    """The string entries of a config's ``architectures`` list ([] for anything else)."""
    if not isinstance(config, dict):
        return []
    arch = config.get("architectures") or []
    return [a for a in arch if isinstance(a, str)] if isinstance(arch, list) else []


def model_type(config) -> str:
    """A config's ``model_type``, lower-case ("" when absent or not a string)."""
    mt = config.get("model_type") if isinstance(config, dict) else None
    return mt.lower() if isinstance(mt, str) else ""


def is_mtp_type(mtype: str) -> bool:
    """True for an MTP ``model_type``: ``mtp`` or a name ending in ``_mtp`` (every entry of
    vLLM's ``MTPModelTypes`` @ 002e77c1 is one of these)."""
    return mtype == "mtp" or mtype.endswith("_mtp")


#: Target ``model_type`` values vLLM 0.33 maps to no MTP draft: ``SpeculativeConfig.
#: hf_config_override`` (``config/speculative.py``) turns a target's model_type (deepseek_v3,
#: qwen3_next, glm4_moe, mimo...) into one of ``MTPModelTypes``; none of these is among them,
#: so method "mtp" on such a target ends in ``NotImplementedError("Unsupported speculative
#: method: 'mtp'")`` (trial 7, T7-10). A type not listed here is not judged (unknown).
NO_MTP_MODEL_TYPES = frozenset({
    "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gemma",
    "gemma2", "gemma3", "gemma3_text", "phi3", "gpt_oss", "minicpm", "minicpm3"})
#: The config.json fields vLLM 0.33 reads as a target's MTP layer count (``n_predict``).
MTP_LAYER_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_layers",
                  "n_predict", "num_mtp_modules")


def mtp_layers(config) -> int | None:
    """The MTP layers vLLM 0.33 would draft with for method ``mtp`` on the target ``config``
    (a config.json dict; a multimodal config's ``text_config`` too): 0 for a model_type in
    :data:`NO_MTP_MODEL_TYPES` (vLLM maps it to no MTP draft, whatever the fields say), else
    the largest integer among :data:`MTP_LAYER_KEYS` (0 when they are all 0: vLLM has no
    layer to run), None when none is given (unknown: vLLM's per-type default applies)."""
    if not isinstance(config, dict):
        return None
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else {}
    if model_type(config) in NO_MTP_MODEL_TYPES or (
            text and model_type(text) in NO_MTP_MODEL_TYPES):
        return 0
    found = [c[k] for c in (config, text) for k in MTP_LAYER_KEYS
             if isinstance(c.get(k), int) and not isinstance(c.get(k), bool)]
    return max(found) if found else None


def checkpoint_method(model: str, draft_config=None):
    """The method a draft checkpoint needs, from its path and config.json: (method, why) or None.

    Reads the signs vLLM reads (see ``specnb.vllm``'s method re-detection) and a few it does
    not: an ``architectures`` entry naming Eagle3 / Eagle / Medusa / MTP / DFlash / DSpark, and
    path words ('eagle', 'medusa', 'mtp', 'accelerator' and 'speculator' for IBM's MLP
    speculators) that vLLM's path rules ('eagle-', 'eagle3') miss. None when nothing marks a
    special head.
    """
    low = (model or "").lower()
    arch = architectures(draft_config)
    arch_low = " ".join(arch).lower()
    mt = model_type(draft_config)
    shown = f"the path {model!r}" if model else "the path"
    if arch:
        named = f"config.json architectures {arch}"
        for word, method in (("eagle3", "eagle3"), ("eagle", "eagle"), ("dflash", "dflash"),
                             ("dspark", "dspark"), ("medusa", "medusa"),
                             ("speculator", "mlp_speculator"), ("mtp", "mtp")):
            if word in arch_low:
                return method, named
    if mt in MODEL_TYPE_METHOD:
        return MODEL_TYPE_METHOD[mt], f"config.json model_type {mt!r}"
    if is_mtp_type(mt):
        return "mtp", f"config.json model_type {mt!r}"
    if "eagle3" in low or "eagle-3" in low or "eagle_3" in low:
        return "eagle3", shown
    if "eagle" in low:
        return "eagle", shown
    for word, method in (("dflash", "dflash"), ("dspark", "dspark"), ("medusa", "medusa"),
                         ("mlp_speculator", "mlp_speculator"), ("mlp-speculator",
                                                                "mlp_speculator"),
                         ("accelerator", "mlp_speculator"), ("speculator", "mlp_speculator")):
        if word in low:
            return method, shown
    if re.search(r"(^|[^a-z])mtp([^a-z]|$)", low):
        return "mtp", shown
    return None
