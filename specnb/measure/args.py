"""Argument checks that need no torch, so that ``specnb measure`` rejects a bad argument in well
under a second, before torch and transformers load (4-15 s) and before any hub request: model
names (a local folder that exists, or a hub id; with ``HF_HUB_OFFLINE`` one in the hub cache),
prompt files (a file, not a folder), and the largest gamma a run can use.

The bundled paths live here (:mod:`specnb.measure.load` and :mod:`specnb.measure.prompts`
import them), so that the checks can name them without importing torch.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from ..data import DATA_DIR
from ..request_log import BUNDLED_LOGGED, BUNDLED_PROMPTS  # one home
from ..request_log import check_file as check_prompts_file

__all__ = ["MODELS_DIR", "BUNDLED_TARGET", "BUNDLED_DRAFTS", "BUNDLED_EAGLE3_HEAD",
           "BUNDLED_PROMPTS",
           "BUNDLED_LOGGED", "OFFLINE_HINT", "offline", "hub_reachable", "looks_like_path", "check_model_name",
           "check_prompts_file", "check_gammas", "local_context", "is_bundled_log",
           "check_device"]

#: Bundled models (``python -m specnb.measure.train``).
MODELS_DIR = DATA_DIR / "models"
BUNDLED_TARGET = MODELS_DIR / "target-4x256"
BUNDLED_DRAFTS = (MODELS_DIR / "draft-2x128", MODELS_DIR / "draft-1x64")
#: The bundled target's EAGLE-3 head (``python -m specnb.measure.train_head``).
BUNDLED_EAGLE3_HEAD = MODELS_DIR / "eagle3-head-target-4x256"
OFFLINE_HINT = ("to stay offline (no hub requests: only local folders and the hub cache) set "
                "HF_HUB_OFFLINE=1")

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


def offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` is set (1, true, yes, on)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def looks_like_path(name: str) -> bool:
    """Whether ``name`` is meant as a local path, so that a missing one fails at once instead
    of going to the model hub: a name that cannot be a hub id ("org/name" or "name"), or an
    "a/b" whose first part is a local folder (``models/nosuch`` beside a ``models/``)."""
    if name.startswith((".", "/", "~")) or "\\" in name or not _HUB_ID.match(name):
        return True
    return "/" in name and Path(name.split("/")[0]).expanduser().is_dir()


def _in_hub_cache(name: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - transformers brings huggingface_hub
        return False
    found = try_to_load_from_cache(name, "config.json")
    return isinstance(found, str)


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether a TCP connection to the model hub (``HF_ENDPOINT``, default huggingface.co,
    port 443) opens within ``timeout`` seconds; True when a proxy is configured (not probed)."""
    import socket
    from urllib.parse import urlparse

    if any(os.environ.get(k) for k in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return True
    url = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    try:
        socket.create_connection((url.hostname, url.port or 443), timeout=timeout).close()
    except OSError:
        return False
    return True


def check_model_name(name, what: str = "model") -> str:
    """Check a model argument without loading anything; returns ``"local"`` (an existing
    folder with ``config.json``) or ``"hub"`` (a hub id that loading will request from the
    network, or find in the hub cache).

    Raises
    ------
    FileNotFoundError
        A local-looking path that does not exist, a path that is not a folder with
        ``config.json``, or a hub id that is not in the hub cache while ``HF_HUB_OFFLINE`` is
        set or the hub cannot be reached (:func:`hub_reachable`, 3 s); the message names
        ``what`` and the value.
    """
    name = str(name)
    path = Path(name).expanduser()
    if path.exists():
        if not path.is_dir() or not (path / "config.json").is_file():
            raise FileNotFoundError(f"{what} {name!r} must be a folder holding config.json and "
                                    "model.safetensors (a save_pretrained folder)")
        return "local"
    if looks_like_path(name):
        raise FileNotFoundError(
            f"{what} {name!r} does not exist (it is a local path, so it is not looked up on "
            "the model hub). The bundled pair is data/models/target-4x256 with "
            "data/models/draft-2x128 (retrain it with  python -m specnb.measure.train); or pass "
            f"a hub id such as 'org/name' to download one (needs network; {OFFLINE_HINT}).")
    if _in_hub_cache(name):
        return "hub"
    if offline():
        raise FileNotFoundError(
            f"{what} {name!r} is not a local folder, and HF_HUB_OFFLINE is set, so only the hub "
            "cache is searched, and it is not there (unset HF_HUB_OFFLINE to download it, or "
            "give a local folder)")
    if not hub_reachable():
        raise FileNotFoundError(
            f"{what} {name!r} is not a local folder nor in the hub cache, and the model hub "
            "cannot be reached (no network?): give a local folder (if you meant one, check the "
            "path), or download the model where there is network")
    return "hub"


def check_gammas(gammas, *, max_new_tokens: int | None = None, context: int | None = None,
                 flag: str = "gamma") -> None:
    """Refuse a gamma no round can draft.

    With ``max_new_tokens`` N a round drafts at most N - 1 tokens (transformers caps a draft at
    ``max_length - current length - 1``, and so does the reference loop), so gamma > N - 1
    would be reported as a gamma it never ran. With a model ``context`` (positions), gamma must
    leave room for the prompt: gamma <= context - 2.

    Raises
    ------
    ValueError
        Naming ``flag``, the value and the bound with its reason.
    """
    for g in gammas:
        if max_new_tokens is not None and g > max_new_tokens - 1:
            raise ValueError(
                f"{flag} {g} is more than any round can draft: with max_new_tokens "
                f"{max_new_tokens} a round drafts at most {max_new_tokens - 1} tokens (drafts "
                f"stop 1 short of the budget); use {flag} <= {max(1, max_new_tokens - 1)} or "
                "raise max_new_tokens")
        if context is not None and g > context - 2:
            raise ValueError(f"{flag} {g} does not fit the model's context of {context} "
                             f"positions (prompt + gamma + 1 tokens): use {flag} <= "
                             f"{context - 2}")


def local_context(name) -> int | None:
    """Positions of a local model folder from its ``config.json`` (``max_position_embeddings``
    or GPT-2's ``n_positions``, also under ``text_config``); None for a hub id or when none is
    declared."""
    cfg_path = Path(str(name)).expanduser() / "config.json"
    if not cfg_path.is_file():
        return None
    try:
        cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    for c in (cfg, cfg.get("text_config") or {}):
        for key in ("max_position_embeddings", "n_positions"):
            v = c.get(key)
            if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                return v
    return None


def is_bundled_log(path) -> bool:
    """Whether ``path`` is the bundled log of the bundled target's responses."""
    try:
        return Path(path).expanduser().resolve() == BUNDLED_LOGGED.resolve()
    except OSError:
        return False


def _torch_build() -> dict | None:
    """The installed torch's ``cuda`` and ``hip`` versions, read from ``torch/version.py`` as
    text (torch itself is not imported); None when torch is not installed or the file does not
    say."""
    import importlib.util
    import re

    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "version.py"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    out = {}
    for key in ("__version__", "cuda", "hip"):
        m = re.search(rf"^{key}\s*(?::[^=]*)?=\s*(.+)$", text, re.M)
        if m:
            raw = m.group(1).strip()
            out[key] = None if raw == "None" else raw.strip("'\"")
    return out


def check_device(device) -> None:
    """Refuse ``--device cuda`` that cannot work, without importing torch: a CPU build of
    torch (its ``torch/version.py`` says ``cuda = None`` and no ROCm), or no NVIDIA driver on
    this machine (no ``/dev/nvidiactl`` nor ``/proc/driver/nvidia``) for a CUDA build.

    Raises
    ------
    ValueError
        naming the device, the installed torch and what to do.
    """
    if device != "cuda":
        return
    build = _torch_build()
    if build is None:
        return  # torch missing or unreadable: the import that follows says so
    version = build.get("__version__", "?")
    if build.get("cuda") is None and build.get("hip") is None:
        raise ValueError(f"--device cuda: the installed torch {version} is a CPU build (no "
                         "CUDA); install a CUDA build of torch (docs/development.md: GPU torch) "
                         "or use --device cpu")
    if build.get("cuda") is not None and not (Path("/dev/nvidiactl").exists()
                                              or Path("/proc/driver/nvidia").exists()):
        raise ValueError(f"--device cuda: torch {version} is built for CUDA "
                         f"{build['cuda']}, but this machine has no NVIDIA driver (no "
                         "/dev/nvidiactl); use --device cpu or run on a GPU machine")
