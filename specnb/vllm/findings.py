"""What the checker reports: :class:`Finding` (one problem) and :class:`ConfigCheck` (all)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["SEVERITIES", "Finding", "ConfigCheck"]

SEVERITIES = ("error", "warning", "note")


@dataclass(frozen=True)
class Finding:
    """One problem in a speculative config.

    Attributes
    ----------
    severity : "error" (vLLM refuses the config), "warning" (it starts, but not as meant) or
        "note" (about the check itself, e.g. ``judged-by-older-release``).
    code : stable kebab-case name of the problem (e.g. ``"unknown-key"``, ``"invalid-json"``,
        ``"schedule-invalid"``), for programs and tests; the message may be reworded.
    key : the config key concerned, or None for the config as a whole (e.g. broken JSON).
    message : what is wrong, quoting vLLM's own message where it has one.
    fix : what to write instead.
    line, column : 1-based position in the checked text, when known.
    """

    severity: str
    key: str | None
    message: str
    fix: str = ""
    line: int | None = None
    column: int | None = None
    code: str = field(kw_only=True)

    def format(self, source: str | None = None) -> str:
        """The finding as text: ``severity: KEY (line L, column C): message`` and its fix;
        ``source`` (e.g. the file name) stands for the key of a finding about the whole config
        (key None), else ``-``."""
        if self.severity == "note" and self.key is None:
            return f"note: {self.message}"
        where = f" (line {self.line}, column {self.column})" if self.line else ""
        key = self.key if self.key is not None else (source or "-")
        text = f"{self.severity}: {key}{where}: {self.message}"
        return text + (f"\n  fix: {self.fix}" if self.fix else "")

    __str__ = format


@dataclass(frozen=True)
class ConfigCheck:
    """The result of :func:`check_speculative_config`: findings plus the parsed mapping;
    iterating yields the :class:`Finding` objects; ``accepted``: no errors (warnings allowed)."""

    findings: tuple[Finding, ...]
    config: dict | None
    vllm_version: str | None = None

    def __iter__(self):
        return iter(self.findings)

    def __len__(self) -> int:
        return len(self.findings)

    def __getitem__(self, i):
        return self.findings[i]

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning"]

    @property
    def accepted(self) -> bool:
        """True when vLLM would accept the config (warnings allowed)."""
        return not self.errors

    def codes(self) -> list[str]:
        """The findings' codes, in order."""
        return [f.code for f in self.findings]

    def to_frame(self):
        """The findings as a pandas DataFrame (severity, code, key, line, column, message, fix)."""
        import pandas as pd

        cols = ["severity", "code", "key", "line", "column", "message", "fix"]
        return pd.DataFrame([{c: getattr(f, c) for c in cols} for f in self.findings],
                            columns=cols)

    def format(self, source: str | None = None) -> str:
        """All findings (:meth:`Finding.format` with ``source``) and the verdict line."""
        who = f"vLLM {self.vllm_version}" if self.vllm_version else "current vLLM"
        n_err, n_warn = len(self.errors), len(self.warnings)
        verdict = f"{who} would {'accept' if self.accepted else 'reject'} this config"
        return "\n".join([*(f.format(source) for f in self.findings),
                          f"{verdict} ({n_err} error{'s' * (n_err != 1)}, "
                          f"{n_warn} warning{'s' * (n_warn != 1)})."])

    __str__ = format
