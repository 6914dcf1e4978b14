"""``specnb run``: execute the notebooks headless and write the HTML report (flags and
printing; the work is :func:`specnb.runner.run_notebooks`, which imports papermill when run).
"""

from __future__ import annotations

from pathlib import Path

from ..runner import (CELL_TIMEOUT_S, NOTEBOOK_DIR, load_parameters, run_notebooks,
                      skip_iri_format_checks)
from . import error, positive_int, refuse

__all__ = ["register"]


def _print_summary(results, out_dir) -> None:
    width = max([len(r.name) for r in results] + [8])
    print(f"{'notebook':<{width}}  {'status':<6}  {'seconds':>7}")
    for r in results:
        print(f"{r.name:<{width}}  {r.status:<6}  {r.seconds:7.1f}" +
              (f"  {r.error}" if r.error else ""))
    failed = sum(r.status != "ok" for r in results)
    print(f"{len(results) - failed} ok, {failed} failed; report: {Path(out_dir) / 'index.html'}")


def _cmd_run(args) -> int:
    skip_iri_format_checks()  # this process only reads and writes notebooks: 2-3 s saved
    try:
        params = load_parameters(args.parameters) if args.parameters else None
        results = run_notebooks(args.only or None, args.output, params,
                                notebook_dir=args.notebooks, cell_timeout=args.cell_timeout,
                                force=args.force)
    except (ValueError, FileNotFoundError) as exc:
        return refuse("run", exc)
    except OSError as exc:  # e.g. the disk fills up while the report is written
        where = f" {exc.filename}" if getattr(exc, "filename", None) else ""
        return error("run", f"cannot write{where}: {exc.strerror or exc}")
    _print_summary(results, args.output)
    return 1 if any(r.status != "ok" for r in results) else 0


def register(sub) -> None:
    """Add ``run`` to ``specnb``."""
    p = sub.add_parser("run", help="execute the notebooks headless and write the HTML report",
                       description="Execute notebooks with papermill; write executed copies, "
                                   "HTML pages, key figures and index.html under --output. "
                                   "Rerunning some notebooks keeps the index rows of the others "
                                   "still there; one run at a time per folder. Exit status: 0 "
                                   "every notebook ran, 1 one failed, 2 bad input (--only, "
                                   "--notebooks, --output, --parameters: checked before "
                                   "papermill is imported; a parameter's name, and its value's "
                                   "kind against the notebook's parameters cell; value ranges "
                                   "for notebook 04 only, the others check theirs as they run: "
                                   "out of range, the notebook fails, exit 1).")
    p.add_argument("--only", nargs="+", metavar="NAME",
                   help="notebooks to run: full name, number (04 or 4) or slug; default all")
    p.add_argument("--parameters", metavar="FILE",
                   help="YAML/JSON file mapping notebook name -> {parameter: value}; a value "
                        "must be of its default's kind in the parameters cell (an integer, a "
                        "number, a string, true/false, a list of ...; null passes)")
    p.add_argument("--output", default="build", metavar="DIR",
                   help="output folder (build); a file there that specnb did not write (no "
                        "specnb index.html, not in its manifest) is not replaced: exit 2")
    p.add_argument("--force", action="store_true",
                   help="replace files in --output that specnb did not write")
    p.add_argument("--notebooks", default=str(NOTEBOOK_DIR), metavar="DIR",
                   help="folder of NN_slug.ipynb notebooks")
    p.add_argument("--cell-timeout", type=positive_int, default=CELL_TIMEOUT_S, metavar="S",
                   help=f"seconds a cell may run (default {CELL_TIMEOUT_S})")
    p.set_defaults(func=_cmd_run)
