"""``make oracle-check``: compare a fresh oracle run with the committed fixtures.

usage: python oracle/compare.py FIXTURE_DIR FRESH_DIR [TABLE]

Fails (exit 1) when any config's verdict, deciding stage, exception type or vLLM's
message differs, when the schedule's later verdict differs, or when the corpus gained
or lost entries (fixtures stale: run ``make oracle``). Entries read from
``../shared/cases`` are not counted as lost when the fresh run had no shared folder.
With TABLE (``specnb/vllm/versions/<v>.json``), also fails unless the fresh run's wheel
(``oracle.json``: version, file name, sha256) is the one the table and the fixtures name.
Stdlib only.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

KEYS = ("verdict", "stage", "exception", "message")


def load(d: Path) -> dict[str, dict]:
    out = {}
    for line in (d / "configs.jsonl").read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            out[r["id"]] = r
    return out


def compare(fixture: Path, fresh: Path) -> list[str]:
    old, new = load(fixture), load(fresh)
    meta = json.loads((fresh / "oracle.json").read_text()) if (fresh / "oracle.json").exists() else {}
    problems = []
    for cid, r in old.items():
        n = new.get(cid)
        if n is None:
            if r["source"].startswith("case:shared/") and not meta.get("shared_cases_read", True):
                continue
            problems.append(f"{cid}: in the fixtures, not in the fresh corpus")
            continue
        for k in KEYS:
            if r.get(k) != n.get(k):
                problems.append(f"{cid}: {k} {r.get(k)!r} -> {n.get(k)!r}")
        lo, ln = (r.get("later") or {}).get("verdict"), (n.get("later") or {}).get("verdict")
        if lo != ln:
            problems.append(f"{cid}: later verdict {lo!r} -> {ln!r}")
    for cid in new:
        if cid not in old:
            problems.append(f"{cid}: new in the corpus, not in the fixtures (run make oracle)")
    return problems


def wheel_problems(fixture: Path, fresh: Path, table: Path) -> list[str]:
    """The fresh run's wheel against the table's and the fixtures' ``oracle.json``."""
    def meta(d):
        p = d / "oracle.json"
        return json.loads(p.read_text()) if p.exists() else {}
    ran = meta(fresh).get("wheel")
    if not ran:
        return ["the fresh run names no wheel (<venv>/.oracle-wheel.json missing: rebuild it)"]
    out = []
    for what, named in (("table " + str(table), json.loads(table.read_text()).get("wheel")),
                        ("fixtures " + str(fixture / "oracle.json"), meta(fixture).get("wheel"))):
        if named != ran:
            out.append(f"wheel: {what} names {named}, the fresh run used {ran}")
    return out


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    fixture, fresh = Path(argv[0]), Path(argv[1])
    problems = compare(fixture, fresh)
    if len(argv) > 2:
        problems += wheel_problems(fixture, fresh, Path(argv[2]))
    n = len(load(fixture))
    if problems:
        print(f"oracle-check: {len(problems)} difference(s) against {fixture}:")
        for p in problems:
            print("  " + p)
        return 1
    print(f"oracle-check: {n} configs agree with {fixture}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
