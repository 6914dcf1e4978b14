""":class:`Context`, the one object every rule reads and writes, and :data:`TRAPS`
(``specnb/vllm/traps.json``)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from .._versions import Table
from ..findings import Finding
from ..syntax import linecol

#: ``traps.json``: legacy names, aliases, sampling keys, method groups, hand-checked bounds.
TRAPS = json.loads(Path(__file__).parent.parent.joinpath("traps.json").read_text("utf-8"))
LEGACY_KEYS = {k: tuple(v) for k, v in TRAPS["legacy_keys"].items()}
NEEDS_MODEL = frozenset(TRAPS["needs_model"])
N_PREDICT = frozenset(TRAPS["n_predict_methods"])
NGRAM = frozenset(TRAPS["ngram_methods"])
NO_DRAFT_BRANCH = frozenset(TRAPS["no_draft_branch"])


def as_int(x):
    """``x`` if it is an int (not a bool), else None."""
    return x if isinstance(x, int) and not isinstance(x, bool) else None


@dataclass
class Context:
    """One config on its way through the rules: keys (after the hyphen rewrite), values (as the
    release's pydantic reads them; None when refused), method (the one vLLM runs; None stops the
    rules after it), draft / target (config.json), serve (the line's settings), env (the server's
    environment, e.g. VLLM_USE_V2_MODEL_RUNNER: the line's ``NAME=value`` words), findings."""

    text: str | None
    table: Table
    keys: dict
    draft: dict | None = None
    target: dict | None = None
    serve: dict = field(default_factory=dict)
    env: dict = field(default_factory=dict)
    values: dict = field(default_factory=dict)
    method: str | None = None
    findings: list = field(default_factory=list)
    stop: bool = False

    @property
    def vname(self) -> str:
        return self.table.name

    def given(self, key) -> bool:
        """A non-null value for a field of the release (other keys were judged as unknown)."""
        return key in self.table.fields and self.keys.get(key) is not None

    def add(self, code, severity, key, message, fix=""):
        line = col = None
        if self.text is not None and key is not None:
            m = re.search(r"[\"']" + re.escape(key) + r"[\"']\s*:", self.text)
            if m:
                line, col = linecol(self.text, m.start())
        self.findings.append(Finding(severity, key, message, fix, line, col, code=code))

    def drop(self, code):
        self.findings[:] = [f for f in self.findings if f.code != code]
