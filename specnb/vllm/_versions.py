"""The vLLM versions specnb is checked against, and what each one's code says.

Each ``specnb/vllm/versions/<version>.json`` is written by the oracle (``make oracle
VLLM=<version>``, ``oracle/drive.py``) from that vLLM release's own installed code:
``SpeculativeConfig``'s fields (kind, null allowed, bound, choices, default), the
``method`` values, the model-specific MTP names, ``LoadConfig``'s fields and whether
``EngineArgs.create_speculative_config`` rewrites ``-`` to ``_`` in keys. The fixtures the
tests replay sit beside them in ``tests/cases/vllm/<version>/``.

:func:`profile_for` picks the profile a ``vllm_version`` is judged by: the exact release, else
the newest profiled release not newer than it; None ("current") is the newest profiled
release. A version older than every profile gets None (the transcribed rules in
:mod:`specnb.vllm._schema` apply).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

_DIR = Path(__file__).with_name("versions")

#: First release whose ``create_speculative_config`` rewrites every key ``k.replace('-', '_')``
#: (read in the 0.25.0, 0.25.1, 0.26.0, 0.27.x, 0.28.0, 0.29.0, 0.31.0 and 0.33.0 wheels: absent
#: up to 0.25.1, present from 0.26.0).
HYPHEN_REWRITE_SINCE = (0, 26)


def _key(version: str) -> tuple:
    parts = []
    for p in version.split("."):
        digits = "".join(ch for ch in p if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


@lru_cache(maxsize=None)
def profiles() -> dict[str, dict]:
    """{version: profile} for every shipped profile, oldest first."""
    out = {}
    for path in sorted(_DIR.glob("*.json"), key=lambda p: _key(p.stem)):
        out[path.stem] = json.loads(path.read_text(encoding="utf-8"))
    return out


def versions_checked() -> list[str]:
    """The vLLM releases with a profile (and fixtures), oldest first."""
    return list(profiles())


def current_version() -> str | None:
    """The newest profiled release ("current")."""
    v = versions_checked()
    return v[-1] if v else None


def profile_for(vllm_version: str | None) -> dict | None:
    """The profile ``vllm_version`` is judged by (see the module docstring), or None."""
    ps = profiles()
    if not ps:
        return None
    if vllm_version is None:
        return ps[current_version()]
    v = vllm_version.strip().lstrip("vV").split("+")[0]
    if v in ps:
        return ps[v]
    want = _key(v)
    older = [k for k in ps if _key(k)[:3] <= want[:3]]
    return ps[older[-1]] if older else None
