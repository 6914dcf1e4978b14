"""EAGLE-1, EAGLE-3 and MTP draft heads costed from their shapes (issue 16).

What one draft forward reads (``shared/reference/engines.md`` section 2 item 3; vLLM's
``EagleLlamaForCausalLM`` / ``Eagle3LlamaForCausalLM``; DeepSeek-V3's MTP module):

* EAGLE-1: an fc layer over the concatenated token embedding and target hidden state
  (2h -> h) at every step, one decoder layer, and the TARGET's LM head (full vocabulary).
* EAGLE-3: an fc layer over three target hidden states (3h -> h) once per proposal (the first
  draft forward), one decoder layer whose q/k/v projections take the 2h concatenation of
  embedding and hidden state, and its OWN LM head over a reduced draft vocabulary
  (``draft_vocab_size``; 32,000 for the Llama-3.1-8B head, target 128,256).
* MTP (DeepSeek-V3): the eh projection (2h -> h), one transformer block of the model's kind
  (MLA + MoE) and the shared LM head; see :func:`specnb.serving.moe.mtp_params`.
* DFlash (vLLM 0.33 ``method: dflash``, ``vllm/v1/spec_decode/dflash.py`` and
  ``vllm/model_executor/models/qwen3_dflash.py``): a block drafter. An fc layer projects the
  concatenated hidden states of ``len(target_layer_ids)`` target layers (n_aux h -> h) into
  the context K/V of each of its layers (``precompute_and_store_context_kv``), then ONE forward
  over ``1 + k`` query tokens per request (the bonus token and k mask tokens) through its
  layers proposes all k tokens; logits at the k mask positions, through the TARGET's LM head
  (the published checkpoints carry none: ``has_lm_head`` false).

A head is described by :class:`HeadShape`; :func:`params_per_step` gives the weights step i
(0-based) reads. The decoder layer's attention reads one layer's KV cache, as the model's.
Measured caveat: in vLLM V1 at batch 1 a draft step cost 0.74 ms (EAGLE-1) and 1.02 ms
(EAGLE-3) on an H100 (DERIVED from vLLM issue #20780), while EAGLE-3 reads fewer bytes: per
step costs beyond the weights belong to the engine profile (``data/engine_profiles.csv``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import _check
from .. import hf_config
from .moe import expert_params

__all__ = ["HEAD_KINDS", "EAGLE3_DEFAULT_DRAFT_VOCAB", "DFLASH_DEFAULT_LAYERS",
           "DFLASH_DEFAULT_BLOCK_SIZE", "HeadShape", "eagle_head", "dflash_head",
           "head_from_config", "params_per_step", "mean_params_per_step", "own_params"]

#: Head kinds costed from shapes.
HEAD_KINDS = ("eagle", "eagle3", "dflash")

#: Decoder layers (and target layers fed to the fc) of a DFlash drafter built without a
#: config: the published z-lab checkpoints for 8B targets (z-lab/Qwen3-8B-DFlash-b16,
#: z-lab/LLaMA3.1-8B-Instruct-DFlash-UltraChat: ``num_hidden_layers`` 5, ``dflash_config.
#: target_layer_ids`` of 5 layers, the target's hidden, heads, KV heads and MLP width).
#: ASSUMED for other targets: give the checkpoint's config.json (``--draft-config``).
DFLASH_DEFAULT_LAYERS = 5

#: ``block_size`` of those checkpoints ("-b16"): the most tokens one block drafts
#: (num_speculative_tokens up to block_size - 1 behind the bonus token).
DFLASH_DEFAULT_BLOCK_SIZE = 16

#: Draft vocabulary of the published EAGLE-3 head for Llama-3.1-8B
#: (yuhuili/EAGLE3-LLaMA3.1-Instruct-8B ``draft_vocab_size``; engines.md section 2 item 3).
#: Used for an ``eagle3`` head built without a config, capped at the target's vocabulary;
#: an assumption every caller must state (give the head's config.json to replace it).
EAGLE3_DEFAULT_DRAFT_VOCAB = 32000


@dataclass(frozen=True)
class HeadShape:
    """A one-layer draft head.

    Attributes
    ----------
    kind : ``"eagle"`` or ``"eagle3"``
    hidden_size, n_heads, n_kv_heads, head_dim, intermediate_size : its decoder layer
    n_layers : decoder layers of the head (1 for every published EAGLE head)
    vocab_size : the target's vocabulary
    lm_head_vocab : rows of the LM head each step multiplies (EAGLE-1: the target's
        vocabulary; EAGLE-3: ``draft_vocab_size``)
    fc_in : width into the fc layer, in hidden sizes (EAGLE-1: 2, EAGLE-3: 3)
    fc_every_step : whether the fc layer runs at every draft forward (EAGLE-1) or at the first
        one only (EAGLE-3)
    qkv_in : width into the layer's q/k/v projections, in hidden sizes (EAGLE-1: 1, EAGLE-3: 2)
    own_lm_head : whether the head has its own LM head (EAGLE-3) or uses the target's (EAGLE-1)
    source : where the shape came from
    block_size : DFlash only: the block its one forward drafts (0 for EAGLE heads)
    """

    kind: str
    hidden_size: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    lm_head_vocab: int
    n_layers: int = 1
    fc_in: int = 2
    fc_every_step: bool = True
    qkv_in: int = 1
    own_lm_head: bool = False
    source: str = ""
    block_size: int = 0


def eagle_head(kind: str, target, *, draft_vocab: int | None = None) -> HeadShape:
    """The head vLLM builds for ``target`` by default: one layer of the target's shape.

    Parameters
    ----------
    kind : ``"eagle"`` or ``"eagle3"``
    target : the target's :class:`~specnb.serving.Architecture` (a dense layer of its
        hidden size, heads and ``intermediate_size`` is the head's layer)
    draft_vocab : EAGLE-3's draft vocabulary (default :data:`EAGLE3_DEFAULT_DRAFT_VOCAB`,
        capped at the target's vocabulary); not allowed for EAGLE-1 (it uses the target's
        LM head)

    Raises
    ------
    ValueError
        unknown kind; a draft vocabulary for ``eagle``; one outside [1, target vocabulary].
    """
    _check.choice("kind", kind, HEAD_KINDS)
    common = dict(hidden_size=target.hidden_size, n_heads=target.n_heads,
                  n_kv_heads=target.n_kv_heads, head_dim=target.head_dim,
                  intermediate_size=target.intermediate_size, vocab_size=target.vocab_size)
    if kind == "eagle":
        if draft_vocab is not None:
            raise ValueError("draft_vocab applies to eagle3 heads; an EAGLE-1 head uses the "
                             f"target's LM head ({target.vocab_size} tokens)")
        return HeadShape("eagle", lm_head_vocab=target.vocab_size, fc_in=2,
                         fc_every_step=True, qkv_in=1, own_lm_head=False,
                         source=f"one layer of {target.name or 'the target'} (vLLM default)",
                         **common)
    v = (min(EAGLE3_DEFAULT_DRAFT_VOCAB, target.vocab_size) if draft_vocab is None
         else _check.scalar_int("draft_vocab", draft_vocab, lo=1, hi=target.vocab_size))
    return HeadShape("eagle3", lm_head_vocab=v, fc_in=3, fc_every_step=False, qkv_in=2,
                     own_lm_head=True,
                     source=(f"one layer of {target.name or 'the target'}; draft vocabulary "
                             f"{v}" + (" ASSUMED (the Llama-3.1-8B head's)" if draft_vocab is None
                                       else "")), **common)


def dflash_head(target, *, n_layers: int | None = None, n_aux: int | None = None,
                block_size: int | None = None) -> HeadShape:
    """A DFlash drafter for ``target`` as the published checkpoints are built: ``n_layers``
    decoder layers of the target's shape (default :data:`DFLASH_DEFAULT_LAYERS`), an fc over
    ``n_aux`` target hidden states (default: ``n_layers``, as the checkpoints'
    ``target_layer_ids``), the target's LM head, ``block_size`` (default
    :data:`DFLASH_DEFAULT_BLOCK_SIZE`).

    Raises
    ------
    ValueError
        a count below 1.
    """
    n = DFLASH_DEFAULT_LAYERS if n_layers is None else _check.scalar_int("n_layers", n_layers,
                                                                          lo=1)
    a = n if n_aux is None else _check.scalar_int("n_aux", n_aux, lo=1)
    b = (DFLASH_DEFAULT_BLOCK_SIZE if block_size is None
         else _check.scalar_int("block_size", block_size, lo=2))
    assumed = " ASSUMED (the published 8B checkpoints' shape)" if n_layers is None else ""
    return HeadShape("dflash", target.hidden_size, target.n_heads, target.n_kv_heads,
                     target.head_dim, target.intermediate_size, target.vocab_size,
                     target.vocab_size, n_layers=n, fc_in=a, fc_every_step=True, qkv_in=1,
                     own_lm_head=False, block_size=b,
                     source=f"{n} layers of {target.name or 'the target'}, fc over {a} target "
                            f"layers, block {b}{assumed}")


def _is_dflash(cfg: dict) -> bool:
    arch = " ".join(str(a) for a in cfg.get("architectures") or []).lower()
    return "dflash" in arch or "dflash_config" in cfg or \
        str(cfg.get("model_type", "")).lower() == "dflash"


def _is_eagle3(cfg: dict) -> bool:
    arch = " ".join(str(a) for a in cfg.get("architectures") or []).lower()
    return "eagle3" in arch or "draft_vocab_size" in cfg or \
        str(cfg.get("model_type", "")).lower() == "eagle3"


def head_from_config(config, target) -> HeadShape:
    """A head's shape from its Hugging Face ``config.json`` (a path, a folder holding one, or a
    dict): ``architectures`` / ``draft_vocab_size`` tell EAGLE-3 from EAGLE-1 (EAGLE-3 heads
    carry ``draft_vocab_size`` and an ``...Eagle3...`` architecture; a ``DFlash...``
    architecture or a ``dflash_config`` makes a DFlash drafter: its fc width from
    ``dflash_config.target_layer_ids``, ``block_size``, the target's LM head); sizes from
    ``hidden_size``, ``num_attention_heads``, ``num_key_value_heads`` (default: heads),
    ``head_dim`` (default hidden / heads), ``intermediate_size``, ``num_hidden_layers``
    (default 1), ``vocab_size`` (default the target's).

    Raises
    ------
    ValueError
        not JSON, not an object, a missing or non-positive size, a hidden size other than the
        target's (the head reads the target's hidden states), a draft vocabulary above the
        vocabulary.
    FileNotFoundError
        a path that does not exist.
    """
    where, source = "draft config", "draft config (dict)"
    if not isinstance(config, dict):
        config, path = hf_config.read_config(config, label="draft_config",
                                             hint="give the head's config.json or its folder")
        where, source = f"draft_config {str(path)!r}", str(path)
    def size(key, default=None):
        value = config.get(key, default)
        if value is None:
            raise ValueError(f"{where}: missing key {key!r} (an EAGLE head's config.json has "
                             "hidden_size, num_attention_heads, intermediate_size)")
        return hf_config.config_int(where, key, value)  # bounded: hf_config.SIZE_LIMITS

    h = size("hidden_size")
    if h != target.hidden_size:
        raise ValueError(f"{where}: hidden_size {h} differs from the target's "
                         f"{target.hidden_size}: an EAGLE head reads the target's hidden states, "
                         "so this head belongs to another target")
    heads = size("num_attention_heads")
    vocab = size("vocab_size", target.vocab_size)
    if _is_dflash(config):
        dcfg = config.get("dflash_config") or {}
        layers = size("num_hidden_layers")
        aux = dcfg.get("target_layer_ids") or config.get("target_layer_ids")
        n_aux = len(aux) if isinstance(aux, list) and aux else layers
        block = config.get("block_size", dcfg.get("block_size", DFLASH_DEFAULT_BLOCK_SIZE))
        if isinstance(block, bool) or not isinstance(block, int) or block < 2:
            raise ValueError(f"{where}: block_size must be an integer >= 2, got {block!r}")
        return HeadShape("dflash", h, heads, size("num_key_value_heads", heads),
                         size("head_dim", h // heads), size("intermediate_size"), vocab, vocab,
                         layers, fc_in=n_aux, fc_every_step=True, qkv_in=1, own_lm_head=False,
                         source=source, block_size=block)
    eagle3 = _is_eagle3(config)
    lm = size("draft_vocab_size", vocab) if eagle3 else vocab
    if lm > vocab:
        raise ValueError(f"{where}: draft_vocab_size {lm} exceeds vocab_size {vocab}")
    return HeadShape("eagle3" if eagle3 else "eagle", h, heads,
                     size("num_key_value_heads", heads), size("head_dim", h // heads),
                     size("intermediate_size"), vocab, lm, size("num_hidden_layers", 1),
                     fc_in=3 if eagle3 else 2, fc_every_step=not eagle3,
                     qkv_in=2 if eagle3 else 1, own_lm_head=eagle3, source=source)


def _layer_params(head: HeadShape) -> int:
    h, hd = head.hidden_size, head.head_dim
    q, kv = head.n_heads * hd, head.n_kv_heads * hd
    attn = head.qkv_in * h * (q + 2 * kv) + q * h
    return attn + expert_params(h, head.intermediate_size) + 2 * h


def params_per_step(head: HeadShape, step: int = 0) -> int:
    """Weights draft forward ``step`` (0 = the first of a proposal) reads: the fc layer (every
    step for EAGLE-1, the first only for EAGLE-3), the decoder layer(s), the LM head rows
    (``lm_head_vocab x hidden``) and the final norm. The embedding lookup is not counted."""
    s = _check.scalar_int("step", step, lo=0)
    h = head.hidden_size
    fc = head.fc_in * h * h if (head.fc_every_step or s == 0) else 0
    return fc + head.n_layers * _layer_params(head) + head.lm_head_vocab * h + h


def mean_params_per_step(head: HeadShape, gamma: int) -> float:
    """Mean weights per draft forward over a proposal of ``gamma`` forwards (EAGLE-3's fc
    spread over them). gamma: int >= 1."""
    g = _check.scalar_int("gamma", gamma, lo=1)
    return (params_per_step(head, 0) + (g - 1) * params_per_step(head, 1)) / g


def own_params(head: HeadShape) -> int:
    """Weights the head adds to GPU memory: fc, decoder layer(s), final norm, and its own LM
    head (EAGLE-3; EAGLE-1 shares the target's, and both share the target's embedding)."""
    h = head.hidden_size
    lm = head.lm_head_vocab * h if head.own_lm_head else 0
    return head.fc_in * h * h + head.n_layers * _layer_params(head) + lm + h

