"""Render a ``speculative_config`` for the three places vLLM reads it.

* :func:`serve_command`: ``vllm serve <model> --speculative-config '<json>'``, quoted for a POSIX
  shell with :func:`shlex.quote`;
* :func:`yaml_config`: a ``vllm serve --config FILE.yaml`` file with a nested mapping (vLLM's
  docs ask for that, not an escaped JSON string), written by PyYAML's ``safe_dump``;
* :func:`python_snippet`: ``LLM(model=..., speculative_config={...})``.

Rendering does not check the config against vLLM's rules: build it with
:func:`specnb.vllm.speculative_config` or check it with
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


def serve_command(config: dict, model: str = "<target-model>", *, extra_args=()) -> str:
    """The ``vllm serve`` command line for ``config``, quoted for a POSIX shell.

    ``vllm serve MODEL --speculative-config 'JSON' [EXTRA...]``: the JSON is compact
    ``json.dumps`` output (", " and ": " separators, key order kept) and every word goes
    through :func:`shlex.quote`, so quotes, ``$`` or spaces in values survive the shell.
    ``shlex.split`` of the result gives back the JSON exactly.

    Parameters
    ----------
    config : dict of JSON values
    model : str
        The target model (positional argument of ``vllm serve``).
    extra_args : iterable of str
        Further arguments, each quoted.

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
    return " ".join(shlex.quote(w) for w in words)


def _dumper():
    """A SafeDumper writing mappings as blocks and lists in flow style (``[1, 64, 3]``)."""
    import yaml

    class _Dumper(yaml.SafeDumper):
        pass

    _Dumper.add_representer(list, lambda d, v: d.represent_sequence(
        "tag:yaml.org,2002:seq", v, flow_style=True))
    return _Dumper


def yaml_config(config: dict, model: str | None = None) -> str:
    """A ``vllm serve --config FILE.yaml`` file holding ``config`` as a nested mapping.

    vLLM's docs ask for a nested mapping, not an escaped JSON string; vLLM's
    ``FlexibleArgumentParser.load_config_file`` (``vllm/utils/argparse_utils.py`` @
    ``00da11e3``) passes a nested mapping on as ``--speculative-config <json>``. Written by
    PyYAML's safe dumper (key order kept, mappings as blocks, lists in flow style, non-ASCII
    escaped: PyYAML mangles U+0085 when it writes Unicode as is), after a comment line;
    ``yaml.safe_load`` of the result gives back ``{"model": model, "speculative-config":
    config}`` (``model`` only when given), with lists as lists.

    Parameters
    ----------
    config : dict of JSON values
    model : str or None
        The target model, written as ``model:`` (vLLM accepts it in the config file).

    Raises
    ------
    TypeError, ValueError
        ``config`` not a dict of JSON values; empty ``model``.
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
    """Python code that starts vLLM offline with ``LLM(model=..., speculative_config={...})``.

    Values are written with :func:`repr` (``True``/``False``/``None``), one key per line;
    :func:`ast.literal_eval` of the dict part gives back ``config``.

    Raises
    ------
    TypeError, ValueError
        ``config`` not a dict of JSON values; empty ``model``.
    """
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
