"""L3: advice built on the model (:mod:`specnb.serving`) and the vLLM contract
(:mod:`specnb.vllm`).

The face. Used by ``specnb plan`` and notebook 09: :func:`serving_plan` -> :class:`Plan`
(grid -> gamma per batch -> schedule -> config -> serve line + coded notes); by the README and
notebook 09: :func:`plan_schedule`, :func:`setup_config`, :func:`schedule_config`,
:func:`schedule`, :func:`schedule_gammas` (all from :mod:`specnb.advise.plan`).
"""

from .plan import (Plan, plan_schedule, schedule, schedule_config, schedule_gammas, schedule_of,
                   serving_plan, setup_config)

__all__ = ["Plan", "serving_plan", "plan_schedule", "schedule", "schedule_gammas", "schedule_of",
           "schedule_config", "setup_config"]
