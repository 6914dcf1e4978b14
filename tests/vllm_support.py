"""Shared by the tests of specnb.vllm and its CLI: a /metrics scrape template and the field
reports under tests/cases/."""

from __future__ import annotations

from pathlib import Path

#: A three-counter vLLM scrape; ``.format(d=drafts, t=draft tokens, a=accepted tokens)``.
SCRAPE = ("# TYPE vllm:spec_decode_num_drafts_total counter\n"
          "vllm:spec_decode_num_drafts_total{{model_name=\"m\"}} {d}\n"
          "# TYPE vllm:spec_decode_num_draft_tokens_total counter\n"
          "vllm:spec_decode_num_draft_tokens_total{{model_name=\"m\"}} {t}\n"
          "# TYPE vllm:spec_decode_num_accepted_tokens_total counter\n"
          "vllm:spec_decode_num_accepted_tokens_total{{model_name=\"m\"}} {a}\n")

CASES = Path(__file__).parent / "cases"
FIELD = CASES / "field-reports"


def field(name: str) -> str:
    """The text of a field report under tests/cases/field-reports/."""
    return (FIELD / name).read_text(encoding="utf-8")
