"""Render a ``speculative_config`` for the three places vLLM reads it: :func:`serve_command`,
:func:`yaml_config` (``vllm serve --config``), :func:`python_snippet` (``LLM(...)``). Rendering
checks no vLLM rule: build with :func:`specnb.vllm.speculative_config` or check with
:func:`specnb.vllm.check_speculative_config`.
"""

from __future__ import annotations

import json
import shlex

from .._json import plain

__all__ = ["serve_command", "yaml_config", "python_snippet"]


def _as_mapping(config, name="config") -> dict:
    if not isinstance(config, dict):
        raise TypeError(f"{name} must be a dict, got {type(config).__name__}")
    for k in config:
        if not isinstance(k, str):
            raise ValueError(f"{name} keys must be strings, got {k!r}")
    config = plain(config)  # numpy numbers -> the equal Python numbers, tuples -> lists
    try:
        json.dumps(config, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must hold JSON values only (str, int, float, bool, None, "
                         f"list, dict; no NaN/inf): {exc}") from None
    return config


def _check_model(model, name="model"):
    if not isinstance(model, str) or not model.strip():
        raise ValueError(f"{name} must be a non-empty string (the target model), got {model!r}")
    return model


def serve_command(config: dict, model: str = "<target-model>", *, extra_args=(),
                  env=None) -> str:
    """The ``vllm serve`` command line for ``config``, quoted for a POSIX shell.

    ``[NAME=value ...] vllm serve MODEL --speculative-config 'JSON' [EXTRA...]`` (``config``: a
    dict of JSON values; ``model``: the target; ``extra_args``: further words; ``env``: a
    mapping of environment variables the server needs, e.g. ``{"VLLM_USE_V2_MODEL_RUNNER":
    "0"}``, written before the command as ``specnb vllm check`` reads them): the JSON is
    ``json.dumps`` output (key order kept) and every word goes through :func:`shlex.quote`, so
    ``shlex.split`` of the result gives back the JSON exactly.

    Raises
    ------
    TypeError, ValueError
        ``config`` not a dict of JSON values (no NaN/inf); empty ``model``; ``extra_args`` a
        single string (give a list of words, e.g. ``shlex.split("--port 8001")``).
    """
    config = _as_mapping(config)
    _check_model(model)
    if isinstance(extra_args, (str, bytes)):
        raise TypeError(f"extra_args must be a list of words, not one string (it would be "
                        f"split into characters); got {extra_args!r}, use "
                        f"shlex.split({extra_args!r})")
    words = ["vllm", "serve", model, "--speculative-config",
             json.dumps(config, allow_nan=False), *map(str, extra_args)]
    pre = [f"{k}={shlex.quote(str(v))}" for k, v in (env or {}).items()]
    return " ".join(pre + [shlex.quote(w) for w in words])


def _dumper():
    """A SafeDumper writing mappings as blocks and lists in flow style (``[1, 64, 3]``)."""
    import yaml

    class _Dumper(yaml.SafeDumper):
        pass

    _Dumper.add_representer(list, lambda d, v: d.represent_sequence(
        "tag:yaml.org,2002:seq", v, flow_style=True))
    return _Dumper


def yaml_config(config: dict, model: str | None = None) -> str:
    """A ``vllm serve --config FILE.yaml`` file holding ``config`` (a dict of JSON values) as a
    nested mapping, which ``FlexibleArgumentParser.load_config_file``
    (``vllm/utils/argparse_utils.py`` @ ``00da11e3``) passes on as ``--speculative-config
    <json>``; ``model`` (str or None) written as ``model:``. PyYAML's safe dumper (key order
    kept, lists in flow style, non-ASCII escaped: PyYAML mangles U+0085 otherwise), after a
    comment line; ``yaml.safe_load`` gives back ``{"model": model, "speculative-config":
    config}`` (``model`` only when given). Raises TypeError, ValueError for a ``config`` not a
    dict of JSON values or an empty ``model``.
    """
    import yaml

    config = _as_mapping(config)
    doc = {}
    if model is not None:
        doc["model"] = _check_model(model)
    doc["speculative-config"] = config
    body = yaml.dump(doc, Dumper=_dumper(), sort_keys=False, default_flow_style=False,
                     allow_unicode=False, width=10 ** 6)
    return "# vllm serve --config this.yaml  (nested mapping, not an escaped JSON string)\n" + body


def python_snippet(config: dict, model: str = "<target-model>") -> str:
    """Python code that starts vLLM offline with ``LLM(model=..., speculative_config={...})``:
    values with :func:`repr`, one key per line (:func:`ast.literal_eval` of the dict part gives
    back ``config``). Raises TypeError, ValueError as :func:`yaml_config`."""
    config = _as_mapping(config)
    _check_model(model)
    body = "".join(f"        {k!r}: {v!r},\n" for k, v in config.items())
    return ("from vllm import LLM\n\n"
            "llm = LLM(\n"
            f"    model={model!r},\n"
            "    speculative_config={\n"
            f"{body}"
            "    },\n"
            ")\n")
