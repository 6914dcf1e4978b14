"""One vLLM release's table (``specnb/vllm/versions/<version>.json``), read from its own code.

Run with that release's oracle virtualenv (``make oracle-table VLLM=<v>`` or ``make oracle
VLLM=<v>``)::

    .venv-vllm-0.33.0/bin/python oracle/table.py --out specnb/vllm/versions/0.33.0.json

Imports only vLLM's config modules (``vllm.config``, ``SpeculativeConfig``, ``LoadConfig``,
``vllm.model_executor.layers.quantization``); ``EngineArgs.create_speculative_config`` and
the dynamic-schedule module are read as source text (``ast``), not imported, so the compiled
extensions are never needed (``oracle/setup_venv.sh --table`` installs only the Python files).

The table: every ``SpeculativeConfig`` field (kind, null allowed, bound, choices, default;
``checks``: the bounds ``__post_init__`` / ``_verify_args`` and the helpers they call raise
on, with the methods they apply to, see :func:`guarded_checks`), the ``method`` values, the
MTP names, the quantization method names, ``LoadConfig``'s fields, whether
``create_speculative_config`` rewrites ``-`` to ``_`` in keys, what the config class does with
an unknown key (``extra``), whether ``vllm serve`` has
``--speculative-config`` at all, the dynamic schedule (field and function), the pydantic that
did the validating (``pydantic_version``; ``requires``: what the wheel asks for, ``generated_with``:
what the virtualenv had), and the wheel (version, file name, sha256) the code came from.

``--flags OUT`` also writes the release's ``vllm serve`` flags (``specnb/vllm/flags/<v>.json``,
:func:`flag_table`) from ``make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))``, the
parser ``vllm serve`` builds, in the same pass.
"""
from __future__ import annotations

import argparse
import ast
import dataclasses
import hashlib
import importlib.metadata
import importlib.util
import inspect
import json
import os
import re
import sys
import textwrap
import typing
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpus as corpus_mod  # noqa: E402

#: the schedule field and the function that turns it into a lookup (vLLM >= 0.2x)
SCHEDULE_FIELD = "num_speculative_tokens_per_batch_size"
SCHEDULE_MODULE = "vllm.v1.spec_decode.dynamic.utils"
SCHEDULE_FUNCTION = "build_dynamic_sd_schedule_lookup"
#: methods that run every ``SpeculativeConfig`` check (the entry points)
ENTRY_POINTS = ("__post_init__", "_verify_args", "__init__", "maybe_create_spec_config")


def _source_of(module: str) -> str | None:
    """The source text of ``module`` without importing it (None if absent)."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin).read_text(encoding="utf-8")


def _function_source(module_src: str, cls: str, name: str) -> str | None:
    tree = ast.parse(module_src)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for f in node.body:
                if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name == name:
                    return ast.get_source_segment(module_src, f)
    return None


def _class_fields(module_src: str, cls: str) -> list[str]:
    tree = ast.parse(module_src)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            return [s.target.id for s in node.body
                    if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
    return []


# ------------------------------------------------------------------ fields

def _spec(name, annotation, default, metadata=(), internal=False, engine_set=()) -> dict:
    """One field; ``internal`` (vLLM fills it in): not an ``__init__`` argument, or marked
    ``SkipValidation`` and either a config object or a key ``create_speculative_config`` sets
    itself (``engine_set``); 0.9.1-0.11.0's ``num_speculative_tokens: SkipValidation[int]`` is
    the user's value, unvalidated, not an internal one."""
    kind = corpus_mod._kind(annotation)
    skipped = any(type(m).__name__ == "SkipValidation" for m in metadata) or \
        "SkipValidation" in repr(annotation)
    skip = internal or (skipped and (kind in ("config", "other") or name in engine_set))
    spec = {"kind": "internal" if skip else kind,
            "nullable": type(None) in typing.get_args(annotation) or annotation is None}
    for m in metadata:
        for attr, excl in (("gt", True), ("ge", False), ("lt", True), ("le", False)):
            v = getattr(m, attr, None)
            if v is not None:
                if attr in ("gt", "ge"):
                    spec["minimum"], spec["exclusive"] = v, excl
                else:
                    spec["maximum"], spec["maximum_exclusive"] = v, excl
    if kind == "literal":
        spec["choices"] = corpus_mod._literal_values(annotation)
        spec["open"] = any(a is str for a in typing.get_args(annotation))
    if kind == "enum":
        ann = [a for a in typing.get_args(annotation) if a is not type(None)] or [annotation]
        spec["choices"] = list(ann[0].__members__)
    if isinstance(default, (str, int, float, bool, type(None))):
        spec["default"] = default
    return spec


def _engine_set(csc: str) -> set[str]:
    """The string keys of the dict literals in ``create_speculative_config`` (0.9.1-0.11.0:
    ``self.speculative_config.update({"target_model_config": ..., ...})``)."""
    try:
        tree = ast.parse(textwrap.dedent(csc))
    except SyntaxError:
        return set()
    return {k.value for d in ast.walk(tree) if isinstance(d, ast.Dict) for k in d.keys
            if isinstance(k, ast.Constant) and isinstance(k.value, str)}


def speculative_fields(cls, engine_set=()) -> tuple[str, dict]:
    """("pydantic" | "dataclass" | "init", {field: spec}): a pydantic dataclass (vLLM >=
    0.9.1), a stdlib dataclass, or a plain class whose ``__init__`` takes the fields."""
    if hasattr(cls, "__pydantic_fields__"):
        return "pydantic", {n: _spec(n, f.annotation, f.default, f.metadata,
                                     engine_set=engine_set)
                            for n, f in cls.__pydantic_fields__.items()}
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except Exception:  # noqa: BLE001 - unresolvable forward references: keep the strings
        hints = {}
    if dataclasses.is_dataclass(cls):
        out = {}
        for f in dataclasses.fields(cls):
            ann = hints.get(f.name, f.type)
            meta = getattr(ann, "__metadata__", ())
            ann = typing.get_args(ann)[0] if meta else ann
            d = None if f.default is dataclasses.MISSING else f.default
            out[f.name] = _spec(f.name, ann, d, meta, internal=not f.init)
        return "dataclass", out
    sig = inspect.signature(cls.__init__)
    hints = typing.get_type_hints(cls.__init__) if not hints else hints
    out = {}
    for n, p in list(sig.parameters.items())[1:]:
        d = None if p.default is inspect.Parameter.empty else p.default
        out[n] = _spec(n, hints.get(n, p.annotation), d)
    return "init", out


# ------------------------------------------------------------------ guarded checks

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
_OPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


def _self_attr(node) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
            and node.value.id == "self":
        return node.attr
    return None


def _const(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
            and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _const(node.operand)
        return -v if v is not None else None
    return None


def _methods_in(test) -> set[str] | None:
    """The methods a test selects (``self.method == "x"``, ``self.method in (...)``, or-ed);
    None when the test says nothing positive about the method."""
    if isinstance(test, ast.BoolOp):
        parts = [_methods_in(v) for v in test.values]
        known = [p for p in parts if p is not None]
        if isinstance(test.op, ast.Or):
            return set().union(*parts) if parts and all(p is not None for p in parts) else None
        return set.intersection(*known) if known else None
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and _self_attr(test.left) == "method":
        op, right = test.ops[0], test.comparators[0]
        if isinstance(op, ast.Eq) and isinstance(right, ast.Constant):
            return {right.value}
        if isinstance(op, ast.In) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
            vals = {e.value for e in right.elts if isinstance(e, ast.Constant)}
            return vals or None
    if isinstance(test, ast.Call) and _self_attr(test.func) in ("use_eagle",):
        return {"eagle", "eagle3"}
    return None


def _bounds_in(test) -> list[tuple[str, str, float]]:
    """(field, op, value) for every ``self.F <op> constant`` in a test (the values rejected)."""
    out = []
    for node in ast.walk(test):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _OPS:
            op = _OPS[type(node.ops[0])]
            left, right = node.left, node.comparators[0]
            if _self_attr(left) and _const(right) is not None:
                out.append((_self_attr(left), op, _const(right)))
            elif _self_attr(right) and _const(left) is not None:
                out.append((_self_attr(right), _FLIP[op], _const(left)))
    return out


def _raises(stmts) -> bool:
    return any(isinstance(s, ast.Raise) for s in stmts)


def guarded_checks(cls, fields) -> dict[str, list[dict]]:
    """{field: [{"rejects": "< 1", "methods": [...] | None, "in": function, "if": test}]}: each
    ``if <self.F compared with a number>: raise`` in ``cls``'s own code, with the methods
    whose branch it sits in (following ``self._helper()`` calls from ``__post_init__`` /
    ``_verify_args``; None = every method). Read from the source with ``ast``; a check the
    pattern misses (a bound computed, or tested through a local variable) is absent."""
    try:
        src = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    tree = ast.parse(src)
    cdef = next(n for n in tree.body if isinstance(n, ast.ClassDef))
    funcs = {f.name: f for f in cdef.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
    calls: dict[str, list] = {}   # callee -> [(caller, guard)]
    checks: list[tuple] = []      # (field, op, value, func, guard, test text)

    def calls_in(node, func, guard):
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call):
                name = _self_attr(sub.func)
                if name in funcs and name != func:
                    calls.setdefault(name, []).append((func, guard))

    def walk(stmts, func, guard):
        for st in stmts:
            if isinstance(st, ast.If):
                m = _methods_in(st.test)
                inner = guard if m is None else (m if guard is None else guard & m)
                if _raises(st.body):
                    for f, op, v in _bounds_in(st.test):
                        if f in fields and f != "method":
                            checks.append((f, op, v, func, inner, ast.unparse(st.test)))
                calls_in(st.test, func, guard)
                walk(st.body, func, inner)
                walk(st.orelse, func, guard)
            elif isinstance(st, (ast.For, ast.While, ast.With, ast.Try)):
                for attr in ("iter", "test", "items"):
                    if hasattr(st, attr) and not isinstance(getattr(st, attr), list):
                        calls_in(getattr(st, attr), func, guard)
                for attr in ("body", "orelse", "finalbody"):
                    walk(getattr(st, attr, []) or [], func, guard)
                for h in getattr(st, "handlers", []) or []:
                    walk(h.body, func, guard)
            elif not isinstance(st, (ast.FunctionDef, ast.ClassDef)):
                calls_in(st, func, guard)

    for name, f in funcs.items():
        walk(f.body, name, None)
    # a function's guard: the union of its callers' (None = every method); entry points None
    reach: dict[str, object] = {n: None for n in ENTRY_POINTS if n in funcs}
    for _ in range(len(funcs)):
        changed = False
        for callee, sites in calls.items():
            gs = []
            for caller, g in sites:
                if caller not in reach:
                    continue
                cg = reach[caller]
                gs.append(g if cg is None else (cg if g is None else cg & g))
            if not gs:
                continue
            new = None if any(g is None for g in gs) else set().union(*gs)
            if reach.get(callee, 0) != new and callee not in ENTRY_POINTS:
                reach[callee] = new
                changed = True
        if not changed:
            break
    out: dict[str, list] = {}
    for f, op, v, func, guard, test in checks:
        if func not in reach:
            continue
        fg = reach[func]
        g = guard if fg is None else (fg if guard is None else fg & guard)
        item = {"rejects": f"{op} {v}", "methods": sorted(g) if g is not None else None,
                "in": func, "if": test}
        if item not in out.setdefault(f, []):
            out[f].append(item)
    return out


# ------------------------------------------------------------------ the rest

def _extra(cls, style) -> str:
    """What ``SpeculativeConfig(**keys)`` does with a key it has no field for: pydantic's
    ``extra`` ("forbid", "ignore" (pydantic's default), "allow"); a stdlib dataclass or plain
    ``__init__`` raises TypeError ("typeerror"). Whatever the engine does before (filtering or
    renaming keys) is not in this."""
    if style == "pydantic":
        return (getattr(cls, "__pydantic_config__", None) or {}).get("extra") or "ignore"
    return "typeerror"


def quantization_methods() -> list[str] | None:
    try:
        from vllm.model_executor.layers.quantization import QUANTIZATION_METHODS
    except Exception:  # noqa: BLE001
        return None
    return list(QUANTIZATION_METHODS)


def mtp_methods() -> list[str]:
    for mod in ("vllm.config.speculative", "vllm.config"):
        try:
            m = importlib.import_module(mod)
        except Exception:  # noqa: BLE001
            continue
        if hasattr(m, "MTPModelTypes"):
            return list(typing.get_args(m.MTPModelTypes))
    return []


def _requirement(dist: str, name: str) -> str | None:
    try:
        reqs = importlib.metadata.requires(dist) or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for r in reqs:
        if re.match(rf"{name}\b", r, re.I) and "extra ==" not in r:
            return r
    return None


WHEEL_KEYS = ("version", "filename", "sha256")


def _installed(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def wheel_info(prefix: Path, version: str) -> dict | None:
    """The wheel the virtualenv's vLLM came from: ``<venv>/.oracle-wheel.json`` (written by
    oracle/setup_venv.sh), else the cached ``vllm-<version>-*.whl`` hashed here."""
    p = prefix / ".oracle-wheel.json"
    if p.exists():
        return json.loads(p.read_text())
    wheels = Path(os.environ.get("ORACLE_WHEELS", Path.home() / ".cache/specnb-oracle/wheels"))
    found = sorted(wheels.glob(f"vllm-{version}-*.whl"))
    if not found:
        return None
    h = hashlib.sha256()
    with found[0].open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return {"version": version, "filename": found[0].name, "sha256": h.hexdigest()}


def table(wheel: dict | None = None) -> dict:
    import pydantic
    import vllm
    from vllm.config import SpeculativeConfig
    args_src = _source_of("vllm.engine.arg_utils") or ""
    csc = _function_source(args_src, "EngineArgs", "create_speculative_config") or ""
    style, fields = speculative_fields(SpeculativeConfig, _engine_set(csc))
    for name, items in guarded_checks(SpeculativeConfig, fields).items():
        fields[name]["checks"] = items
    try:
        from vllm.config import LoadConfig
        load_fields = sorted(getattr(LoadConfig, "__pydantic_fields__", None)
                             or [f.name for f in dataclasses.fields(LoadConfig)])
    except Exception:  # noqa: BLE001
        load_fields = None
    sched_src = _source_of(SCHEDULE_MODULE) or ""
    flag = "speculative_config" in _class_fields(args_src, "EngineArgs")
    version = vllm.__version__
    if wheel is None:
        wheel = wheel_info(Path(sys.prefix), version)
    if wheel is not None:
        wheel = {k: wheel[k] for k in WHEEL_KEYS}
    if wheel is not None and wheel["version"] != version:
        raise SystemExit(f"table: the wheel named is vLLM {wheel.get('version')}, "
                         f"the code imported is {version}")
    return {
        "vllm": version, "source": "vLLM's installed code, read by oracle/table.py",
        "wheel": wheel,
        "pydantic_version": pydantic.VERSION,
        "requires": {n: _requirement("vllm", n) for n in ("pydantic", "transformers", "torch")},
        "generated_with": {n: _installed(n) for n in ("pydantic", "transformers", "torch")},
        "config_style": style,
        "extra": _extra(SpeculativeConfig, style),
        "speculative_config_flag": flag,
        # how create_speculative_config reads the flag's text (0.8.2: a str it literal_evals);
        # a release without the flag (0.7.3-0.8.1, V0's --speculative-model) reads no such
        # text, so its table has no entry rather than a "json" nothing reads
        **({"speculative_config_text": "ast.literal_eval" if "literal_eval(" in csc else "json"}
           if flag else {}),
        "fields": fields, "methods": fields.get("method", {}).get("choices", []),
        "mtp_methods": mtp_methods(), "quantization_methods": quantization_methods(),
        "load_config_fields": load_fields,
        "hyphen_rewrite": 'replace("-", "_")' in csc or "replace('-', '_')" in csc,
        "schedule": {"field": SCHEDULE_FIELD if SCHEDULE_FIELD in fields else None,
                     "function": (f"{SCHEDULE_MODULE}.{SCHEDULE_FUNCTION}"
                                  if f"def {SCHEDULE_FUNCTION}(" in sched_src else None)},
    }


# ------------------------------------------------------------------ serve flags

def serve_parser(api_server=False):
    """``vllm serve``'s parser as the release builds it: ``make_arg_parser`` on a
    ``FlexibleArgumentParser(prog="vllm serve")``, with the positional ``model_tag`` that the
    serve subcommand adds (0.33.0's ``make_arg_parser`` adds it itself); ``api_server``:
    ``python -m vllm.entrypoints.openai.api_server``'s (nothing added)."""
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:
        from vllm.utils import FlexibleArgumentParser
    for mod in ("vllm.entrypoints.common.cli_args", "vllm.entrypoints.launchers.cli_args",
                "vllm.entrypoints.openai.cli_args"):  # 0.33, 0.32, older (as oracle/drive.py)
        try:
            make_arg_parser = importlib.import_module(mod).make_arg_parser
            break
        except ModuleNotFoundError as exc:
            if not mod.startswith(exc.name or "-"):
                raise  # the module is there, one it imports is not
    parser = make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))
    has = any(a.dest == "model_tag" for a in parser._actions)  # noqa: SLF001
    parser.model_tag_from = "make_arg_parser" if has else "serve subcommand"
    if not has and not api_server:
        parser.add_argument("model_tag", nargs="?")  # as the serve subcommand adds it
    return parser


def _type_name(act) -> str:
    """The flag's value type: int, float, str, json, human_int, human_int_or_auto."""
    fname = getattr(act.type, "__name__", "") or ""
    if "human_readable" in fname:
        return "human_int_or_auto" if fname.endswith("_or_auto") else "human_int"
    tp = getattr(act.type, "__name__", None) or type(act.type).__name__
    typ = {"int": "int", "float": "float", "str": "str", "NoneType": "str"}.get(tp)
    if typ is not None:
        return typ
    for text in ("{}", "7.5", "7"):  # a wrapped type (optional_type(int), json.loads)
        try:
            val = act.type(text)
        except Exception:  # noqa: BLE001
            continue
        typ = {dict: "json", float: "float", int: "int"}.get(type(val))
        if typ:
            return typ
    return "str"


def _names(act) -> list[str] | None:
    """The names a flag lists without enforcing them: vLLM's ``literal_to_kwargs`` puts a
    Literal's values in ``metavar`` rather than ``choices`` when the type also allows ``str``
    (0.33.0's ``--kv-cache-dtype``: ``CacheDType | str``); the config class checks them later."""
    m = act.metavar
    if isinstance(m, (list, tuple)) and m and all(isinstance(x, str) for x in m):
        return list(m)
    if isinstance(m, str) and re.fullmatch(r"\{[^{}]+\}", m):
        return m[1:-1].split(",")
    return None


def flag_table(parser) -> dict:
    """The parser's options: {option string: {dest, kind, type, choices, names, nargs,
    default}}: ``choices`` what argparse enforces (from a Literal type, vLLM's
    ``literal_to_kwargs``, or a list given), ``names`` a Literal's values vLLM lists without
    enforcing (:func:`_names`), ``default`` the parser's default where it is plain JSON."""
    out = {}
    by_action: dict = {}
    # every registered option string, the hidden ones (--no-enable-x) included
    for opt, act in parser._option_string_actions.items():  # noqa: SLF001
        by_action.setdefault(id(act), (act, []))[1].append(opt)
    kinds = {"_StoreTrueAction": "store_true", "_StoreFalseAction": "store_false",
             "BooleanOptionalAction": "bool_optional", "_StoreAction": "value",
             "_AppendAction": "value", "_ExtendAction": "value"}
    for act, opts in by_action.values():
        if act.dest == "help":
            continue
        kind = kinds.get(type(act).__name__, type(act).__name__)
        d = act.default
        entry = {"dest": act.dest, "kind": kind, "type": _type_name(act),
                 "choices": [str(c) for c in act.choices]
                 if act.choices else None,
                 "nargs": act.nargs if isinstance(act.nargs, (int, str)) else None}
        if _names(act):
            entry["names"] = _names(act)
        if isinstance(d, (str, int, float, bool)) and d != argparse.SUPPRESS:
            entry["default"] = d
        for opt in opts:
            neg = opt in getattr(act, "negative_option_strings", ()) or (
                kind == "bool_optional" and opt.startswith("--no-"))
            out[opt] = {**entry, "negative": True} if neg else entry
    return dict(sorted(out.items()))


def flags(wheel: dict | None) -> dict:
    """The release's flag table (``specnb/vllm/flags/<v>.json``)."""
    import vllm
    parser = serve_parser()
    try:  # FlexibleArgumentParser.parse_args refuses `vllm serve --served-model-name x` (0.2x+)
        flexible = inspect.getsource(type(parser))
    except (OSError, TypeError):
        flexible = ""
    return {"vllm": vllm.__version__, "wheel": wheel, "model_tag": parser.model_tag_from,
            "served_name_needs_model": "should be provided as the first positional" in flexible,
            "source": "vllm serve's parser (make_arg_parser), read by oracle/table.py",
            "flags": flag_table(parser)}


def write(out: Path, wheel: dict | None = None) -> dict:
    t = table(wheel)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(t, indent=1, sort_keys=True) + "\n")
    return t


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, type=Path, help="the table to write")
    ap.add_argument("--wheel-info", type=Path, default=None,
                    help="JSON {version, filename, sha256} (default: the venv's "
                         ".oracle-wheel.json)")
    ap.add_argument("--flags", type=Path, default=None,
                    help="also write vllm serve's flag table here")
    a = ap.parse_args(argv)
    wheel = json.loads(a.wheel_info.read_text()) if a.wheel_info else None
    t = write(a.out, wheel)
    print(f"table: vLLM {t['vllm']} ({len(t['fields'])} fields, {len(t['methods'])} methods, "
          f"{len(t['quantization_methods'] or [])} quantization methods) -> {a.out}")
    if a.flags is not None:
        f = flags(t["wheel"])
        a.flags.parent.mkdir(parents=True, exist_ok=True)
        a.flags.write_text(json.dumps(f, indent=0, sort_keys=True) + "\n")
        print(f"table: vLLM {t['vllm']} serve flags ({len(f['flags'])} option strings) -> "
              f"{a.flags}")


if __name__ == "__main__":
    main()
