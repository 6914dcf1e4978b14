"""Drive an installed vLLM's own code and write the oracle's fixtures.

Run with the oracle's virtualenv (``make oracle`` does it)::

    .venv-vllm-0.33.0/bin/python oracle/drive.py configs --out tests/cases/vllm/0.33.0
    .venv-vllm-0.33.0/bin/python oracle/drive.py all --out tests/cases/vllm/0.33.0

``configs``: each corpus entry (oracle/corpus.py) goes through ``vllm serve``'s own
argument parser (``make_arg_parser(FlexibleArgumentParser())``), then
``EngineArgs.from_cli_args(args)``, ``create_model_config()`` on a stand-in target
and ``create_speculative_config(model_config, ParallelConfig(...))``, as
``create_engine_config`` does. Where a schedule (``num_speculative_tokens_per_batch_size``)
survives that, vLLM's own schedule function is called the way the scheduler (or, for
an empty list, the GPU runner's CUDA-graph setup) calls it, and recorded as ``later``.
``logs``: ``SpecDecodingLogging`` fed known ``SpecDecodingStats``, formatted by vLLM's
logger. ``metrics``: ``SpecDecodingProm`` with the stat logger's labels, rendered by
prometheus_client. ``bench``: see oracle/bench.py.

Hub access is off (``HF_HUB_OFFLINE=1``); hub ids come from an offline cache of
stand-in config.json files (oracle/standins.py); ``arctic_inference`` is a stand-in
package (vLLM only checks that it imports). Only loopback traffic.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import re
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import corpus as corpus_mod  # noqa: E402
import standins  # noqa: E402

FIXTURE_FORMAT = 1


def _setup_env(work: Path) -> dict[str, str]:
    paths = standins.build(work / "standins")
    stub = work / "stub"
    (stub / "arctic_inference").mkdir(parents=True, exist_ok=True)
    (stub / "arctic_inference" / "__init__.py").write_text(
        '"""Stand-in: vLLM checks only that arctic_inference imports."""\n')
    sys.path.insert(0, str(stub))
    os.environ["PYTHONPATH"] = str(stub) + os.pathsep + os.environ.get("PYTHONPATH", "")
    os.environ["HF_HOME"] = str(work / "standins" / "hf")
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    os.environ["VLLM_NO_USAGE_STATS"] = "1"
    os.environ["DO_NOT_TRACK"] = "1"
    return paths


class _Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.records: list[str] = []

    def emit(self, record):
        try:
            self.records.append(record.getMessage())
        except Exception:  # noqa: BLE001
            self.records.append(str(record.msg))


def _clear_once_caches():
    import vllm.logger as vl
    for name in dir(vl):
        fn = getattr(vl, name)
        if callable(getattr(fn, "cache_clear", None)) and name.startswith("_print"):
            fn.cache_clear()


class ConfigOracle:
    """vLLM's verdict on one ``--speculative-config`` string."""

    def __init__(self, work: Path):
        self.work = work
        self.local = work / "standins" / "local"
        try:
            from vllm.utils.argparse_utils import FlexibleArgumentParser
        except ImportError:  # before about 0.12
            from vllm.utils import FlexibleArgumentParser
        import importlib
        for mod in ("vllm.entrypoints.common.cli_args", "vllm.entrypoints.launchers.cli_args",
                    "vllm.entrypoints.openai.cli_args"):  # 0.33, 0.32, older
            try:
                make_arg_parser = importlib.import_module(mod).make_arg_parser
                break
            except ImportError:
                continue
        from vllm.engine.arg_utils import EngineArgs
        from vllm.config import ParallelConfig
        self.EngineArgs, self.ParallelConfig = EngineArgs, ParallelConfig
        self.parser = make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))
        self.capture = _Capture()
        logging.getLogger("vllm").addHandler(self.capture)
        self._model_configs = {}

    def _sanitize(self, s: str) -> str:
        s = s.replace(str(self.local), corpus_mod.STANDINS)
        s = s.replace(str(self.work), "{work}")
        s = re.sub(r"0x[0-9a-fA-F]{6,}", "0x?", s)
        return s

    def _argv(self, e):
        target = str(self.local / e["target"])
        argv = ["--model", target] + e["serve_args"]
        if e["argv"]:
            argv += [a.replace(corpus_mod.STANDINS, str(self.local)) for a in e["argv"]]
        else:
            argv += ["--speculative-config", e["text"].replace(corpus_mod.STANDINS, str(self.local))]
        return argv

    def judge(self, e) -> dict:
        rec = {"id": e["id"]}
        self.capture.records.clear()
        _clear_once_caches()
        stage = "parser"
        try:
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                try:
                    args = self.parser.parse_args(self._argv(e))
                except SystemExit as x:
                    lines = [ln for ln in err.getvalue().splitlines() if "error:" in ln]
                    return self._rejected(rec, "parser", "SystemExit",
                                          lines[-1] if lines else err.getvalue().strip(), [],
                                          exit_code=x.code)
            stage = "engine_args"
            ea = self.EngineArgs.from_cli_args(args)
            stage = "target_model_config"
            key = (e["target"], tuple(e["serve_args"]))
            mc = ea.create_model_config()
            pc = self.ParallelConfig(tensor_parallel_size=ea.tensor_parallel_size,
                                     pipeline_parallel_size=ea.pipeline_parallel_size)
            stage = "create_speculative_config"
            sc = ea.create_speculative_config(mc, pc)
        except BaseException as x:  # noqa: BLE001 - an oracle records every failure
            if isinstance(x, KeyboardInterrupt):
                raise
            return self._from_exception(rec, stage, x)
        rec.update(verdict="accepted", stage="create_speculative_config" if sc else "none",
                   exception=None, message=None, errors=[])
        rec["warnings"] = [self._sanitize(w) for w in self.capture.records]
        rec["resolved"] = self._resolved(sc, mc)
        if sc is not None and getattr(sc, "num_speculative_tokens_per_batch_size", None) is not None:
            rec["later"] = self._later(sc)
        return rec

    def _resolved(self, sc, mc):
        if sc is None:
            return None
        out = {}
        for k in ("method", "model", "num_speculative_tokens", "prompt_lookup_min",
                  "prompt_lookup_max", "draft_tensor_parallel_size", "max_model_len",
                  "num_speculative_tokens_per_batch_size", "rejection_sample_method",
                  "parallel_drafting", "quantization", "fly_window_size",
                  "synthetic_acceptance_rates", "draft_sample_method", "use_heterogeneous_vocab"):
            if hasattr(sc, k):
                v = getattr(sc, k)
                if isinstance(v, tuple):
                    v = list(v)
                if isinstance(v, list):
                    v = [list(x) if isinstance(x, tuple) else x for x in v]
                if not isinstance(v, (str, int, float, bool, list, type(None))):
                    v = str(v)
                out[k] = self._sanitize(v) if isinstance(v, str) else v
        dmc = getattr(sc, "draft_model_config", None)
        if dmc is not None and dmc is not mc:
            out["draft_max_model_len"] = dmc.max_model_len
            out["draft_architectures"] = list(getattr(dmc, "architectures", []) or [])
        return out

    def _later(self, sc):
        try:
            from vllm.v1.spec_decode.dynamic.utils import build_dynamic_sd_schedule_lookup
        except ImportError:
            return {"stage": None, "note": "this version has no dynamic-SD schedule function"}
        from vllm.config import SchedulerConfig
        sched = sc.num_speculative_tokens_per_batch_size
        max_seqs = SchedulerConfig.__pydantic_fields__["max_num_seqs"].default
        # the scheduler builds the lookup only for a non-empty schedule; the GPU
        # runner's CUDA-graph setup builds it whenever the schedule is not None
        stage = "scheduler" if sched else "gpu_model_runner_cudagraph"
        try:
            build_dynamic_sd_schedule_lookup(sched, vllm_max_batch_size=max_seqs,
                                             vllm_num_speculative_tokens=sc.num_speculative_tokens)
        except Exception as x:  # noqa: BLE001
            return {"stage": stage, "verdict": "rejected", "exception": type(x).__name__,
                    "message": self._sanitize(str(x))}
        return {"stage": stage, "verdict": "accepted", "exception": None, "message": None}

    def _rejected(self, rec, stage, exc, message, errors, **more):
        rec.update(verdict="rejected", stage=stage, exception=exc,
                   message=self._sanitize(message), errors=errors)
        rec.update(more)
        rec["warnings"] = [self._sanitize(w) for w in self.capture.records]
        return rec

    def _where(self, exc):
        """Innermost frames of vLLM's config code that raised (file:function)."""
        frames = traceback.extract_tb(exc.__traceback__)
        inside = [f for f in frames if "/vllm/" in f.filename]
        if not inside:
            return None
        f = inside[-1]
        return f"{f.filename.split('/vllm/', 1)[1]}:{f.name}"

    def _from_exception(self, rec, stage, x):
        try:
            from pydantic import ValidationError
        except ImportError:  # pragma: no cover
            ValidationError = ()
        errors = []
        where = self._where(x)
        if isinstance(x, ValidationError):
            for er in x.errors(include_url=False):
                errors.append({"type": er["type"], "loc": [str(p) for p in er["loc"]],
                               "msg": self._sanitize(str(er["msg"]))})
                inner = (er.get("ctx") or {}).get("error")
                if isinstance(inner, BaseException) and where is None or (
                        isinstance(inner, BaseException) and inner.__traceback__ is not None):
                    where = self._where(inner) or where
            kinds = {er["type"] for er in errors}
            if all(er["loc"] for er in errors) and kinds:
                sub = "field_validation"
            else:
                sub = "validator"
            message = "; ".join((".".join(er["loc"]) + ": " if er["loc"] else "") + er["msg"]
                                for er in errors) if errors else str(x)
            rec["where"] = where
            return self._rejected(rec, f"{stage}:{sub}", "ValidationError", message, errors)
        rec["where"] = where
        return self._rejected(rec, stage, type(x).__name__, str(x), errors)


def run_configs(out: Path, work: Path, shared: Path | None, only_ids=None, quiet=False) -> list[dict]:
    import vllm
    from vllm.config import SpeculativeConfig
    other = set()
    for fj in (REPO / "tests" / "cases" / "vllm").glob("*/fields.json"):
        if fj.parent.name != vllm.__version__:
            other |= set(json.loads(fj.read_text())["fields"])
    entries = corpus_mod.build_corpus(SpeculativeConfig, REPO, shared, other)
    if only_ids is not None:
        entries = [e for e in entries if e["id"] in only_ids]
    oracle = ConfigOracle(work)
    out.mkdir(parents=True, exist_ok=True)
    recs = []
    t0 = time.time()
    for i, e in enumerate(entries):
        r = oracle.judge(e)
        full = {"id": e["id"], "source": e["source"], "input": e["text"], "argv": e["argv"],
                "target": e["target"], "serve_args": e["serve_args"],
                "target_dependent": e["target_dependent"], "note": e["note"]}
        r.pop("id")
        full.update(r)
        recs.append(full)
        if not quiet:
            print(f"[{i + 1}/{len(entries)} {time.time() - t0:.0f}s] {e['id']}: {r['verdict']} "
                  f"{r['stage']} {r.get('exception') or ''}", file=sys.stderr, flush=True)
    with open(out / "configs.jsonl", "w") as fh:
        for r in recs:
            fh.write(json.dumps(r, sort_keys=True, default=str) + "\n")
    (out.parent / "standins.json").write_text(json.dumps(
        {"note": "the stand-in checkpoints the oracle served (oracle/standins.py): local "
                 "folders under {standins}/<name>, hub ids from an offline cache",
         "local": {k: {"kind": v[0], "config": v[1]} for k, v in standins.STANDINS.items()},
         "hub": standins.HUB_IDS}, indent=1, sort_keys=True) + "\n")
    write_fields(out)
    return recs


def write_fields(out: Path):
    """``fields.json``: this release's ``SpeculativeConfig`` fields and annotations (the corpus
    of every other release with fixtures tries these keys too)."""
    import vllm
    from vllm.config import SpeculativeConfig
    fields = {n: str(f.annotation) for n, f in SpeculativeConfig.__pydantic_fields__.items()}
    out.mkdir(parents=True, exist_ok=True)
    (out / "fields.json").write_text(json.dumps({"vllm": vllm.__version__, "fields": fields},
                                                indent=1, sort_keys=True) + "\n")


# ---------------------------------------------------------------- logs and metrics

def _stats_from_steps(k, steps):
    """SpecDecodingStats from a list of (num_draft_tokens, num_accepted) per draft."""
    from vllm.v1.spec_decode.metrics import SpecDecodingStats
    s = SpecDecodingStats.new(k)
    for d, a in steps:
        s.observe_draft(num_draft_tokens=d, num_accepted_tokens=a)
    return s


def _scenarios():
    """Known counts: (name, k, [interval, ...]) where an interval is a list of steps
    ((drafted, accepted) per draft) and elapsed seconds. Seeded, deterministic."""
    import random
    rng = random.Random(20261201)
    out = []
    for name, k, alpha, n_intervals, n_steps in (
            ("k1-high", 1, 0.85, 2, 400), ("k3-mid", 3, 0.7, 3, 300), ("k5-low", 5, 0.45, 2, 250),
            ("k7-few-drafts", 7, 0.6, 2, 23), ("k8-mtp", 8, 0.8, 1, 1200), ("k2-none-accepted", 2, 0.0, 1, 50),
            ("k4-all-accepted", 4, 1.0, 1, 60), ("k3-short-drafts", 3, 0.7, 2, 200)):
        intervals = []
        for j in range(n_intervals):
            steps = []
            for _ in range(n_steps):
                d = k if name != "k3-short-drafts" else rng.randint(1, k)
                a = 0
                while a < d and rng.random() < alpha:
                    a += 1
                steps.append((d, a))
            intervals.append({"steps": steps, "elapsed_s": 10.0 + j * 2.5})
        out.append((name, k, intervals))
    return out


def _counts(k, steps):
    per_pos = [0] * k
    for _, a in steps:
        for i in range(a):
            per_pos[i] += 1
    return {"num_drafts": len(steps), "num_draft_tokens": sum(d for d, _ in steps),
            "num_accepted_tokens": sum(a for _, a in steps), "accepted_per_pos": per_pos}


def run_logs(out: Path):
    from vllm.v1.spec_decode.metrics import SpecDecodingLogging
    import vllm.v1.spec_decode.metrics as m
    with contextlib.suppress(Exception):  # 0.33 names the process in its lines; 0.25 does not
        from vllm.logger import set_vllm_process_name
        set_vllm_process_name("APIServer")
    import vllm.logger as vl
    vl._configure_vllm_root_logger()  # what the server's startup does
    vlog = logging.getLogger("vllm")
    fmt = vlog.handlers[0].formatter if vlog.handlers else logging.Formatter("%(message)s")
    recs = []
    for name, k, intervals in _scenarios():
        lines = []
        buf = io.StringIO()
        h = logging.StreamHandler(buf)
        h.setFormatter(fmt)
        vlog.addHandler(h)
        try:
            sdl = SpecDecodingLogging()
            per = []
            for iv in intervals:
                # one observe per scheduler step batch: split the interval in 4 batches
                steps = iv["steps"]
                q = max(1, len(steps) // 4)
                for b in range(0, len(steps), q):
                    sdl.observe(_stats_from_steps(k, steps[b:b + q]))
                sdl.last_log_time = time.monotonic() - iv["elapsed_s"]
                sdl.log()
                per.append(dict(_counts(k, steps), elapsed_s=iv["elapsed_s"]))
        finally:
            vlog.removeHandler(h)
        lines = [ln for ln in buf.getvalue().splitlines() if "SpecDecoding metrics" in ln]
        recs.append({"id": name, "num_speculative_tokens": k, "intervals": per, "lines": lines})
    with open(out / "logs.jsonl", "w") as fh:
        for r in recs:
            fh.write(json.dumps(r, sort_keys=True) + "\n")
    with open(out / "spec_decode.log", "w") as fh:
        for r in recs:
            fh.write("\n".join(r["lines"]) + "\n")
    return recs


def run_metrics(out: Path):
    import prometheus_client
    from vllm.v1.spec_decode.metrics import SpecDecodingProm
    from types import SimpleNamespace
    mdir = out / "metrics"
    mdir.mkdir(parents=True, exist_ok=True)
    recs = []
    for name, k, intervals in _scenarios():
        for engines in ((0,), (0, 1)):
            reg = prometheus_client.CollectorRegistry()

            class _Prom(SpecDecodingProm):
                _counter_cls = staticmethod(
                    lambda *a, **kw: prometheus_client.Counter(*a, registry=reg, **kw))

            # the labels PrometheusStatLogger passes: ["model_name", "engine"]
            labelvalues = {i: ["standin/target", str(i)] for i in engines}
            prom = _Prom(SimpleNamespace(num_speculative_tokens=k), ["model_name", "engine"],
                         labelvalues)
            per_engine = {}
            for i in engines:
                steps = [s for iv in intervals for s in iv["steps"]]
                steps = steps[i::len(engines)]
                for b in range(0, len(steps), 50):
                    prom.observe(_stats_from_steps(k, steps[b:b + 50]), engine_idx=i)
                per_engine[str(i)] = _counts(k, steps)
            text = prometheus_client.generate_latest(reg).decode()
            fid = f"{name}-dp{len(engines)}"
            (mdir / f"{fid}.prom").write_text(text)
            recs.append({"id": fid, "num_speculative_tokens": k, "file": f"metrics/{fid}.prom",
                         "model_name": "standin/target", "engines": per_engine})
    with open(out / "metrics.jsonl", "w") as fh:
        for r in recs:
            fh.write(json.dumps(r, sort_keys=True) + "\n")
    return recs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["configs", "logs", "metrics", "bench", "all", "fields"],
                    help="fields: only fields.json (cheap; write it for a new release before "
                         "driving the others, whose corpus reads it)")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--shared", type=Path, default=REPO.parent / "shared",
                    help="the shared folder whose cases/ is read too (skipped if absent)")
    ap.add_argument("--quiet", action="store_true", help="no line per config")
    ap.add_argument("--work", type=Path, default=None, help="scratch folder (default: a temp dir)")
    a = ap.parse_args(argv)
    work = a.work or Path(tempfile.mkdtemp(prefix="specnb-oracle-"))
    _setup_env(work)
    import vllm
    a.out.mkdir(parents=True, exist_ok=True)
    import table
    if a.what == "fields":
        write_fields(a.out)
        return
    wheel = table.wheel_info(Path(sys.prefix), vllm.__version__)
    meta = {"vllm": vllm.__version__, "fixture_format": FIXTURE_FORMAT,
            "python": sys.version.split()[0],
            "wheel": {k: wheel[k] for k in table.WHEEL_KEYS} if wheel else None}
    with contextlib.suppress(Exception):
        import torch
        meta["torch"] = torch.__version__
    shared = a.shared if a.shared and a.shared.is_dir() else None
    if a.what in ("configs", "all"):
        recs = run_configs(a.out, work, shared, quiet=a.quiet)
        meta["configs"] = len(recs)
        meta["shared_cases_read"] = shared is not None
    if a.what in ("logs", "all"):
        meta["logs"] = len(run_logs(a.out))
    if a.what in ("metrics", "all"):
        meta["metrics"] = len(run_metrics(a.out))
    if a.what in ("bench", "all"):
        import bench
        meta["bench"] = bench.run_bench(a.out, work)
    mp = a.out / "oracle.json"
    old = json.loads(mp.read_text()) if mp.exists() else {}
    old.update(meta)
    mp.write_text(json.dumps(old, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
