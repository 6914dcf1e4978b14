"""Devices, dtypes and loading: a causal LM and its tokenizer from a local folder or a named hub
id, the checks a draft/target pair must pass (one vocabulary, contexts long enough), the pad id
``generate`` needs, and the torch settings a measurement runs under.

transformers is imported by the functions that load or run a model, not with this module, so
that the argument checks which import it (:mod:`specnb.measure.prompts`, the measurement's and
the head replay's refusals) do not wait seconds for transformers.

Loading rules: a local folder, or a hub id only when the caller names one (then transformers may
use the network); safetensors only (``use_safetensors=True``); ``trust_remote_code=False``.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

import torch

from .. import _check
from ..memory import TORCH_DTYPES
from .args import BUNDLED_DRAFTS, BUNDLED_TARGET, MODELS_DIR  # one home: torch-free args
from .args import OFFLINE_HINT as _OFFLINE_HINT
from .args import check_model_name
from .args import offline as _offline

__all__ = [
    "MODELS_DIR", "BUNDLED_TARGET", "BUNDLED_DRAFTS", "TOKENIZER_FILES", "resolve_device",
    "resolve_dtype", "load_model", "check_pair", "model_contexts", "context_length",
    "pad_token_id", "short_names",
]



# --------------------------------------------------------------------------- loading
def resolve_device(device: str = "auto") -> str:
    """``"auto"`` -> ``"cuda"`` when torch sees a GPU, else ``"cpu"``; ``"cpu"``/``"cuda"``
    (or ``"cuda:N"``) pass through.

    Raises
    ------
    ValueError
        An unknown device, or ``"cuda"`` without a GPU.
    """
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        return device
    if re.fullmatch(r"cuda(:\d+)?", str(device)):
        if not torch.cuda.is_available():
            if torch.version.cuda is None:
                raise ValueError(
                    f"device {device!r} (--device on the command line) needs a CUDA build of "
                    f"torch, but this torch {torch.__version__} is CPU-only: install a CUDA "
                    "build into .venv (the command for your CUDA version is on "
                    "https://pytorch.org/get-started/locally/, e.g. .venv/bin/pip install torch "
                    "--index-url https://download.pytorch.org/whl/cu126), then run make with an "
                    "empty TORCH (make TORCH= run) so it keeps that torch instead of the CPU "
                    "pin; or use device 'cpu' or 'auto'")
            raise ValueError(f"device {device!r} (--device on the command line) was asked for "
                             f"but torch {torch.__version__} (CUDA {torch.version.cuda}) sees no "
                             "GPU: check the driver (nvidia-smi) and CUDA_VISIBLE_DEVICES, or use "
                             "device 'cpu' or 'auto'")
        return device
    raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}")


#: torch dtypes by name: the names are :data:`specnb.memory.TORCH_DTYPES`' (the one table).
_DTYPES = {name: getattr(torch, name) for name in TORCH_DTYPES}


def resolve_dtype(dtype: str = "auto", device: str = "cpu") -> torch.dtype:
    """``"auto"`` -> float32 on CPU, bfloat16 on a GPU that supports it (else float16);
    ``"float32"``, ``"bfloat16"``, ``"float16"`` pass through.

    Raises
    ------
    ValueError
        Any other name.
    """
    if dtype == "auto":
        if str(device).startswith("cuda"):
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    if dtype not in _DTYPES:
        raise ValueError(f"dtype must be 'auto' or one of {sorted(_DTYPES)}, got {dtype!r}")
    return _DTYPES[dtype]



#: Files one of which a folder needs for AutoTokenizer (fast, sentencepiece or BPE vocab).
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json",
                   "spiece.model", "sentencepiece.bpe.model", "vocab.txt")


def _one_line(exc) -> str:
    """A library's exception text on one line (the CLI prints one-line errors)."""
    return " ".join(str(exc).split())


def load_model(name_or_path, *, device: str = "cpu", dtype="auto", need_tokenizer: bool = True):
    """Load a causal LM (and its tokenizer) from a local folder or a named hub id.

    Parameters
    ----------
    name_or_path : str or Path
        A local folder with ``config.json`` and ``*.safetensors`` (e.g. the bundled
        ``data/models/target-4x256``), or a hub id ``"org/name"`` (network; only when named).
    device : str, already resolved (see :func:`resolve_device`).
    dtype : str or torch.dtype, see :func:`resolve_dtype`.
    need_tokenizer : bool
        Raise when no tokenizer loads (True), or return ``None`` for it (False).

    Returns
    -------
    (model, tokenizer) : the model in eval mode on ``device``; tokenizer or None.

    Raises
    ------
    FileNotFoundError
        A path that does not exist (a local-looking name fails at once, without the hub), a
        folder without safetensors weights, a folder without tokenizer files when
        ``need_tokenizer``, or a name that is neither a folder nor a loadable hub id (with
        ``HF_HUB_OFFLINE=1``: not in the hub cache; nothing is requested).
    """
    name = str(name_or_path)
    path = Path(name).expanduser()
    torch_dtype = dtype if isinstance(dtype, torch.dtype) else resolve_dtype(dtype, device)
    kwargs = dict(use_safetensors=True, trust_remote_code=False, dtype=torch_dtype)
    src, local = _source(name, path)
    if local:
        kwargs["local_files_only"] = True
    no_tokenizer = path.is_dir() and not any((path / f).is_file() for f in TOKENIZER_FILES)
    if no_tokenizer and need_tokenizer:
        raise FileNotFoundError(
            f"model folder {name!r} holds no tokenizer files (one of "
            f"{', '.join(TOKENIZER_FILES)}): save the tokenizer it was trained with into it "
            "(tokenizer.save_pretrained(folder)); for the bundled family copy "
            "data/models/tokenizer/* there")
    model = _from_pretrained(name, src, kwargs)
    model.eval().to(device)
    tok = None
    if no_tokenizer:
        return model, None
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(src, trust_remote_code=False,
                                            local_files_only=kwargs.get("local_files_only", False))
    except (OSError, ValueError) as exc:
        if need_tokenizer:
            raise FileNotFoundError(f"model {name!r} has no loadable tokenizer: "
                                    f"{_one_line(exc)}") from exc
    return model, tok


def _source(name: str, path: Path) -> tuple[str, bool]:
    """``(what to pass to from_pretrained, local files only)`` for ``name``: a checked local
    folder, or a hub id (the hub cache only with ``HF_HUB_OFFLINE``); a local-looking name that
    does not exist raises at once (see :func:`load_model`)."""
    if path.exists():
        if not path.is_dir() or not (path / "config.json").is_file():
            raise FileNotFoundError(f"model path {name!r} must be a folder holding config.json "
                                    "and model.safetensors (a save_pretrained folder)")
        if not any(path.glob("*.safetensors")):
            raise FileNotFoundError(
                f"model path {name!r} holds no *.safetensors file; specnb loads safetensors only "
                "(convert with model.save_pretrained(dir, safe_serialization=True))")
        return str(path), True
    check_model_name(name, "model path")  # a missing local path, or offline and not cached
    return name, _offline()  # offline: the hub cache only, no request


def _from_pretrained(name: str, src: str, kwargs: dict):
    """``AutoModelForCausalLM.from_pretrained(src, **kwargs)`` without progress bars or the hub's
    stray log line; a hub id that does not load raises a one-line FileNotFoundError."""
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as tf_logging

    bars = tf_logging.is_progress_bar_enabled()
    tf_logging.disable_progress_bar()
    import huggingface_hub.utils.logging as hub_logging  # a failed hub request logs a stray line

    hub_level = hub_logging.get_verbosity()
    hub_logging.set_verbosity_error()
    try:
        return AutoModelForCausalLM.from_pretrained(src, **kwargs)
    except OSError as exc:
        if _offline():
            raise FileNotFoundError(
                f"could not load model {name!r}: it is not a local folder, and HF_HUB_OFFLINE is "
                "set, so only the hub cache was searched and it is not there (unset "
                f"HF_HUB_OFFLINE to download it): {_one_line(exc)}") from exc
        raise FileNotFoundError(
            f"could not load model {name!r}: it is not a local folder, and loading it as a hub "
            f"id failed (no network, a typo, or no safetensors weights; if you meant a local "
            f"folder, check the path; {_OFFLINE_HINT}): {_one_line(exc)}") from exc
    finally:
        hub_logging.set_verbosity(hub_level)
        if bars:
            tf_logging.enable_progress_bar()


def _vocab_size(model) -> int:
    return int(model.config.get_text_config().vocab_size)


def check_pair(target, draft, target_tokenizer=None, draft_tokenizer=None) -> None:
    """Check that ``draft`` can assist ``target`` through transformers' shared-tokenizer path.

    Raises
    ------
    ValueError
        Different ``vocab_size`` in the two configs, or two tokenizers with different
        vocabularies. (transformers would then need ``tokenizer``/``assistant_tokenizer`` and
        its universal assisted decoding, which re-encodes text and is not what specnb measures.)
    """
    vt, vd = _vocab_size(target), _vocab_size(draft)
    if vt != vd and target_tokenizer is not None and draft_tokenizer is not None \
            and target_tokenizer.get_vocab() == draft_tokenizer.get_vocab():
        n = len(target_tokenizer)
        small = "draft" if vt > vd else "target"
        raise ValueError(
            f"mismatched vocabularies, but only the embedding size differs: target and draft "
            f"share one tokenizer ({n} tokens), while the target's embedding has vocab_size = "
            f"{vt} rows and the draft's {vd} (padding rows, as Qwen pairs ship). transformers' "
            "shared-tokenizer assisted decoding compares vocab_size and refuses the pair (it "
            "would ask for tokenizer/assistant_tokenizer and re-encode text), so it cannot be "
            f"measured as is. To measure it, pad the {small}'s embedding to {max(vt, vd)} rows "
            f"and save it: model.resize_token_embeddings({max(vt, vd)}, mean_resizing=False); "
            "model.save_pretrained(folder) (the extra rows are ids the tokenizer never "
            "produces); or use a draft saved with the target's vocab_size.")
    if vt != vd:
        hint = ""
        if target_tokenizer is not None and len(target_tokenizer) <= min(vt, vd):
            hint = (f" If the draft uses the target's tokenizer ({len(target_tokenizer)} tokens) "
                    "and only its embedding is padded to another size, pad the smaller "
                    f"embedding to {max(vt, vd)} rows (model.resize_token_embeddings"
                    f"({max(vt, vd)}, mean_resizing=False); model.save_pretrained(folder)).")
        raise ValueError(
            f"mismatched vocabularies: target vocab_size = {vt}, draft vocab_size = {vd}. "
            "Assisted decoding measured here needs a draft with the target's tokenizer and "
            "vocab_size (e.g. two models of one family, or the bundled pair); pick such a "
            "draft." + hint)
    if target_tokenizer is not None and draft_tokenizer is not None:
        if target_tokenizer.get_vocab() != draft_tokenizer.get_vocab():
            raise ValueError(
                "mismatched vocabularies: target and draft tokenizers have the same size "
                f"({vt}) but different tokens; the draft must share the target's tokenizer")


def model_contexts(target, drafts: dict) -> dict:
    """Positions of every model: ``{"target": n, "draft 'name'": n, ...}`` (None: no limit
    declared). ``drafts`` maps labels to models or to (model, tokenizer) pairs."""
    out = {"target": context_length(target)}
    for name, d in drafts.items():
        out[f"draft {name!r}"] = context_length(d[0] if isinstance(d, tuple) else d)
    return out


def _check_fits(what: str, needed: int, context, advice: str) -> None:
    """Raise a ValueError when ``needed`` positions exceed a model's context. ``context`` is an
    int, None, or a dict from :func:`model_contexts` (the smallest one that is too small is
    named, with the others)."""
    ctx = context if isinstance(context, dict) else {"the model": context}
    small = {k: v for k, v in ctx.items() if v is not None and needed > v}
    if not small:
        return
    who = min(small, key=small.get)
    others = ", ".join(f"{k}: {v}" for k, v in ctx.items() if k != who)
    raise ValueError(f"{what} needs {needed} positions but {who} has a context of {small[who]} "
                     f"positions{f' ({others})' if others else ''}: {advice}")


def context_length(model) -> int | None:
    """The model's number of positions (``max_position_embeddings`` / GPT-2 ``n_positions``),
    or None when the config declares none."""
    cfg = model.config.get_text_config()
    for key in ("max_position_embeddings", "n_positions"):
        v = getattr(cfg, key, None)
        if isinstance(v, int) and v > 0:
            return v
    return None


def _sync(device) -> None:
    """Wait for the GPU (a no-op on a CPU), so that wall times cover the work."""
    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


def _first_id(v):
    """The first token id of an id, a list/tuple of ids or a tensor (None when there is none)."""
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, torch.Tensor):
        v = v.flatten().tolist()
    if isinstance(v, (list, tuple)):
        for x in v:
            x = _first_id(x)
            if x is not None:
                return x
        return None
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def pad_token_id(model) -> int | None:
    """The one pad id to pass to ``generate`` (batch size 1: it never pads), from any form
    transformers accepts: ``pad_token_id`` of the generation config (or the model config), else
    the first of ``eos_token_id`` (an int, a list such as Llama 3's ``[128001, 128009]``, or a
    tensor), as ``generate`` itself does; None when the configs name neither."""
    gc = model.generation_config
    cfg = model.config.get_text_config()
    for src, key in ((gc, "pad_token_id"), (cfg, "pad_token_id"), (gc, "eos_token_id"),
                     (cfg, "eos_token_id")):
        v = _first_id(getattr(src, key, None))
        if v is not None:
            return v
    return None


def short_names(names) -> list[str]:
    """Unique short labels for model paths or hub ids: the last path component, or more
    components where two would collide (``a/draft``, ``b/draft``)."""
    parts = [str(n).rstrip("/").split("/") for n in names]
    out = []
    for p in parts:
        k = 1
        while k < len(p) and sum(q[-k:] == p[-k:] for q in parts) > 1:
            k += 1
        out.append("/".join(p[-k:]))
    return out


def _as_list(x, name):
    """None, a list of one path/str, or the values of ``x`` (at least one, else a ValueError
    naming ``name``)."""
    if x is None:
        return None
    if isinstance(x, (str, Path)):
        return [x]
    x = list(x)
    if not x:
        raise ValueError(f"{name} must name at least one value, got none")
    return x


def _load_models(target, drafts, models, device, dtype):
    """Resolve ``device``/``dtype``, load the target and every draft (or take the loaded
    ``models``, see :func:`specnb.measure.measure`) and check each pair.

    Returns ``(target model, target tokenizer, {label: (draft, tokenizer)}, target name,
    (device, torch dtype))``."""
    dev = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, dev)
    if models is not None:
        tmodel, ttok = models["target"]
        dmodels = dict(models["drafts"])
        target_name = str(models.get("target_name", "target"))
    else:
        target_name = str(target if target is not None else BUNDLED_TARGET)
        tmodel, ttok = load_model(target_name, device=dev, dtype=torch_dtype)
        dlist = _as_list(drafts, "drafts") or list(BUNDLED_DRAFTS)
        dmodels = {label: load_model(d, device=dev, dtype=torch_dtype, need_tokenizer=False)
                   for label, d in zip(short_names(dlist), dlist)}
    for dm, dt in dmodels.values():
        check_pair(tmodel, dm, ttok, dt)
    return tmodel, ttok, dmodels, target_name, (dev, torch_dtype)


@contextlib.contextmanager
def _run_settings(dev, cpu_threads, name: str):
    """transformers' logging at errors only, and ``cpu_threads`` torch (CPU) threads (checked
    first, named ``name``), on a CPU and on CUDA alike (on CUDA the host thread launches the
    kernels; see :func:`specnb.measure.measure`); both restored on exit."""
    n = _check.scalar_int(name, cpu_threads, lo=1) if cpu_threads is not None else None
    from transformers.utils import logging as tf_logging

    verbosity = tf_logging.get_verbosity()
    threads = torch.get_num_threads()
    tf_logging.set_verbosity_error()
    if n is not None:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        tf_logging.set_verbosity(verbosity)
