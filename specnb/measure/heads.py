"""EAGLE, EAGLE-3 and MTP heads without a server: read the formats people ship
(``config.json`` + safetensors, nothing from a hub), check them against their target from the
config alone, and run their forward exactly as vLLM runs it.

Formats (:func:`head_config` tells them apart):

* ``eagle`` -- EAGLE-1, yuhuili's layout (``SafeAILab/EAGLE``): ``fc`` over
  ``[embedding(x_{i+1}), h_i]`` (2H -> H; a ``fc.bias`` is used when the checkpoint has one),
  ``num_hidden_layers`` Llama decoder layers (``layers.N.*``; the first without its input
  norm), no final norm, the target's ``lm_head`` (a head's own ``lm_head.weight`` wins); h is
  the target's last hidden state after its final norm. vLLM:
  ``vllm/model_executor/models/llama_eagle.py``.
* ``eagle3`` -- EAGLE-3 in the *speculators* format (``speculators_model_type: eagle3``, the
  Llama layer config under ``transformer_layer_config``; vLLM's
  ``transformers_utils/configs/speculators/algos.py`` makes ``norm_before_residual`` default
  True there) and in SpecForge's / yuhuili's (``architectures: [LlamaForCausalLMEagle3]``,
  ``midlayer.*`` or ``layers.0.*``; ``norm_before_residual`` default False). ``fc`` over the
  target's hidden states at three layers (``eagle_aux_hidden_state_layer_ids`` at the top of
  the config or in ``eagle_config``; else vLLM's default ``(2, L // 2, L - 3)``; layer l is the
  residual stream after l decoder layers, 0 = the embeddings), one decoder layer whose
  attention reads ``[input_layernorm(embedding), hidden_norm(h)]`` (2H), a final ``norm``,
  its own ``lm_head`` over ``draft_vocab_size`` tokens mapped to the target's vocabulary by
  ``d2t`` (target id = draft id + d2t[draft id]; tokens outside the draft vocabulary get
  -inf); the hidden state fed to the next step is the pre-norm sum (``norm_output`` False).
  vLLM: ``llama_eagle3.py``.
* ``mtp`` -- multi-token-prediction layers inside a target checkpoint. DeepSeek-V3 style
  (``num_nextn_predict_layers``; weights ``model.layers.{L+k}.{enorm,hnorm,eh_proj,
  shared_head.norm,shared_head.head}`` and the decoder block; the embedding at position 0 is
  zeroed): ``deepseek_v3`` and ``glm4_moe`` (GLM-4.5). vLLM: ``deepseek_mtp.py`` (the
  recycled hidden state is the shared head's *normed* one: DeepSeekMTPModel returns a pair)
  and ``glm4_moe_mtp.py`` (the pre-norm one). Qwen3-Next style (``mtp.fc``,
  ``mtp.pre_fc_norm_embedding``, ``mtp.pre_fc_norm_hidden``, ``mtp.layers.0``, ``mtp.norm``
  with Qwen3-Next's (1 + w) RMSNorm, the target's ``lm_head``): ``qwen3_next``; vLLM:
  ``qwen3_next_mtp.py``. vLLM 0.33.0 always runs the first MTP layer (its proposer passes no
  ``spec_step_idx``), so this does too.

How vLLM chains the steps (``vllm/v1/spec_decode/llm_base_proposer.py``,
``SpecDecodeBaseProposer.propose`` and ``set_inputs_first_pass``): after each target pass the
head runs once over every newly verified position i with input token x_{i+1} and the target's
hidden state h_i (its KV cache at those positions is rewritten from the target's states); the
last row's logits give draft 1. Draft j >= 2 feeds draft j-1 and the head's own hidden state
from step j-1, one position further on. Sources read: vLLM 0.33.0 as installed in the oracle
venv (``.venv-vllm-0.33.0``; the same files on GitHub at commit
00bd1493b3e82d6c13c68ee8a0e1c5a96707e190 for ``llama_eagle3.py``).

The decoder blocks are transformers' own (``LlamaDecoderLayer``, ``DeepseekV3DecoderLayer``,
``Glm4MoeDecoderLayer``, ``Qwen3NextDecoderLayer``) with a key/value store of this module, so
that one call can teacher-force every round start of a request at once
(:meth:`Head.teacher_force`).
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

__all__ = ["HeadConfig", "Head", "head_config", "load_head", "target_states", "METHODS",
           "save_head", "eagle3_config", "new_head"]

#: vLLM method names of the heads this module loads.
METHODS = ("eagle", "eagle3", "mtp")

_MTP_TYPES = ("deepseek_v3", "glm4_moe", "qwen3_next")


# --------------------------------------------------------------------------- config
@dataclass
class HeadConfig:
    """What a head's config declares, checked against its target (see :func:`head_config`).

    ``method``: ``eagle`` / ``eagle3`` / ``mtp``; ``fmt``: the layout (``eagle-yuhuili``,
    ``eagle3-speculators``, ``eagle3-specforge``, ``mtp-deepseek_v3``, ``mtp-glm4_moe``,
    ``mtp-qwen3_next``); ``layer_config``: the decoder layer's config dict; ``aux_layers``:
    target layers EAGLE-3 reads (sorted, as vLLM collects them); ``files``: the safetensors
    files; ``names``: every tensor name with its shape (from the headers)."""

    method: str
    fmt: str
    path: Path
    layer_config: dict
    hidden_size: int
    vocab_size: int
    draft_vocab_size: int
    num_layers: int
    aux_layers: tuple = ()
    options: dict = field(default_factory=dict)
    files: tuple = ()
    names: dict = field(default_factory=dict)
    mtp_start: int = 0


def _target_dims(target_config) -> dict:
    cfg = target_config.get_text_config() if hasattr(target_config, "get_text_config") \
        else target_config
    get = (lambda k: cfg.get(k)) if isinstance(cfg, dict) else (lambda k: getattr(cfg, k, None))
    hidden = get("hidden_size") or get("n_embd")
    layers = get("num_hidden_layers") or get("n_layer")
    return {"hidden_size": int(hidden), "vocab_size": int(get("vocab_size")),
            "num_layers": int(layers)}


def _headers(path: Path) -> tuple[tuple, dict]:
    """The safetensors files of a folder and ``{tensor name: shape}`` from their headers
    (no weight is read)."""
    from safetensors import safe_open

    files = tuple(sorted(path.glob("*.safetensors")))
    names = {}
    for f in files:
        with safe_open(str(f), framework="pt") as fh:
            for k in fh.keys():
                names[k] = tuple(fh.get_slice(k).get_shape())
    return files, names


def _read_json(p: Path, what: str) -> dict:
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{what} {str(p.parent)!r} has no config.json") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{p}: not readable JSON ({exc})") from None


def head_config(path, target_config, *, method: str | None = None) -> HeadConfig:
    """Read and check a head's ``config.json`` (and its safetensors headers) against its
    target, before any weight is read.

    Parameters
    ----------
    path : str or Path, a folder with ``config.json`` and ``*.safetensors`` (for ``mtp``, the
        target's own checkpoint folder).
    target_config : the target's transformers config (or its config.json as a dict).
    method : ``eagle``, ``eagle3``, ``mtp`` or None (detected from the config).

    Raises
    ------
    ValueError
        naming the file and the mismatch: no config.json or safetensors; a format none of the
        above; ``method`` not what the config is; a hidden size or vocabulary other than the
        target's; layers the config declares but the checkpoint lacks; a ``d2t`` whose length
        is not ``draft_vocab_size``; EAGLE-3 layer ids outside the target's layers; ``mtp``
        on a checkpoint whose config declares no MTP layer.
    """
    p = Path(path).expanduser()
    if method is not None and method not in METHODS:
        raise ValueError(f"method must be one of {list(METHODS)}, got {method!r}")
    if not p.is_dir():
        raise ValueError(f"head path {str(p)!r} is not a folder (a head's folder holds "
                         "config.json and *.safetensors)")
    cfg_file = p / "config.json"
    cfg = _read_json(cfg_file, "head folder")
    files, names = _headers(p)
    if not files:
        raise ValueError(f"head folder {str(p)!r} holds no *.safetensors file")
    tgt = _target_dims(target_config)
    detected = _detect(cfg)
    if method == "mtp" or (method is None and detected == "mtp"):
        return _mtp_config(p, cfg, files, names, tgt)
    if detected is None:
        raise ValueError(f"{cfg_file}: not a head specnb reads (EAGLE-1: Llama config with "
                         "fc.weight; EAGLE-3: speculators_model_type 'eagle3' or architectures "
                         "LlamaForCausalLMEagle3 / Eagle3LlamaForCausalLM; MTP: "
                         "num_nextn_predict_layers > 0)")
    if method is not None and method != detected:
        raise ValueError(f"{cfg_file}: method {method!r} was asked for but the config is an "
                         f"{detected!r} head")
    if detected == "eagle3":
        return _eagle3_config(p, cfg, files, names, tgt)
    return _eagle_config(p, cfg, files, names, tgt)


def _detect(cfg: dict) -> str | None:
    arch = " ".join(cfg.get("architectures") or [])
    if cfg.get("speculators_model_type") == "eagle3" or "Eagle3" in arch:
        return "eagle3"
    if cfg.get("num_nextn_predict_layers"):
        return "mtp"
    if "Eagle" in arch or cfg.get("model_type") == "llama":
        return "eagle"
    return None


def _need(names: dict, prefix: str, file: Path, what: str) -> None:
    if not any(k.startswith(prefix) for k in names):
        raise ValueError(f"{file}: the config declares {what}, but the checkpoint has no "
                         f"tensor named {prefix}*")


def _eagle3_config(p, cfg, files, names, tgt) -> HeadConfig:
    f = p / "config.json"
    if cfg.get("speculators_model_type") == "eagle3":
        fmt, layer = "eagle3-speculators", dict(cfg.get("transformer_layer_config") or {})
        if not layer:
            raise ValueError(f"{f}: a speculators config needs transformer_layer_config")
        nbr_default = True
    else:
        fmt, layer, nbr_default = "eagle3-specforge", dict(cfg), False
    eagle = cfg.get("eagle_config") or layer.get("eagle_config") or {}
    opts = {k: bool(cfg.get(k, layer.get(k, eagle.get(k, d)))) for k, d in
            (("norm_before_residual", nbr_default), ("norm_before_fc", False),
             ("fc_norm", False), ("norm_output", False))}
    if eagle.get("use_aux_hidden_state") is False:
        raise ValueError(f"{f}: eagle_config.use_aux_hidden_state = false (an EAGLE-3 head "
                         "without the three-layer fc) is not supported")
    hidden = int(layer["hidden_size"])
    target_hidden = int(cfg.get("target_hidden_size") or layer.get("target_hidden_size")
                        or hidden)
    if target_hidden != tgt["hidden_size"]:
        raise ValueError(f"{f}: the head reads target hidden states of size {target_hidden} "
                         f"(target_hidden_size / hidden_size), but the target's hidden size is "
                         f"{tgt['hidden_size']}")
    vocab = int(layer.get("vocab_size") or cfg.get("vocab_size") or tgt["vocab_size"])
    if vocab != tgt["vocab_size"]:
        raise ValueError(f"{f}: vocab_size {vocab} but the target's vocabulary has "
                         f"{tgt['vocab_size']} tokens")
    dvs = int(cfg.get("draft_vocab_size") or layer.get("draft_vocab_size") or vocab)
    if not 1 <= dvs <= vocab:
        raise ValueError(f"{f}: draft_vocab_size {dvs} must be in [1, vocab_size = {vocab}]")
    ids = (cfg.get("eagle_aux_hidden_state_layer_ids") or eagle.get(
        "eagle_aux_hidden_state_layer_ids") or layer.get("eagle_aux_hidden_state_layer_ids"))
    L = tgt["num_layers"]
    ids = tuple(int(i) for i in ids) if ids else (2, L // 2, L - 3)  # vLLM's default
    if any(not 0 <= i <= L for i in ids):
        raise ValueError(f"{f}: eagle_aux_hidden_state_layer_ids {list(ids)} must lie in "
                         f"[0, {L}] (the target has {L} layers)")
    aux = tuple(sorted(set(ids)))  # vLLM collects them while iterating the layers
    n_layers = int(layer.get("num_hidden_layers", 1))
    pre = "midlayer." if any(k.startswith("midlayer.") for k in names) else "layers.0."
    _need(names, pre, f, "decoder layer 0")
    for i in range(1, n_layers):
        _need(names, f"layers.{i}.", f, f"num_hidden_layers = {n_layers}")
    for k in ("fc.weight", "lm_head.weight", "norm.weight"):
        _need(names, k, f, k.split(".")[0])
    fc_in = names["fc.weight"][1]
    if fc_in != target_hidden * len(aux):
        raise ValueError(f"{f}: fc.weight reads {fc_in} features, but {len(aux)} target hidden "
                         f"states of size {target_hidden} give {target_hidden * len(aux)} "
                         f"(layer ids {list(ids)})")
    if names["lm_head.weight"][0] != dvs:
        raise ValueError(f"{f}: lm_head.weight has {names['lm_head.weight'][0]} rows but "
                         f"draft_vocab_size is {dvs}")
    if dvs != vocab:
        if "d2t" not in names:
            raise ValueError(f"{f}: draft_vocab_size {dvs} < vocab_size {vocab} needs a d2t "
                             "map in the checkpoint; it has none")
    if "d2t" in names and names["d2t"] != (dvs,):
        raise ValueError(f"{f}: d2t has shape {list(names['d2t'])}, but draft_vocab_size is "
                         f"{dvs} (one offset per draft token)")
    opts["target_hidden_size"] = target_hidden
    return HeadConfig("eagle3", fmt, p, layer, hidden, vocab, dvs, n_layers, aux, opts, files,
                      names)


def _eagle_config(p, cfg, files, names, tgt) -> HeadConfig:
    f = p / "config.json"
    hidden = int(cfg["hidden_size"])
    if hidden != tgt["hidden_size"]:
        raise ValueError(f"{f}: hidden_size {hidden} but the target's hidden size is "
                         f"{tgt['hidden_size']} (an EAGLE-1 head reads the target's last hidden "
                         "state)")
    vocab = int(cfg.get("vocab_size", tgt["vocab_size"]))
    if vocab != tgt["vocab_size"]:
        raise ValueError(f"{f}: vocab_size {vocab} but the target's vocabulary has "
                         f"{tgt['vocab_size']} tokens")
    n_layers = int(cfg.get("num_hidden_layers", 1))
    _need(names, "fc.weight", f, "fc")
    for i in range(n_layers):
        _need(names, f"layers.{i}.", f, f"num_hidden_layers = {n_layers}")
    if names["fc.weight"][1] != 2 * hidden:
        raise ValueError(f"{f}: fc.weight reads {names['fc.weight'][1]} features, EAGLE-1 needs "
                         f"2 x hidden_size = {2 * hidden}")
    return HeadConfig("eagle", "eagle-yuhuili", p, dict(cfg), hidden, vocab, vocab, n_layers,
                      (), {"fc_bias": "fc.bias" in names}, files, names)


def _mtp_config(p, cfg, files, names, tgt) -> HeadConfig:
    f = p / "config.json"
    n = int(cfg.get("num_nextn_predict_layers") or 0)
    mt = cfg.get("model_type")
    if n < 1:
        raise ValueError(f"{f}: MTP was asked for, but this config declares no MTP layer "
                         f"(num_nextn_predict_layers = {cfg.get('num_nextn_predict_layers')}); "
                         "pass a checkpoint that ships MTP layers (DeepSeek-V3/R1, GLM-4.5, "
                         "Qwen3-Next) or use --method eagle3 with a head")
    if mt not in _MTP_TYPES:
        raise ValueError(f"{f}: MTP layers of model_type {mt!r} are not supported (supported: "
                         f"{list(_MTP_TYPES)})")
    hidden = int(cfg["hidden_size"])
    if hidden != tgt["hidden_size"] or int(cfg["vocab_size"]) != tgt["vocab_size"]:
        raise ValueError(f"{f}: hidden_size {hidden} / vocab_size {cfg['vocab_size']} differ "
                         f"from the target's {tgt['hidden_size']} / {tgt['vocab_size']}: MTP "
                         "layers are read from the target's own checkpoint")
    L = int(cfg["num_hidden_layers"])
    if mt == "qwen3_next":
        for k in ("mtp.fc.weight", "mtp.layers.0.", "mtp.norm.weight",
                  "mtp.pre_fc_norm_embedding.weight", "mtp.pre_fc_norm_hidden.weight"):
            _need(names, k, f, f"num_nextn_predict_layers = {n} (Qwen3-Next MTP)")
    else:
        for k in ("enorm.", "hnorm.", "eh_proj.", "shared_head.norm.", "input_layernorm."):
            _need(names, f"model.layers.{L}.{k}", f,
                  f"num_nextn_predict_layers = {n} (layer {L}, after the {L} decoder layers)")
    return HeadConfig("mtp", f"mtp-{mt}", p, dict(cfg), hidden, int(cfg["vocab_size"]),
                      int(cfg["vocab_size"]), n, (), {}, files, names, mtp_start=L)


# --------------------------------------------------------------------------- the key/value store
class _KV:
    """The key/value store transformers' attention calls (``update`` appends along the
    sequence axis and returns everything stored); ``crop`` keeps the first n positions."""

    def __init__(self):
        self.k = self.v = None

    def update(self, k, v, layer_idx=0, *args, **kwargs):
        self.k = k if self.k is None else torch.cat([self.k, k], -2)
        self.v = v if self.v is None else torch.cat([self.v, v], -2)
        return self.k, self.v

    def __len__(self):
        return 0 if self.k is None else self.k.shape[-2]

    def crop(self, n: int) -> None:
        if self.k is not None:
            self.k, self.v = self.k[..., :n, :], self.v[..., :n, :]


def _mask(allowed: torch.Tensor, dtype) -> torch.Tensor:
    """A bool (q, k) matrix as transformers' additive 4-D mask (1, 1, q, k)."""
    m = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)
    m.masked_fill_(~allowed, torch.finfo(dtype).min)
    return m[None, None]


# --------------------------------------------------------------------------- target states
def _layers_of(model):
    base = model.base_model
    n = _target_dims(model.config)["num_layers"]
    for mod in base.children():
        if isinstance(mod, nn.ModuleList) and len(mod) == n:
            return mod
    raise ValueError(f"cannot find the {n} decoder layers of {type(model).__name__}")


def target_states(target, input_ids, *, aux_layers=(), cache=None, keep_batch=False):
    """One target forward with the hidden states a head reads.

    Parameters
    ----------
    target : a transformers causal LM.
    input_ids : LongTensor (1, n).
    aux_layers : EAGLE-3's layer ids (l = residual stream after l layers; l = num_layers is
        read before the final norm, as vLLM does).
    cache : optional transformers cache (the reference loop's).
    keep_batch : bool, return (B, n, .) states for a batch (training) instead of sequence 0's.

    Returns
    -------
    (output, final, aux): the model output (``.logits`` (1, n, V)), the last hidden state after
    the final norm (n, H), the aux states concatenated (n, len(aux) H) or None.
    """
    aux_layers = tuple(aux_layers)
    L = _target_dims(target.config)["num_layers"]
    grab, hook = [], None
    if L in aux_layers:
        hook = _layers_of(target)[-1].register_forward_hook(
            lambda m, a, o: grab.append(o[0] if isinstance(o, tuple) else o))
    try:
        kw = {"cache": cache, "use_cache": True} if cache is not None else {}
        out = target(input_ids=input_ids, output_hidden_states=True, **kw)
    finally:
        if hook is not None:
            hook.remove()
    hs = out.hidden_states
    b = slice(None) if keep_batch else 0
    aux = None
    if aux_layers:
        aux = torch.cat([(grab[0] if i == L else hs[i])[b] for i in aux_layers], -1)
    return out, hs[-1][b], aux


# --------------------------------------------------------------------------- the head
class Head(nn.Module):
    """A loaded head (see the module docstring); built by :func:`load_head`.

    ``forward(ids, hidden, positions, caches, mask) -> (logits, recycle)``: ids (q,) target
    token ids, hidden (q, H) (the combined target state for a first pass, the head's own
    recycled state for later steps), positions (q,), one :class:`_KV` per decoder layer, the
    additive mask (1, 1, q, k); logits (q, V target), recycle (q, H). One call counts as one
    head forward (the reference loop counts them with a hook).
    """

    def __init__(self, hc: HeadConfig, embed: nn.Module, lm_head: nn.Module | None):
        super().__init__()
        self.hc = hc
        self.method = hc.method
        self.embed = embed
        self.aux_layers = hc.aux_layers
        H = hc.hidden_size
        if hc.method in ("eagle", "eagle3"):
            from transformers import LlamaConfig
            from transformers.models.llama.modeling_llama import (LlamaDecoderLayer,
                                                                  LlamaRMSNorm,
                                                                  LlamaRotaryEmbedding)
            lc = {k: v for k, v in hc.layer_config.items()
                  if k not in ("architectures", "eagle_config", "model_type")}
            lc.setdefault("num_attention_heads", max(1, H // 64))
            self.cfg = LlamaConfig(**lc)
            self.cfg._attn_implementation = "sdpa"
            self.rotary = LlamaRotaryEmbedding(self.cfg)
            self.layers = nn.ModuleList(LlamaDecoderLayer(self.cfg, layer_idx=0)
                                        for _ in range(hc.num_layers))
            eps = self.cfg.rms_norm_eps
            if hc.method == "eagle":
                self.fc = nn.Linear(2 * H, H, bias=hc.options.get("fc_bias", False))
                self.layers[0].input_layernorm = nn.Identity()
                self.lm_head = lm_head
            else:
                n_aux = len(hc.aux_layers)
                t_h = hc.options["target_hidden_size"]
                self.fc = nn.Linear(t_h * n_aux, H, bias=False)
                if hc.options["norm_before_fc"]:
                    self.input_norm = LlamaRMSNorm(t_h * n_aux, eps=eps)
                if hc.options["fc_norm"]:
                    self.fc_norm = nn.ModuleList(LlamaRMSNorm(t_h, eps=eps)
                                                 for _ in range(n_aux))
                first = self.layers[0]
                att = first.self_attn
                for name in ("q_proj", "k_proj", "v_proj"):
                    old = getattr(att, name)
                    setattr(att, name, nn.Linear(2 * H, old.out_features,
                                                 bias=old.bias is not None))
                first.hidden_norm = LlamaRMSNorm(H, eps=eps)
                self.norm = LlamaRMSNorm(H, eps=eps)
                self.lm_head = nn.Linear(H, hc.draft_vocab_size, bias=False)
                self.register_buffer("d2t", torch.zeros(hc.draft_vocab_size, dtype=torch.long))
        else:
            self._build_mtp(hc, lm_head)

    def _build_mtp(self, hc, lm_head):
        kind = hc.fmt.split("-", 1)[1]
        cfg = copy.deepcopy(hc.layer_config)
        H = hc.hidden_size
        if kind == "qwen3_next":
            from transformers import Qwen3NextConfig
            from transformers.models.qwen3_next import modeling_qwen3_next as mq
            cfg["layer_types"] = ["full_attention"] * int(cfg["num_hidden_layers"])
            c = Qwen3NextConfig(**{k: v for k, v in cfg.items() if k != "architectures"})
            c._attn_implementation = "sdpa"
            self.cfg = c
            self.rotary = mq.Qwen3NextRotaryEmbedding(c)
            self.block = mq.Qwen3NextDecoderLayer(c, layer_idx=0)
            self.fc = nn.Linear(2 * H, H, bias=False)
            self.pre_fc_norm_embedding = mq.Qwen3NextRMSNorm(H, eps=c.rms_norm_eps)
            self.pre_fc_norm_hidden = mq.Qwen3NextRMSNorm(H, eps=c.rms_norm_eps)
            self.norm = mq.Qwen3NextRMSNorm(H, eps=c.rms_norm_eps)
            self.lm_head = lm_head
            return
        if kind == "deepseek_v3":
            from transformers import DeepseekV3Config as C
            from transformers.models.deepseek_v3 import modeling_deepseek_v3 as mm
            Layer, Norm, Rot = (mm.DeepseekV3DecoderLayer, mm.DeepseekV3RMSNorm,
                                mm.DeepseekV3RotaryEmbedding)
        else:
            from transformers import Glm4MoeConfig as C
            from transformers.models.glm4_moe import modeling_glm4_moe as mm
            Layer, Norm, Rot = (mm.Glm4MoeDecoderLayer, mm.Glm4MoeRMSNorm,
                                mm.Glm4MoeRotaryEmbedding)
        c = C(**{k: v for k, v in cfg.items() if k != "architectures"})
        c._attn_implementation = "sdpa"
        c._experts_implementation = "eager"
        self.cfg = c
        self.rotary = Rot(c)
        self.block = Layer(c, layer_idx=hc.mtp_start)  # MoE or dense as layer L would be
        self.block.self_attn.layer_idx = 0
        eps = c.rms_norm_eps
        self.enorm, self.hnorm = Norm(H, eps=eps), Norm(H, eps=eps)
        self.eh_proj = nn.Linear(2 * H, H, bias=False)
        self.shared_norm = Norm(H, eps=eps)
        self._own_lm_head = any(k.startswith(f"model.layers.{hc.mtp_start}.shared_head.head.")
                                for k in hc.names)
        self.lm_head = nn.Linear(H, hc.vocab_size, bias=False) if self._own_lm_head \
            else lm_head
        self.recycle_normed = kind == "deepseek_v3"  # DeepSeekMTPModel returns a pair

    # -- inputs of a first pass
    def combine(self, final: torch.Tensor, aux: torch.Tensor | None) -> torch.Tensor:
        """The hidden state a first pass reads from the target's states (n, H): EAGLE-3's fc
        over the aux states (after norm_before_fc / fc_norm when the config sets them), else
        the target's final hidden state."""
        if self.method != "eagle3":
            return final
        x = aux
        if hasattr(self, "input_norm"):
            x = self.input_norm(x)
        if hasattr(self, "fc_norm"):
            x = torch.cat([n(c) for n, c in zip(self.fc_norm, x.chunk(len(self.fc_norm), -1))],
                          -1)
        return self.fc(x)

    def new_caches(self) -> list:
        return [_KV() for _ in range(len(self.layers) if hasattr(self, "layers") else 1)]

    def forward(self, ids, hidden, positions, caches, mask):
        one = ids.dim() == 1  # (q,) or a batch (B, q) of sequences alike
        emb = self.embed(ids[None] if one else ids)
        h = hidden[None] if one else hidden
        pos = (positions[None] if positions.dim() == 1 else positions).expand(emb.shape[:2])
        if self.method == "eagle3":
            logits, rec = self._eagle3(emb, h, pos, caches, mask)
        elif self.method == "eagle":
            x = self.fc(torch.cat([emb, h], -1))
            pe = self.rotary(x, pos)
            for layer, kv in zip(self.layers, caches):
                x = layer(x, attention_mask=mask, position_embeddings=pe, cache=kv)
            logits, rec = self.lm_head(x), x
        else:
            logits, rec = self._mtp(emb, h, pos, caches, mask)
        return (logits[0], rec[0]) if one else (logits, rec)

    def _eagle3(self, emb, h, pos, caches, mask):
        first = self.layers[0]
        e = first.input_layernorm(emb)
        if self.hc.options["norm_before_residual"]:
            h = first.hidden_norm(h)
            residual = h
        else:
            residual = h
            h = first.hidden_norm(h)
        x = torch.cat([e, h], -1)
        pe = self.rotary(h, pos)
        out = None
        for i, (layer, kv) in enumerate(zip(self.layers, caches)):
            if i > 0:
                residual = out + residual
                x = layer.input_layernorm(residual)
            a = layer.self_attn(hidden_states=x, position_embeddings=pe, attention_mask=mask,
                                cache=kv)[0]
            residual = a + residual
            out = layer.mlp(layer.post_attention_layernorm(residual))
        prenorm = out + residual
        normed = self.norm(prenorm)
        logits = self._to_target(self.lm_head(normed))
        return logits, (normed if self.hc.options["norm_output"] else prenorm)

    def _to_target(self, logits):
        """Draft-vocabulary logits as target-vocabulary logits (-inf outside), by d2t."""
        if self.hc.draft_vocab_size == self.hc.vocab_size:
            return logits
        targets = torch.arange(self.hc.draft_vocab_size, device=logits.device) + self.d2t
        out = logits.new_full((*logits.shape[:-1], self.hc.vocab_size), float("-inf"))
        out[..., targets] = logits
        return out

    def _mtp(self, emb, h, pos, caches, mask):
        kv = caches[0]
        if self.hc.fmt == "mtp-qwen3_next":
            x = self.fc(torch.cat([self.pre_fc_norm_embedding(emb), self.pre_fc_norm_hidden(h)],
                                  -1))
            pe = self.rotary(x, pos)
            x = self.block(x, attention_mask=mask, position_embeddings=pe, cache=kv)
            x = self.norm(x)
            return self.lm_head(x), x
        emb = torch.where(pos[..., None] == 0, torch.zeros_like(emb), emb)
        x = self.eh_proj(torch.cat([self.enorm(emb), self.hnorm(h)], -1))
        pe = self.rotary(x, pos)
        x = self.block(x, attention_mask=mask, position_embeddings=pe, cache=kv)
        normed = self.shared_norm(x)
        return self.lm_head(normed), (normed if self.recycle_normed else x)

    # -- teacher forcing along one sequence
    @torch.inference_mode()
    def teacher_force(self, ids, final, aux, depth: int, start: int = 0):
        """:meth:`unroll` without autograd (see there)."""
        return self.unroll(ids, final, aux, depth, start)

    def unroll(self, ids, final, aux, depth: int, start: int = 0):
        """Every round start of one sequence at once, ``depth`` draft steps deep, along the
        sequence's own tokens.

        Parameters
        ----------
        ids : LongTensor (n,), prompt + response, or (B, n) sequences of one length (training);
            final, aux : from :func:`target_states` ((n, .) or (B, n, .)).
        depth : int >= 1, draft steps (the largest gamma).
        start : int in [0, n - 2], the first round-start row wanted (a request's first decode
            step is row prompt length - 1; earlier rows only fill the first pass's cache).

        Returns
        -------
        list of ``depth`` logits tensors, each (n - 1 - start, V): entry j-1, row r is draft
        step j of the round whose last verified token is x_{i+1}, i = start + r (it predicts
        x_{i+j+1}; rows where i + j + 1 >= n predict past the end). Step 1 is the first pass
        over positions 0..n-2 (input x_{i+1}, the target's h_i); step j >= 2 feeds x_{i+j}
        and step j-1's recycled state at position i + j - 1, attending to first-pass positions
        <= i and to the round's own earlier steps, as vLLM's cache holds them.
        """
        n = ids.shape[-1]
        m = n - 1
        dev = ids.device
        hid = self.combine(final, aux)
        caches = self.new_caches()
        ar = torch.arange(m, device=dev)
        dtype = hid.dtype
        logits, rec = self(ids[..., 1:], hid[..., :-1, :], ar, caches,
                           _mask(ar[None, :] <= ar[:, None], dtype))
        rows = ar[start:]
        out = [logits[..., start:, :]]
        rec = rec[..., start:, :]
        allowed = ar[None, :] <= rows[:, None]
        eye = torch.eye(rows.numel(), dtype=torch.bool, device=dev)
        for j in range(2, depth + 1):
            allowed = torch.cat([allowed, eye], 1)
            tok = ids[..., torch.clamp(rows + j, max=n - 1)]
            logits, rec = self(tok, rec, rows + j - 1, caches, _mask(allowed, dtype))
            out.append(logits)
        return out


# --------------------------------------------------------------------------- loading
def _param_names(hc: HeadConfig) -> dict:
    """``{checkpoint tensor name: this module's parameter name}`` for a head."""
    out = {}
    if hc.method in ("eagle", "eagle3"):
        for k in hc.names:
            name = k.replace("midlayer.", "layers.0.")
            if name.startswith("embed_tokens."):
                name = "embed." + name[len("embed_tokens."):]
            if name in ("t2d",) or name.startswith("model."):
                continue
            out[k] = name
        return out
    if hc.fmt == "mtp-qwen3_next":
        for k in hc.names:
            if k.startswith("mtp.layers.0."):
                out[k] = "block." + k[len("mtp.layers.0."):]
            elif k.startswith("mtp."):
                out[k] = k[len("mtp."):]
        return out
    pre = f"model.layers.{hc.mtp_start}."
    for k in hc.names:
        if not k.startswith(pre):
            continue
        rest = k[len(pre):]
        for a, b in (("enorm.", "enorm."), ("hnorm.", "hnorm."), ("eh_proj.", "eh_proj."),
                     ("shared_head.norm.", "shared_norm."), ("shared_head.head.", "lm_head."),
                     ("embed_tokens.", "embed.")):
            if rest.startswith(a):
                out[k] = b + rest[len(a):]
                break
        else:
            out[k] = "block." + rest
    return out


_EXPERT = re.compile(r"(.*\.experts)\.(\d+)\.(gate|up|down)_proj\.weight$")


def load_head(path, target, *, method: str | None = None) -> Head:
    """Load a head for ``target`` (a loaded transformers causal LM), on its device and dtype.

    The config is checked first (:func:`head_config`); then the tensors are read with
    safetensors and every parameter of the head must be filled: a missing tensor (beyond the
    embedding and lm_head, which are shared from the target when the head has none, as vLLM
    shares them) raises.

    Raises
    ------
    ValueError
        as :func:`head_config`; a checkpoint tensor whose shape differs from what the config
        implies, or a parameter left unfilled (naming the file and tensor).
    """
    from safetensors import safe_open

    hc = head_config(path, target.config, method=method)
    names = _param_names(hc)
    has_embed = any(v.startswith("embed.") for v in names.values())
    has_head = any(v.startswith("lm_head.") for v in names.values())
    t_emb = target.get_input_embeddings()
    t_head = target.get_output_embeddings()
    embed = nn.Embedding(hc.vocab_size, hc.hidden_size) if has_embed else t_emb
    lm = nn.Linear(hc.hidden_size, hc.vocab_size, bias=False) if has_head else t_head
    head = Head(hc, embed, lm)
    if hc.method == "eagle" and has_head:
        head._own_lm_head = True
    own = dict(head.named_parameters())
    own.update(dict(head.named_buffers()))
    shared = {id(q) for q in [*t_emb.parameters(), *t_head.parameters()]}
    filled, experts = set(), {}
    for fpath in hc.files:
        with safe_open(str(fpath), framework="pt") as fh:
            for k in fh.keys():
                dst = names.get(k)
                if dst is None:
                    continue
                m = _EXPERT.match(dst)
                if m and dst not in own:  # per-expert tensors -> transformers' fused experts
                    experts.setdefault(m[1], {})[(int(m[2]), m[3])] = fh.get_tensor(k)
                    continue
                if dst not in own:
                    continue
                t = fh.get_tensor(k)
                if tuple(t.shape) != tuple(own[dst].shape):
                    raise ValueError(f"{fpath}: tensor {k} has shape {list(t.shape)}, the config "
                                     f"implies {list(own[dst].shape)}")
                with torch.no_grad():
                    own[dst].copy_(t.to(own[dst].dtype))
                filled.add(dst)
    for pre, parts in experts.items():
        n_e = 1 + max(e for e, _ in parts)
        with torch.no_grad():
            gu = torch.stack([torch.cat([parts[(e, "gate")], parts[(e, "up")]]) for e in
                              range(n_e)])
            own[f"{pre}.gate_up_proj"].copy_(gu.to(own[f"{pre}.gate_up_proj"].dtype))
            own[f"{pre}.down_proj"].copy_(torch.stack([parts[(e, "down")] for e in range(n_e)]))
        filled |= {f"{pre}.gate_up_proj", f"{pre}.down_proj"}
    missing = [n for n, q in own.items() if n not in filled and id(q) not in shared
               and "rotary" not in n and not n.endswith("inv_freq")]
    if hc.method == "eagle3" and "d2t" in missing and hc.draft_vocab_size == hc.vocab_size:
        missing.remove("d2t")
    if missing:
        raise ValueError(f"{hc.path}: the checkpoint lacks tensors the config declares: "
                         f"{missing[:6]}{' ...' if len(missing) > 6 else ''}")
    p = next(target.parameters())
    return head.to(device=p.device, dtype=p.dtype).eval()


def checkpoint_state(head: Head) -> dict:
    """The head's tensors under the names its format's checkpoints use (the inverse of what
    :func:`load_head` reads); the shared embedding and lm_head are left out."""
    hc = head.hc
    shared = {id(p) for p in head.embed.parameters()}
    if hc.method != "eagle3" and head.lm_head is not None and not getattr(
            head, "_own_lm_head", False):
        shared |= {id(p) for p in head.lm_head.parameters()}
    params = dict(head.named_parameters())
    sd = {k: v for k, v in head.state_dict().items()
          if "rotary" not in k and not (k in params and id(params[k]) in shared)}
    out = {}
    for k, v in sd.items():
        if hc.method in ("eagle", "eagle3"):
            name = k
        elif hc.fmt == "mtp-qwen3_next":
            name = "mtp.layers.0." + k[len("block."):] if k.startswith("block.") else "mtp." + k
        else:
            pre = f"model.layers.{hc.mtp_start}."
            name = pre + (k[len("block."):] if k.startswith("block.") else
                          k.replace("shared_norm.", "shared_head.norm.").replace(
                              "lm_head.", "shared_head.head."))
        v = v.detach().cpu().contiguous()
        if name.endswith(".experts.gate_up_proj"):  # as checkpoints store experts: one each
            base = name[:-len("gate_up_proj")]
            for e, w in enumerate(v):
                g, u = w.chunk(2)
                out[f"{base}{e}.gate_proj.weight"] = g.contiguous()
                out[f"{base}{e}.up_proj.weight"] = u.contiguous()
            continue
        if name.endswith(".experts.down_proj"):
            for e, w in enumerate(v):
                out[f"{name[:-len('down_proj')]}{e}.down_proj.weight"] = w.contiguous()
            continue
        out[name] = v
    if "d2t" in out:  # t2d: which target ids the draft vocabulary holds (vLLM skips it)
        t2d = torch.zeros(hc.vocab_size, dtype=torch.bool)
        t2d[torch.arange(hc.draft_vocab_size) + out["d2t"]] = True
        out["t2d"] = t2d
    return out


def save_head(head: Head, folder, config: dict, *, filename: str = "model.safetensors") -> None:
    """Write a head: ``config.json`` as given (unless ``filename`` is not the default, for
    MTP layers added to a target folder) and :func:`checkpoint_state`'s tensors, so that
    :func:`load_head` and vLLM read it back."""
    from safetensors.torch import save_file

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    save_file(checkpoint_state(head), str(out / filename))
    if filename == "model.safetensors":
        (out / "config.json").write_text(json.dumps(config, indent=1) + "\n", encoding="utf-8")


def eagle3_config(target_config, *, layer_ids, draft_vocab_size: int | None = None,
                  intermediate_size: int | None = None, num_heads: int | None = None,
                  max_position_embeddings: int = 2048) -> dict:
    """A speculators-format EAGLE-3 ``config.json`` (as a dict) for a head of ``target``'s
    hidden size and vocabulary reading the target layers ``layer_ids`` (the bundled head's
    recipe, and the tests')."""
    t = _target_dims(target_config)
    H = t["hidden_size"]
    heads = num_heads or max(1, H // 64)
    layer = {"model_type": "llama", "hidden_size": H, "intermediate_size": intermediate_size
             or 4 * H, "num_attention_heads": heads, "num_key_value_heads": heads,
             "num_hidden_layers": 1, "vocab_size": t["vocab_size"], "rms_norm_eps": 1e-6,
             "max_position_embeddings": max_position_embeddings, "rope_theta": 10000.0,
             "hidden_act": "silu", "head_dim": H // heads, "tie_word_embeddings": False}
    return {"architectures": ["Eagle3Speculator"], "speculators_model_type": "eagle3",
            "speculators_version": "0.1.0", "transformer_layer_config": layer,
            "draft_vocab_size": int(draft_vocab_size or t["vocab_size"]),
            "target_hidden_size": H, "norm_before_residual": True,
            "eagle_aux_hidden_state_layer_ids": [int(i) for i in layer_ids],
            "speculators_config": {"algorithm": "eagle3", "default_proposal_method": "greedy",
                                   "verifier": {"name_or_path": None,
                                                "architectures": list(getattr(
                                                    target_config, "architectures", None)
                                                    or [])}}}


def new_head(config: dict, target) -> Head:
    """A randomly initialised head for ``target`` from a config dict (EAGLE-3 from
    :func:`eagle3_config`, EAGLE-1 from a Llama layer config, MTP from the target's own
    config), for training and tests; write it with :func:`save_head`."""
    t = _target_dims(target.config)
    kind = _detect(config)
    names = _fake_names(config, t, kind)
    p = Path("<new>")
    hc = {"eagle3": _eagle3_config, "eagle": _eagle_config, "mtp": _mtp_config}[kind](
        p, config, (), names, t)
    head = Head(hc, target.get_input_embeddings(), target.get_output_embeddings())
    with torch.no_grad():  # transformers' MoE blocks allocate their experts and router empty
        for name, q in head.named_parameters():
            if ".experts." in name or name.endswith(("experts.gate_up_proj", "experts.down_proj",
                                                      "mlp.gate.weight")):
                q.normal_(0.0, 0.02)
        for name, b in head.named_buffers():
            if "e_score_correction_bias" in name:
                b.zero_()
    prm = next(target.parameters())
    return head.to(device=prm.device, dtype=prm.dtype)


def _fake_names(config: dict, t: dict, kind: str) -> dict:
    """The tensor names and shapes a new head of ``config`` will have (for the checks)."""
    if kind == "eagle3":
        n = len(set(config["eagle_aux_hidden_state_layer_ids"]))
        H = config["transformer_layer_config"]["hidden_size"]
        return {"layers.0.": (), "fc.weight": (H, t["hidden_size"] * n),
                "lm_head.weight": (config["draft_vocab_size"], H), "norm.weight": (H,),
                "d2t": (config["draft_vocab_size"],)}
    if kind == "eagle":
        H = config["hidden_size"]
        return {"fc.weight": (H, 2 * H), **{f"layers.{i}.": () for i in
                                           range(config.get("num_hidden_layers", 1))}}
    L = config["num_hidden_layers"]
    if config.get("model_type") == "qwen3_next":
        return dict.fromkeys(["mtp.fc.weight", "mtp.layers.0.", "mtp.norm.weight",
                              "mtp.pre_fc_norm_embedding.weight",
                              "mtp.pre_fc_norm_hidden.weight"], ())
    return dict.fromkeys([f"model.layers.{L}.{k}" for k in (
        "enorm.", "hnorm.", "eh_proj.", "shared_head.norm.", "shared_head.head.",
        "input_layernorm.")], ())
