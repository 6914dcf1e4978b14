"""The oracle's corpus of ``--speculative-config`` inputs.

Three parts, each entry a dict (see ``entry``):

- collected: every speculative config in the repo's ``tests/cases/`` and in
  ``../shared/cases/`` (when that folder is there), plus the docs' examples;
- generated from the installed vLLM's ``SpeculativeConfig`` fields (pydantic
  introspection): every method; every field with a valid value, a wrong type and
  an out-of-range value; removed and renamed keys (keys of other versions'
  committed ``fields.json`` and a list of known old keys); hyphenated keys;
  schedules, the empty one included;
- target-aware: the same kinds of string run against other stand-in targets,
  ``--tensor-parallel-size`` / ``--max-model-len``, and stand-in drafts whose
  config.json does not fit the target.

``build_corpus(cls, repo, shared)`` needs ``SpeculativeConfig`` (the class, from
the vLLM under test) and so runs inside the oracle's virtualenv.
"""
from __future__ import annotations

import json
import typing
from enum import Enum
from pathlib import Path

#: the placeholder a config text uses for the local stand-in folder
STANDINS = "{standins}"

BASE_NGRAM = {"method": "ngram", "num_speculative_tokens": 3}
BASE_DRAFT = {"method": "draft_model", "model": "Qwen/Qwen3-0.6B", "num_speculative_tokens": 3}
BASE_EAGLE = {"method": "eagle", "model": "yuhuili/EAGLE-LLaMA3-Instruct-8B",
              "num_speculative_tokens": 3}
BASE_SUFFIX = {"method": "suffix", "num_speculative_tokens": 8}
BASE_MTP = {"method": "mtp", "num_speculative_tokens": 1}
MTP_TARGET = "target-deepseek-mtp"

#: keys from other eras and the docs that a user may still write
OLD_KEYS = {
    "ngram_prompt_lookup_max": 4, "ngram_prompt_lookup_min": 1, "speculative_model": "[ngram]",
    "speculative_draft_tensor_parallel_size": 1, "disable_by_batch_size": 4,
    "speculative_disable_by_batch_size": 4, "disable_logprobs": True, "disable_log_stats": True,
    "enable_chunked_prefill": True, "speculative_token_tree": "[(0,), (0, 0)]",
    "adaptive_verification": True, "synthetic_acceptance_rate": 0.5,
    "spec_decoding_acceptance_method": "rejection_sampler", "acceptance_method": "rejection_sampler",
    "typical_acceptance_sampler_posterior_threshold": 0.09, "num_lookahead_slots": 3,
    "temperature": 0.7, "top_p": 0.9, "speculative_max_model_len": 2048,
}
#: method names from other versions and common misspellings
OLD_METHODS = ["medusa", "mlp_speculator", "[ngram]", "ngram-gpu", "eagle-3", "EAGLE", "lookahead",
               "draft", "step3p5_mtp", "step5_mtp", "deepseek_mtp", "qwen3_next_mtp"]

# per field: (base config, target) to merge the field into; default BASE_NGRAM
_FIELD_BASE = {
    "model": BASE_DRAFT, "draft_tensor_parallel_size": BASE_DRAFT, "quantization": BASE_DRAFT,
    "max_model_len": BASE_DRAFT, "revision": BASE_DRAFT, "code_revision": BASE_DRAFT,
    "use_heterogeneous_vocab": BASE_DRAFT, "draft_load_config": BASE_DRAFT,
    "parallel_drafting": BASE_DRAFT, "enforce_eager": BASE_DRAFT, "moe_backend": BASE_DRAFT,
    "attention_backend": BASE_DRAFT, "kv_cache_dtype": BASE_DRAFT,
    "draft_lm_head_quantization": BASE_EAGLE, "disable_padded_drafter_batch": BASE_EAGLE,
    "disable_eagle_block_drop": BASE_EAGLE, "disable_lookahead_block_hashes": BASE_EAGLE,
    "suffix_decoding_max_tree_depth": BASE_SUFFIX, "suffix_decoding_max_cached_requests": BASE_SUFFIX,
    "suffix_decoding_max_spec_factor": BASE_SUFFIX, "suffix_decoding_min_token_prob": BASE_SUFFIX,
    "synthetic_acceptance_rates": dict(BASE_NGRAM, rejection_sample_method="synthetic"),
    "synthetic_acceptance_length": dict(BASE_NGRAM, rejection_sample_method="synthetic"),
    "fly_window_size": dict(BASE_NGRAM, num_speculative_tokens=4, rejection_sample_method="fly"),
    "fly_entropy_threshold": dict(BASE_NGRAM, num_speculative_tokens=4, rejection_sample_method="fly"),
    "fly_entropy_top_k": dict(BASE_NGRAM, num_speculative_tokens=4, rejection_sample_method="fly"),
    "index_share_for_mtp_iteration": BASE_MTP,
}
# fields also tried on a second base (what happens to a field the method ignores)
_FIELD_ALT_BASE = {
    "draft_tensor_parallel_size": BASE_NGRAM, "max_model_len": BASE_NGRAM, "quantization": BASE_NGRAM,
    "index_share_for_mtp_iteration": BASE_NGRAM, "draft_lm_head_quantization": BASE_NGRAM,
    "dspark_draft_topk": BASE_DRAFT, "xpress_topc": BASE_DRAFT, "use_heterogeneous_vocab": BASE_NGRAM,
    "enable_adaptive_verification": BASE_DRAFT, "parallel_drafting": BASE_NGRAM,
    "synthetic_acceptance_rates": BASE_NGRAM, "synthetic_acceptance_length": BASE_NGRAM,
    "fly_window_size": BASE_NGRAM, "prompt_lookup_max": BASE_DRAFT,
}
# valid values by field name (else by annotation)
_VALID = {
    "num_speculative_tokens": 3, "model": "Qwen/Qwen3-0.6B", "method": "ngram",
    "draft_tensor_parallel_size": 1, "tensor_parallel_size": 1, "quantization": "fp8",
    "moe_backend": "triton", "attention_backend": "FLASH_ATTN", "kv_cache_dtype": "fp8",
    "max_model_len": 2048, "revision": "main", "code_revision": "main", "prompt_lookup_max": 4,
    "prompt_lookup_min": 2, "num_speculative_tokens_per_batch_size": [[1, 8, 3], [9, 512, 1]],
    "suffix_decoding_max_tree_depth": 16, "suffix_decoding_max_cached_requests": 100,
    "suffix_decoding_max_spec_factor": 2.0, "suffix_decoding_min_token_prob": 0.2,
    "draft_load_config": {"load_format": "auto"}, "synthetic_acceptance_rates": [0.8, 0.6, 0.4],
    "synthetic_acceptance_length": 2.0, "dspark_draft_topk": 4, "xpress_topc": 8,
    "fly_window_size": 2, "fly_entropy_threshold": 0.5, "fly_entropy_top_k": 3,
    "target_model_config": {}, "target_parallel_config": {}, "draft_model_config": {},
    "draft_parallel_config": {}, "disable_by_batch_size": 4,
}
_OUT_OF_RANGE = {
    "suffix_decoding_max_tree_depth": 0, "suffix_decoding_max_cached_requests": -1,
    "suffix_decoding_max_spec_factor": -0.5, "suffix_decoding_min_token_prob": 1.5,
    "synthetic_acceptance_rates": [0.4, 0.6, 0.8], "synthetic_acceptance_length": 9.0,
    "fly_window_size": 4, "num_speculative_tokens_per_batch_size": [[0, 8, 3]],
    "max_model_len": 100000, "draft_tensor_parallel_size": 3, "prompt_lookup_min": 0,
    "prompt_lookup_max": 0, "num_speculative_tokens": 0,
}

SCHEDULES = {
    "valid": [[1, 8, 3], [9, 512, 1]], "empty": [], "single": [[1, 512, 2]],
    "zero-k": [[1, 4, 3], [5, 512, 0]], "overlap": [[1, 4, 2], [3, 512, 0]],
    "not-from-1": [[5, 512, 2]], "k-above-max": [[1, 4, 5]], "negative-k": [[1, 4, -1]],
    "start-after-end": [[8, 1, 2]], "two-items": [[1, 8]], "unsorted": [[9, 512, 1], [1, 8, 3]],
    "gap": [[1, 8, 3], [20, 512, 1]], "not-a-list": "1-8:3", "nested-wrong": [1, 8, 3],
}


def entry(id, text, source, *, target="target-llama", serve_args=(), target_dependent=None,
          note="", argv=None):
    """One corpus entry. ``text`` is the ``--speculative-config`` value, or None when ``argv``
    (the dotted CLI form) carries it; ``target`` a stand-in name; ``serve_args`` more flags."""
    if target_dependent is None:
        target_dependent = _reads_checkpoint(text) or target != "target-llama" or bool(serve_args)
    return {"id": id, "source": source, "text": text, "argv": list(argv) if argv else None,
            "target": target, "serve_args": list(serve_args),
            "target_dependent": bool(target_dependent), "note": note}


def _reads_checkpoint(text):
    try:
        cfg = json.loads(text) if text else None
    except ValueError:
        return False
    if not isinstance(cfg, dict):
        return False
    cfg = {str(k).replace("-", "_"): v for k, v in cfg.items()}
    model = cfg.get("model")
    method = cfg.get("method")
    if isinstance(model, str) and model not in ("ngram", "[ngram]", "ngram_gpu", "suffix"):
        dotted = "/" not in model and all(p.isidentifier() for p in model.split(".")) \
            and "." in model
        return not dotted
    return isinstance(method, str) and (method.endswith("mtp") or method in ("dflash", "dspark",
                                                                               "eagle", "eagle3"))


def _j(d):
    return json.dumps(d)


def _literal_values(tp):
    out = []
    for a in typing.get_args(tp):
        if typing.get_origin(a) is typing.Literal:
            out += _literal_values(a)
        elif isinstance(a, str):
            out.append(a)
        elif typing.get_origin(a) is typing.Union or a is type(None):
            out += _literal_values(a) if a is not type(None) else []
    return out


def _kind(ann):
    """'int' | 'float' | 'bool' | 'str' | 'literal' | 'enum' | 'list' | 'config' | 'other'."""
    origin = typing.get_origin(ann)
    args = [a for a in typing.get_args(ann) if a is not type(None)]
    if origin is typing.Literal:
        return "literal"
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        if any(typing.get_origin(a) is typing.Literal for a in args):
            return "literal"
        return _kind(args[0]) if args else "other"
    if origin is list:
        return "list"
    if ann is bool:
        return "bool"
    if ann is int:
        return "int"
    if ann is float:
        return "float"
    if ann is str:
        return "str"
    if isinstance(ann, type) and issubclass(ann, Enum):
        return "enum"
    if isinstance(ann, type):
        return "config"
    return "other"


def _bound(field):
    for m in field.metadata:
        for attr, off in (("gt", 0), ("ge", -1)):
            v = getattr(m, attr, None)
            if v is not None:
                return v if off == 0 else v + off
    return None


def field_cases(cls):
    """Entries for every field of ``cls`` (a pydantic dataclass): valid, wrong type,
    out of range, lax-mode spellings, the hyphenated key."""
    out = []
    for name, f in cls.__pydantic_fields__.items():
        kind = _kind(f.annotation)
        bases = [("", _FIELD_BASE.get(name, BASE_NGRAM))]
        if name in _FIELD_ALT_BASE:
            bases.append(("@" + _FIELD_ALT_BASE[name]["method"], _FIELD_ALT_BASE[name]))
        target = MTP_TARGET if name == "index_share_for_mtp_iteration" else "target-llama"
        valid = _VALID.get(name)
        if valid is None:
            valid = {"bool": True, "int": 2, "float": 0.5, "str": "x", "list": [],
                     "config": {}}.get(kind)
            if kind == "literal":
                valid = _literal_values(f.annotation)[0]
            if kind == "enum":
                valid = list(f.annotation.__members__)[0]
        variants = [("valid", valid)]
        wrong = {"int": "three", "float": "fast", "bool": "maybe", "str": 5, "list": "x",
                 "literal": 1, "enum": 7, "config": "auto"}.get(kind)
        if wrong is not None:
            variants.append(("wrong-type", wrong))
        if kind == "int":
            variants += [("numeric-string", str(valid)), ("integral-float", float(valid)),
                         ("fractional-float", 2.5), ("bool-true", True)]
        if kind == "bool":
            variants += [("string-true", "true"), ("int-1", 1)]
        if kind == "literal":
            variants += [(f"value-{v}", v) for v in _literal_values(f.annotation)[1:]
                         if name not in ("method", "quantization", "moe_backend", "kv_cache_dtype")]
            variants.append(("unknown-value", "bogus"))
        if kind == "enum":
            variants += [("lowercase", str(valid).lower()), ("auto", "auto"),
                         ("unknown-value", "bogus")]
        if kind == "config":
            variants.append(("extra-key", {"bogus_key": 1}))
        oor = _OUT_OF_RANGE.get(name)
        if oor is None and kind in ("int", "float"):
            b = _bound(f)
            oor = b if b is not None else -1
        if oor is not None:
            variants.append(("out-of-range", oor))
        if f.default is not None and not callable(f.default) and kind != "config":
            variants.append(("default", f.default))
        variants.append(("null", None))
        for bname, base in bases:
            for vname, value in variants if not bname else variants[:1]:
                cfg = dict(base)
                cfg[name] = value
                out.append(entry(f"field:{name}:{vname}{bname}", _j(cfg), f"field:{name}",
                                 target=target))
        if "_" in name:
            cfg = dict(bases[0][1])
            cfg[name.replace("_", "-")] = valid
            out.append(entry(f"hyphen:{name}", _j(cfg), f"field:{name}", target=target))
    return out


def method_cases(cls):
    methods = _literal_values(cls.__pydantic_fields__["method"].annotation)
    out = []
    for m in methods + [x for x in OLD_METHODS if x not in methods]:
        src = "method" if m in methods else "method:other-version"
        target = "target-llama"
        if m == "draft_model":
            cfg = dict(BASE_DRAFT)
        elif m == "eagle":
            cfg = dict(BASE_EAGLE)
        elif m == "eagle3":
            cfg = {"method": m, "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
                   "num_speculative_tokens": 3}
        elif m == "custom_class":
            cfg = {"method": m, "model": "my_pkg.MyProposer", "num_speculative_tokens": 3}
        elif m in ("medusa", "mlp_speculator"):
            cfg = {"method": m, "model": "Qwen/Qwen3-0.6B", "num_speculative_tokens": 3}
        elif m.endswith("mtp"):
            cfg = {"method": m, "num_speculative_tokens": 1}
            target = MTP_TARGET
        else:
            cfg = {"method": m, "num_speculative_tokens": 3}
        out.append(entry(f"method:{m}", _j(cfg), src, target=target))
        bare = {k: v for k, v in cfg.items() if k != "num_speculative_tokens"}
        out.append(entry(f"method:{m}:no-k", _j(bare), src, target=target))
    out.append(entry("method:mtp:k2", _j({"method": "mtp", "num_speculative_tokens": 2}), "method",
                     target=MTP_TARGET))
    out.append(entry("method:mtp:k3-vs-n_predict-1",
                     _j({"method": "mtp", "num_speculative_tokens": 3}), "method", target=MTP_TARGET))
    out.append(entry("method:mtp:on-llama", _j(BASE_MTP), "method", target_dependent=True))
    out.append(entry("model:ngram", _j({"model": "ngram", "num_speculative_tokens": 3}), "method"))
    out.append(entry("model:[ngram]", _j({"model": "[ngram]", "num_speculative_tokens": 3}), "method"))
    out.append(entry("model:ngram:no-k", _j({"model": "ngram"}), "method"))
    out.append(entry("model:dotted-path", _j({"model": "my_pkg.MyProposer",
                                              "num_speculative_tokens": 3}), "method"))
    out.append(entry("method:none:k-only", _j({"num_speculative_tokens": 3}), "method"))
    return out


def key_cases(cls, other_fields):
    """Removed, renamed and other versions' keys; hyphen/underscore conflicts."""
    fields = set(cls.__pydantic_fields__)
    out = []
    keys = dict(OLD_KEYS)
    for k in sorted(other_fields):
        keys.setdefault(k, _VALID.get(k, 1))
    for k, v in keys.items():
        if k in fields:
            continue
        cfg = dict(BASE_NGRAM)
        cfg[k] = v
        out.append(entry(f"key:{k}", _j(cfg), "key:not-in-this-version"))
        if "_" in k:
            cfg = dict(BASE_NGRAM)
            cfg[k.replace("_", "-")] = v
            out.append(entry(f"key:{k.replace('_', '-')}", _j(cfg), "key:not-in-this-version"))
    out.append(entry("hyphen:conflict:underscore-last",
                     '{"method": "ngram", "num-speculative-tokens": 5, "num_speculative_tokens": 3}',
                     "key:hyphen"))
    out.append(entry("hyphen:conflict:hyphen-last",
                     '{"method": "ngram", "num_speculative_tokens": 3, "num-speculative-tokens": 5}',
                     "key:hyphen"))
    out.append(entry("hyphen:all", '{"method": "ngram", "num-speculative-tokens": 3, '
                     '"prompt-lookup-max": 4, "prompt-lookup-min": 2}', "key:hyphen"))
    out.append(entry("key:uppercase", '{"Method": "ngram", "num_speculative_tokens": 3}', "key"))
    out.append(entry("key:duplicate", '{"method": "ngram", "num_speculative_tokens": 3, '
                     '"num_speculative_tokens": 4}', "key"))
    return out


def schedule_cases():
    out = []
    for name, sched in SCHEDULES.items():
        for base_name, base in (("ngram", BASE_NGRAM), ("mtp", BASE_MTP)):
            cfg = dict(base)
            if base_name == "mtp":
                cfg["num_speculative_tokens"] = 2
            cfg["num_speculative_tokens_per_batch_size"] = sched
            out.append(entry(f"schedule:{name}:{base_name}", _j(cfg), "schedule",
                             target=MTP_TARGET if base_name == "mtp" else "target-llama"))
    return out


def syntax_cases():
    texts = {
        "empty-string": "", "None": "None", "null": "null", "json-list": "[1, 2]",
        "json-number": "3", "json-string": '"ngram"', "empty-object": "{}",
        "single-quotes": "{'method': 'ngram', 'num_speculative_tokens': 3}",
        "trailing-comma": '{"method": "ngram", "num_speculative_tokens": 3,}',
        "unquoted": "{method: ngram, num_speculative_tokens: 3}",
        "python-true": '{"method": "ngram", "num_speculative_tokens": 3, "parallel_drafting": True}',
        "nan-value": '{"method": "ngram", "num_speculative_tokens": NaN}',
        "nested-string": '"{\\"method\\": \\"ngram\\", \\"num_speculative_tokens\\": 3}"',
    }
    out = [entry(f"syntax:{k}", v, "syntax") for k, v in texts.items()]
    out.append(entry("cli:dotted", None, "syntax", argv=[
        "--speculative-config.method", "ngram", "--speculative-config.num_speculative_tokens", "3"]))
    out.append(entry("cli:underscore-flag", None, "syntax", argv=[
        "--speculative_config", _j(BASE_NGRAM)]))
    return out


def target_cases():
    d = BASE_DRAFT
    local = STANDINS + "/"
    cases = [
        ("draft-tp2-target-tp1", dict(d, draft_tensor_parallel_size=2), "target-llama", []),
        ("draft-tp2-target-tp2", dict(d, draft_tensor_parallel_size=2), "target-llama",
         ["--tensor-parallel-size", "2"]),
        ("draft-tp1-target-tp2", dict(d, draft_tensor_parallel_size=1), "target-llama",
         ["--tensor-parallel-size", "2"]),
        ("draft-tp2-target-tp4", dict(d, draft_tensor_parallel_size=2), "target-llama",
         ["--tensor-parallel-size", "4"]),
        ("draft-tp-unset-target-tp2", dict(d), "target-llama", ["--tensor-parallel-size", "2"]),
        ("max-model-len-above-target", dict(d, max_model_len=8192), "target-llama", []),
        ("max-model-len-at-target", dict(d, max_model_len=4096), "target-llama", []),
        ("max-model-len-above-served", dict(d, max_model_len=3000), "target-llama",
         ["--max-model-len", "2048"]),
        ("max-model-len-above-short-target", dict(d, max_model_len=3000), "target-llama-ctx2048", []),
        ("max-model-len-above-draft", dict(d, model=local + "draft-llama-ctx1024", max_model_len=2048),
         "target-llama", []),
        ("draft-ctx-shorter", dict(d, model=local + "draft-llama-ctx1024"), "target-llama", []),
        ("vocab-differs", dict(d, model="HuggingFaceTB/SmolLM2-135M-Instruct"), "target-llama", []),
        ("vocab-differs-local", dict(d, model=local + "draft-llama-vocab50k"), "target-llama", []),
        ("vocab-differs-heterogeneous", dict(d, model=local + "draft-llama-vocab50k",
                                             use_heterogeneous_vocab=True), "target-llama", []),
        ("local-path-missing", dict(d, model=local + "no-such-checkpoint"), "target-llama", []),
        ("hub-id-not-cached", dict(d, model="nobody/not-in-cache"), "target-llama", []),
        ("local-draft", dict(d, model=local + "draft-llama"), "target-llama", []),
        ("eagle-on-eagle3-head", dict(BASE_EAGLE, model="yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"),
         "target-llama", []),
        ("eagle3-on-eagle-head", dict(BASE_EAGLE, method="eagle3"), "target-llama", []),
        ("eagle-local", dict(BASE_EAGLE, model=local + "EAGLE-llama-head"), "target-llama", []),
        ("draft_model-on-eagle-path", dict(d, model=local + "EAGLE-llama-head"), "target-llama", []),
        ("no-method-eagle-path", {"model": local + "EAGLE-llama-head", "num_speculative_tokens": 3},
         "target-llama", []),
        ("no-method-draft", {"model": "Qwen/Qwen3-0.6B", "num_speculative_tokens": 3},
         "target-llama", []),
        ("eagle-draft-tp2-target-tp2", dict(BASE_EAGLE, draft_tensor_parallel_size=2), "target-llama",
         ["--tensor-parallel-size", "2"]),
        ("ngram-target-tp2", dict(BASE_NGRAM, draft_tensor_parallel_size=2), "target-llama",
         ["--tensor-parallel-size", "2"]),
        ("mtp-draft-tp2-target-tp1", dict(BASE_MTP, draft_tensor_parallel_size=2), MTP_TARGET, []),
    ]
    return [entry(f"target:{name}", _j(cfg), "target", target=tgt, serve_args=args,
                  target_dependent=True) for name, cfg, tgt, args in cases]


def _case_text(rec):
    if "config_text" in rec:
        return rec["config_text"]
    c = rec.get("config")
    if isinstance(c, str):
        return c
    return json.dumps(c)


def collected_cases(repo: Path, shared: Path | None):
    """Every speculative config in tests/cases/ (and ../shared/cases/): *.jsonl records
    with a ``config`` / ``config_text``."""
    out = []
    roots = [("tests/cases", repo / "tests" / "cases")]
    if shared is not None and (shared / "cases").is_dir():
        roots.append(("shared/cases", shared / "cases"))
    seen = set()
    for label, root in roots:
        for path in sorted(root.rglob("*.jsonl")):
            if "vllm/" in path.relative_to(root).as_posix() and path.name == "configs.jsonl" \
                    and path.parent.parent.name == "vllm":
                continue  # our own fixtures
            for i, line in enumerate(path.read_text().splitlines()):
                if not line.strip():
                    continue
                rec = json.loads(line)
                if "config" not in rec and "config_text" not in rec:
                    continue
                text = _case_text(rec).replace("<path>", STANDINS)
                rel = f"{label}/{path.relative_to(root).as_posix()}"
                cid = f"case:{rel}#{rec.get('id', i)}"
                if cid in seen:
                    continue
                seen.add(cid)
                out.append(entry(cid, text, f"case:{rel}", note=rec.get("note", rec.get("why", ""))))
    return out


DOCS_EXAMPLES = {
    "draft_model": BASE_DRAFT,
    "draft_model-heterogeneous": {"method": "draft_model", "model": "HuggingFaceTB/SmolLM2-135M-Instruct",
                                  "num_speculative_tokens": 3, "use_heterogeneous_vocab": True},
    "ngram": {"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4},
    "ngram-readme": {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 2,
                     "prompt_lookup_max": 5},
    "suffix": {"method": "suffix", "num_speculative_tokens": 32},
    "suffix-mrv2": {"method": "suffix", "num_speculative_tokens": 8, "enable_adaptive_verification": True},
    "suffix-readme": {"method": "suffix", "num_speculative_tokens": 8, "suffix_decoding_max_tree_depth": 24,
                      "suffix_decoding_max_cached_requests": 10000,
                      "suffix_decoding_max_spec_factor": 1.0, "suffix_decoding_min_token_prob": 0.1},
    "eagle": {"model": "yuhuili/EAGLE-LLaMA3-Instruct-8B", "draft_tensor_parallel_size": 1,
              "num_speculative_tokens": 2, "method": "eagle"},
    "eagle3": {"model": "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3",
               "draft_tensor_parallel_size": 1, "num_speculative_tokens": 2, "method": "eagle3"},
    "eagle3-as-eagle": {"model": "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3",
                        "draft_tensor_parallel_size": 1, "num_speculative_tokens": 2, "method": "eagle"},
    "mtp": {"method": "mtp", "num_speculative_tokens": 1},
    "pard": {"model": "amd/PARD-Qwen3-0.6B", "num_speculative_tokens": 12, "method": "draft_model",
             "parallel_drafting": True},
    "dynamic-sd": {"method": "eagle", "model": "yuhuili/EAGLE-LLaMA3.1-Instruct-8B",
                   "num_speculative_tokens": 3,
                   "num_speculative_tokens_per_batch_size": [[1, 64, 3], [65, 128, 1], [129, 512, 0]]},
    "fly": {"method": "draft_model", "model": "Qwen/Qwen3-0.6B", "num_speculative_tokens": 5,
            "rejection_sample_method": "fly", "fly_window_size": 3, "fly_entropy_threshold": 0.3},
    "dynamic-sd-adaptive": {"method": "ngram", "num_speculative_tokens": 3, "adaptive_verification": True},
    "synthetic-rate-docs": {"method": "ngram", "num_speculative_tokens": 3,
                            "rejection_sample_method": "synthetic", "synthetic_acceptance_rate": 0.5},
    "strict-docs": {"method": "ngram", "num_speculative_tokens": 3, "rejection_sample_method": "strict"},
    "max-model-len-hyphen": {"method": "ngram", "num_speculative_tokens": 3, "max-model-len": 2000},
}


def docs_cases():
    return [entry(f"docs:{k}", _j(v), "docs",
                  target=MTP_TARGET if k == "mtp" else "target-llama") for k, v in DOCS_EXAMPLES.items()]


def build_corpus(cls, repo: Path, shared: Path | None, other_fields=()):
    """The whole corpus for the vLLM whose ``SpeculativeConfig`` is ``cls``; ids unique."""
    parts = (collected_cases(repo, shared) + docs_cases() + method_cases(cls) + field_cases(cls)
             + key_cases(cls, other_fields) + schedule_cases() + syntax_cases() + target_cases())
    seen, out = set(), []
    for e in parts:
        if e["id"] in seen:
            continue
        seen.add(e["id"])
        out.append(e)
    return out
