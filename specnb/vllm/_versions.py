"""The vLLM releases specnb judges by: ``specnb/vllm/versions/<v>.json`` (``make oracle``, from
the release's own code) and ``flags/<v>.json`` (its ``vllm serve`` flags, ``oracle/table.py
--flags``); :func:`select` picks the table that judges a ``vllm_version``."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

_DIR = Path(__file__).with_name("versions")
_FLAGS = Path(__file__).with_name("flags")
_VERSION_RE = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?(?:\.\d+)*((?:a|b|rc|c)\d*)?"
                         r"(?:\.?post\d*)?(\.?dev\d*)?(?:\+[a-z0-9.]+)?", re.IGNORECASE)


def version_key(version: str) -> tuple:
    """A sortable key for a release string (pre-releases sort before the release); raises
    TypeError for a non-string, ValueError for a string that is not a version."""
    if not isinstance(version, str):
        why = " (as a float, 0.10 would read as 0.1)" if isinstance(version, float) else ""
        raise TypeError(f"vllm_version must be a string like '0.33.0'{why}, got "
                        f"{type(version).__name__} {version!r}")
    m = _VERSION_RE.fullmatch(version.strip())
    if not m:
        shown = version if len(version) <= 60 else version[:60] + "..."
        raise ValueError(f"vllm_version must be a release like '0.33.0' (also 'v0.33.0', "
                         f"'0.33', '0.33.0rc1', '0.33.0+cu128'), got {shown!r}")
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0),
            0 if (m.group(4) or m.group(5)) else 1)


@dataclass(frozen=True)
class Table:
    """One release's contract (``versions/<v>.json``) as the rules read it."""

    vllm: str
    fields: dict
    methods: tuple
    mtp: tuple
    hyphen_rewrite: bool
    load_config_fields: tuple
    quantization_methods: tuple
    pydantic: str | None
    raw: dict = field(repr=False, compare=False)
    name: str = ""  # "vLLM 0.33.0"
    pydantic_name: str = "pydantic"  # "pydantic 2.14.4" when the table names it
    internal: frozenset = frozenset()  # the fields vLLM fills in itself


def _table(raw: dict) -> Table:
    pyd = raw.get("pydantic_version")
    return Table(raw["vllm"], raw["fields"], tuple(raw["methods"]), tuple(raw["mtp_methods"]),
                 bool(raw.get("hyphen_rewrite")), tuple(raw.get("load_config_fields", ())),
                 tuple(raw["quantization_methods"]), pyd, raw, f"vLLM {raw['vllm']}",
                 f"pydantic {pyd}" if pyd else "pydantic",
                 frozenset(k for k, f in raw["fields"].items() if f["kind"] == "internal"))


@lru_cache(maxsize=None)
def tables() -> dict[str, Table]:
    """{version: :class:`Table`} for every shipped table, oldest first."""
    paths = sorted(_DIR.glob("*.json"), key=lambda p: version_key(p.stem))
    return {p.stem: _table(json.loads(p.read_text(encoding="utf-8"))) for p in paths}


def versions_checked() -> list[str]:  # the releases with a table, oldest first
    return list(tables())


def select(vllm_version: str | None) -> tuple[Table, str | None]:
    """(the table ``vllm_version`` is judged by, a note or None): None is the newest; a release
    without a table is judged by the nearest older one (the note says so); one older than every
    table raises ValueError."""
    ts = tables()
    if vllm_version is None:
        return ts[list(ts)[-1]], None
    want = version_key(vllm_version)
    release = vllm_version.strip().lstrip("vV").split("+")[0]
    if release in ts:  # 0.8.5 and 0.8.5.post1 have one key
        return ts[release], None
    older = [v for v in ts if version_key(v) <= want]
    if not older:
        raise ValueError(f"vllm_version {release!r} is older than every release specnb has "
                         f"vLLM's rules for ({', '.join(ts)}); give one of those or newer")
    best = older[-1]
    if version_key(best)[:3] == want[:3] and want[3]:
        return ts[best], None
    return ts[best], (None if best == release else
                      f"judged by vLLM {best}'s rules; no profile for {release}")


@lru_cache(maxsize=None)
def flags_for(version: str) -> dict:
    """The ``vllm serve`` flags of ``version``, else of the nearest release not newer (else the
    oldest): {"vllm", "wheel", "model_tag": who adds the positional model, "flags": {option:
    {dest, kind, type, choices, names, nargs, default}}}."""
    paths = sorted(_FLAGS.glob("*.json"), key=lambda p: version_key(p.stem))
    fit = [p for p in paths if p.stem == version] or [
        p for p in paths if version_key(p.stem) <= version_key(version)] or paths[:1]
    return json.loads(fit[-1].read_text(encoding="utf-8"))
