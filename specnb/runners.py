"""Which vLLM model runner serves a speculative method: the one home of vLLM 0.33's
``VllmConfig.use_v2_model_runner`` rule for speculative decoding, in the lowest layer, because
it decides what a replay steps (:mod:`specnb.replay`: Model Runner V2's n-gram kernel or V1's
CPU proposer), what a serve line says (:mod:`specnb.vllm.schedule`, :mod:`specnb.advise.plan`)
and what the simulator charges (:mod:`specnb.simulate.host`); also what vLLM refuses to start
(:func:`runner_refusal`) and which methods the V1 runner overlaps with async scheduling
(:func:`v1_async_incompat`). Imports nothing.
"""

from __future__ import annotations

__all__ = ["RUNNERS", "V2_UNSUPPORTED_METHODS", "V1_UNSUPPORTED_METHODS",
           "ASYNC_COMPATIBLE_METHODS", "model_runner", "runner_refusal", "runner_env", "forced_env",
           "v1_async_incompat"]

#: The model runners, as specnb names them: vLLM's ``VLLM_USE_V2_MODEL_RUNNER`` = 1 / 0.
RUNNERS = ("v2", "v1")

#: The methods Model Runner V2 does not run: vLLM 0.33
#: ``VllmConfig._get_v2_model_runner_unsupported_features`` ("speculative method 'suffix'"),
#: so ``use_v2_model_runner`` picks V1 for them unless VLLM_USE_V2_MODEL_RUNNER is set, and
#: with VLLM_USE_V2_MODEL_RUNNER=1 ``_validate_v2_model_runner`` refuses to start ("Model
#: Runner V2 does not yet support: speculative method 'suffix'").
V2_UNSUPPORTED_METHODS = frozenset({"suffix", "custom_class"})


#: The methods Model Runner V1 does not run: vLLM 0.33
#: ``VllmConfig._get_v1_model_runner_unsupported_features`` ("dspark speculative decoding"),
#: so with VLLM_USE_V2_MODEL_RUNNER=0 ``_validate_v1_model_runner`` refuses to start ("Model
#: Runner V1 does not support: dspark speculative decoding").
V1_UNSUPPORTED_METHODS = frozenset({"dspark"})

#: Draft methods vLLM 0.33's V1 model runner runs under async scheduling
#: (``vllm/config/vllm.py`` ``VllmConfig.__post_init__``: ``EagleModelTypes`` (eagle, eagle3,
#: extract_hidden_states, the MTP types, dflash), ``NgramGPUTypes`` (ngram_gpu),
#: ``draft_model``, ``dspark``); any other method (``ngram``, ``suffix``, ``custom_class``)
#: sets ``v1_async_sched_incompat`` (:func:`v1_async_incompat`). An MTP type (``*_mtp``)
#: counts as ``mtp``.
ASYNC_COMPATIBLE_METHODS = ("eagle", "eagle3", "extract_hidden_states", "mtp", "dflash",
                            "ngram_gpu", "draft_model", "dspark")

_ENV = "VLLM_USE_V2_MODEL_RUNNER"


def _env_flag(env, name):
    """vLLM's ``maybe_convert_bool`` (``envs.py``): unset -> None, else ``bool(int(value))``;
    a value that is not an integer (``true``, ``yes``, empty) raises ValueError, as in vLLM."""
    value = (env or {}).get(name)
    if value is None:
        return None
    return bool(int(str(value)))


def runner_refusal(method: str | None, env=None) -> tuple[str, str] | None:
    """Why vLLM 0.33 refuses to start speculative ``method`` in the environment ``env`` (the
    line's ``NAME=value`` words), as ``(code, reason)`` (the reason quotes vLLM's error);
    None when the runner rule lets it start.

    Codes: ``v2-runner-env-not-integer`` (VLLM_USE_V2_MODEL_RUNNER not an integer:
    ``envs.py`` reads it with ``maybe_convert_bool`` = ``bool(int(value))``, and
    ``VllmConfig.use_v2_model_runner`` raises "invalid literal for int()"),
    ``v2-runner-unsupported-method`` (``=1`` with a method of :data:`V2_UNSUPPORTED_METHODS`:
    ``_validate_v2_model_runner``), ``v1-runner-unsupported-method`` (``=0`` with a method of
    :data:`V1_UNSUPPORTED_METHODS`: ``_validate_v1_model_runner``)."""
    value = (env or {}).get(_ENV)
    try:
        forced = _env_flag(env, _ENV)
    except ValueError:
        return ("v2-runner-env-not-integer",
                f"{_ENV}={value!r} is not an integer (envs.py reads it with "
                "maybe_convert_bool, bool(int(value)): \"ValueError: invalid literal for int() "
                f"with base 10: {str(value)!r}\")")
    if forced is True and method in V2_UNSUPPORTED_METHODS:
        return ("v2-runner-unsupported-method",
                f"{_ENV}={value} with method {method!r} (\"Model Runner V2 does not yet "
                f"support: speculative method '{method}'\", "
                "VllmConfig._validate_v2_model_runner)")
    if forced is False and method in V1_UNSUPPORTED_METHODS:
        return ("v1-runner-unsupported-method",
                f"{_ENV}={value} with method {method!r} (\"Model Runner V1 does not "
                f"support: {method} speculative decoding\", "
                "VllmConfig._validate_v1_model_runner)")
    return None


def model_runner(method: str | None, env=None) -> str:
    """The model runner vLLM 0.33 serves a speculative ``method`` with: ``"v1"``, ``"v2"``, or
    ``"refused"`` (vLLM refuses to start: :func:`runner_refusal` says why).

    ``VllmConfig.use_v2_model_runner``: VLLM_USE_V2_MODEL_RUNNER (``env``, the line's
    environment) decides when set (``0`` -> V1, ``1`` -> V2); unset, V2 unless a feature is
    unsupported on it (:data:`V2_UNSUPPORTED_METHODS`). Not modelled: the other features
    that send vLLM to V1 (dual batch overlap, pipeline parallelism with the external
    launcher, a platform without Triton, P-EAGLE parallel drafting, heterogeneous-vocabulary
    draft models: these keep the schedule, their methods being in :data:`specnb.vllm.schedule.V1_SCHEDULE_METHODS`,
    except dual batch overlap with a method outside it)."""
    if runner_refusal(method, env) is not None:
        return "refused"
    forced = _env_flag(env, _ENV)
    if forced is True:
        return "v2"
    if forced is False or method in V2_UNSUPPORTED_METHODS:
        return "v1"
    return "v2"


def v1_async_incompat(method: str | None, env=None, *,
                      disable_padded_drafter_batch: bool = False,
                      pipeline_parallel_size: int = 1) -> str | None:
    """vLLM 0.33's ``v1_async_sched_incompat`` (``VllmConfig.__post_init__``): why the V1
    model runner cannot run async scheduling for this config, in vLLM's words
    (``"suffix-based speculative decoding"``, ``"disable_padded_drafter_batch=True"``,
    ``"pipeline parallelism"``), or None (it can, or the config runs on Model Runner V2, or
    vLLM refuses it anyway: :func:`model_runner`). A method outside
    :data:`ASYNC_COMPATIBLE_METHODS` comes first. With ``--async-scheduling`` vLLM then
    refuses to start ("Async scheduling is not supported by the V1 model runner with ...");
    without it vLLM turns async scheduling off and warns."""
    if model_runner(method, env) != "v1":
        return None
    m = "mtp" if isinstance(method, str) and method.endswith("_mtp") else method
    if m is not None and m not in ASYNC_COMPATIBLE_METHODS:
        return f"{method}-based speculative decoding"
    if m is not None and disable_padded_drafter_batch:
        return "disable_padded_drafter_batch=True"
    if pipeline_parallel_size > 1:
        return "pipeline parallelism"
    return None


def forced_env(runner: str) -> dict:
    """The environment that forces ``runner`` (``"v1"`` / ``"v2"``):
    ``{"VLLM_USE_V2_MODEL_RUNNER": "0"}`` or ``"1"``; ``model_runner(method,
    forced_env(r)) == r`` is whether vLLM 0.33 can serve ``method`` on ``r`` at all."""
    return {_ENV: "1" if runner == "v2" else "0"}


def runner_env(method: str | None, runner: str) -> dict:
    """The environment a server needs so that vLLM 0.33 serves ``method`` on ``runner``
    (``"v1"`` / ``"v2"``): ``{}`` when that is its default, else :func:`forced_env`."""
    return {} if model_runner(method) == runner else forced_env(runner)
