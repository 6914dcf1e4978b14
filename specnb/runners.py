"""Which vLLM model runner serves a speculative method: the one home of vLLM 0.33's
``VllmConfig.use_v2_model_runner`` rule for speculative decoding, in the lowest layer, because
it decides what a replay steps (:mod:`specnb.replay`: Model Runner V2's n-gram kernel or V1's
CPU proposer), what a serve line says (:mod:`specnb.vllm.schedule`, :mod:`specnb.advise.plan`)
and what the simulator charges (:mod:`specnb.simulate.host`). Imports nothing.
"""

from __future__ import annotations

__all__ = ["RUNNERS", "V2_UNSUPPORTED_METHODS", "model_runner", "runner_env"]

#: The model runners, as specnb names them: vLLM's ``VLLM_USE_V2_MODEL_RUNNER`` = 1 / 0.
RUNNERS = ("v2", "v1")

#: The methods Model Runner V2 does not run: vLLM 0.33
#: ``VllmConfig._get_v2_model_runner_unsupported_features`` ("speculative method 'suffix'"),
#: so ``use_v2_model_runner`` picks V1 for them unless VLLM_USE_V2_MODEL_RUNNER is set, and
#: with VLLM_USE_V2_MODEL_RUNNER=1 ``_validate_v2_model_runner`` refuses to start ("Model
#: Runner V2 does not yet support: speculative method 'suffix'").
V2_UNSUPPORTED_METHODS = frozenset({"suffix", "custom_class"})


def _env_flag(env, name):
    """vLLM's ``maybe_convert_bool`` (``envs.py``): unset -> None, else ``bool(int(value))``;
    a value that is not an integer is read as unset here (vLLM itself fails on it)."""
    value = (env or {}).get(name)
    if value is None:
        return None
    try:
        return bool(int(str(value).strip()))
    except ValueError:
        return None


def model_runner(method: str | None, env=None) -> str:
    """The model runner vLLM 0.33 serves a speculative ``method`` with: ``"v1"``, ``"v2"``, or
    ``"refused"`` (VLLM_USE_V2_MODEL_RUNNER=1 with a method V2 does not run: vLLM refuses to
    start).

    ``VllmConfig.use_v2_model_runner``: VLLM_USE_V2_MODEL_RUNNER (``env``, the line's
    environment) decides when set (``0`` -> V1, ``1`` -> V2); unset, V2 unless a feature is
    unsupported on it (:data:`V2_UNSUPPORTED_METHODS`). Not modelled: the other features
    that send vLLM to V1 (dual batch overlap, pipeline parallelism with the external
    launcher, a platform without Triton, P-EAGLE parallel drafting, heterogeneous-vocabulary
    draft models: these keep the schedule, their methods being in :data:`specnb.vllm.schedule.V1_SCHEDULE_METHODS`,
    except dual batch overlap with a method outside it)."""
    forced = _env_flag(env, "VLLM_USE_V2_MODEL_RUNNER")
    if forced is True:
        return "refused" if method in V2_UNSUPPORTED_METHODS else "v2"
    if forced is False or method in V2_UNSUPPORTED_METHODS:
        return "v1"
    return "v2"


def runner_env(method: str | None, runner: str) -> dict:
    """The environment a server needs so that vLLM 0.33 serves ``method`` on ``runner``
    (``"v1"`` / ``"v2"``): ``{}`` when that is its default, else
    ``{"VLLM_USE_V2_MODEL_RUNNER": "0"}`` (V1) or ``"1"`` (V2)."""
    if model_runner(method) == runner:
        return {}
    return {"VLLM_USE_V2_MODEL_RUNNER": "1" if runner == "v2" else "0"}
