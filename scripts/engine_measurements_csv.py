"""Write data/engine_measurements.csv from the team's engine-measurements.jsonl.

One row per published point (65), tidy, with the project's provenance columns (``source``,
``arxiv_version``, ``table``, ``note``) plus ``source_key`` (one short name per source, the unit
of leave-one-source-out fits) and ``profile`` (the engine profile of data/engine_profiles.csv
the point belongs to). Values are copied as recorded; nothing is corrected. Run:
``python scripts/engine_measurements_csv.py ../shared/reference/engine-measurements.jsonl``.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

#: id prefix -> (source_key, profile, arxiv_version, table)
SOURCES = {
    "e3t3-sglang": ("eagle3-t3-sglang", "sglang", "2503.01840v3", "Table 3"),
    "e3t5-vllm": ("eagle3-t5-vllm", "vllm-v0", "2503.01840v3", "Table 5"),
    "magicdec-t5-mlc": ("magicdec-t5-mlc", "mlc-llm", "2408.11049", "Appendix Table 5"),
    "vllm-i20780": ("vllm-i20780", "vllm", "", "issue #20780 tables 'AL' and 'TPOT ms'"),
    "vllm-pr16937": ("vllm-pr16937", "vllm", "", "PR #16937 comment 2025-04-24"),
    "vllm-blog24": ("vllm-blog24", "vllm-v0", "", "blog 2024-10-17 figures 5 and 7"),
    "sglang-mtp-dsv3": ("lmsys-mtp-dsv3", "sglang", "", "blog 2025-07-17 case studies 1 and 2"),
}

COLUMNS = ["id", "source_key", "profile", "engine", "concurrency_kind", "gpu", "gpu_published",
           "gpus", "model", "model_published", "draft", "method_published", "gamma", "batch",
           "qps", "context", "context_assumed", "dataset", "tau", "tau_note", "speedup",
           "metric", "t_plain_ms", "t_draft_ms", "draft_kv_budget", "read_off_figure",
           "source", "arxiv_version", "table", "note"]

PROFILE_NOTE = {
    "eagle3-t5-vllm": "profile vllm-v0: the EAGLE-3 paper (v1 March 2025) predates EAGLE in vLLM V1 "
                      "(PR #16937, April 2025) and engines.md's table calls it V0-era; engines.md "
                      "section 2 item 4 counts it among V1 sources: inconsistent, kept as V0",
}


def main(path: str) -> None:
    out = Path(__file__).resolve().parent.parent / "data" / "engine_measurements.csv"
    rows = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        d = json.loads(line)
        prefix = next(p for p in SOURCES if d["id"].startswith(p))
        key, profile, version, table = SOURCES[prefix]
        note = "; ".join(x for x in (d.get("note", ""), PROFILE_NOTE.get(key, "")) if x)
        row = {c: d.get(c, "") for c in COLUMNS}
        row.update(source_key=key, profile=profile, arxiv_version=version, table=table,
                   note=note or "as published")
        rows.append({k: ("" if v is None else v) for k, v in row.items()})
    with out.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    print(f"{len(rows)} rows -> {out}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "../shared/reference/engine-measurements.jsonl")
