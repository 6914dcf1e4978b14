"""A continuous-batching engine simulated with and without speculation (L2.5: above
:mod:`specnb.serving`, below :mod:`specnb.advise`): vLLM V1's scheduler rules, step times from
the serving model's mixed step, acceptance drawn from rates or an acceptance profile. Pure
numpy. Reports what ``vllm bench serve --save-result`` would write, per policy.

workload
    :class:`Workload`, :func:`synthetic` (``vllm bench serve``'s random lengths and Poisson /
    gamma arrivals, or a closed loop), :func:`from_log` (a JSON-lines request log).
acceptance
    :func:`acceptance` -> :class:`Acceptance` (tau at a gamma, alpha, per-position rates, an
    acceptance profile; n-gram's proposal rate).
engine
    :func:`engine_config` (vLLM's defaults by GPU and usage), :func:`default_batch_limits`,
    :func:`kv_blocks`, :func:`policy` -> :class:`Policy` (off, static k, vLLM's per-batch
    schedule, disable_by_batch_size), :func:`min_request_steps` (a floor on a run's work),
    :func:`run` -> :class:`Trace`.
host
    :func:`host_cost` -> :class:`HostCost`, :func:`ngram_host_ms` (vLLM's CPU n-gram
    proposer's time between two forwards, V1 and V0), :func:`sync_host_ms` (the host time a
    step pays in series when the method turns vLLM V1's async scheduling off).
result
    :func:`bench_result` (the bench-format dict).

:func:`simulate` runs several policies on one load; :class:`Simulation` holds the results
and :meth:`Simulation.compare` the on / off ratios and the verdict for a goal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .acceptance import Acceptance, acceptance
from .engine import (EngineConfig, Policy, Trace, default_batch_limits, engine_config,
                     kv_blocks, min_request_steps, policy, run, v0_engine_config)
from .host import HostCost, host_cost, ngram_host_ms, sync_host_ms
from .result import bench_result
from .workload import Workload, from_log, synthetic

__all__ = ["Workload", "synthetic", "from_log", "Acceptance", "acceptance", "EngineConfig",
           "engine_config", "v0_engine_config", "default_batch_limits", "kv_blocks", "Policy", "policy",
           "min_request_steps", "Trace", "run", "HostCost", "host_cost", "ngram_host_ms",
           "sync_host_ms", "bench_result", "Simulation", "simulate", "best_policy", "GOALS"]

#: What a goal compares: latency by mean TPOT (on / off below 1 - 5 % pays), throughput by
#: output tokens per second (above 1 + 5 % pays); within 5 % "within noise"
#: (:data:`specnb.limits.RATIO_NOISE`, bench's rule).
GOALS = ("latency", "throughput")


@dataclass
class Simulation:
    """Results of :func:`simulate`: ``results`` (policy name -> bench-format dict, in the
    order run), ``traces`` (policy name -> :class:`Trace`), ``config`` (the
    :class:`EngineConfig`), ``acceptance`` (its description)."""

    results: dict
    traces: dict
    config: EngineConfig
    acceptance: str = ""

    def compare(self, on: str | None = None, goal: str = "latency") -> dict:
        """The ratios of policy ``on`` (default: the best speculating policy for the goal; a
        schedule only when it beats the best static k by more than the measured schedule tax)
        to ``off``: ``output_throughput_ratio``, ``tpot_ratio``, ``ttft_ratio`` (on / off)
        and per policy the same with a ``verdict`` (pays / does not pay / within noise for the goal, by bench's 5 % band);
        ``tpot_ratio`` is None when no request decodes a second token.

        Raises
        ------
        ValueError
            no ``off`` run, no speculating run, an unknown policy or goal; goal latency
            when TPOT is undefined (every output 1 token).
        """
        from .. import _check

        _check.choice("goal", goal, GOALS)
        if "off" not in self.results:
            raise ValueError("compare needs the off policy among the runs")
        off = self.results["off"]
        rows = {}
        for name, r in self.results.items():
            if name == "off":
                continue
            # TPOT is undefined when every output is 1 token (no decode step): None, and
            # the latency goal cannot be judged.
            tpot = (r["mean_tpot_ms"] / off["mean_tpot_ms"] if off["mean_tpot_ms"] > 0
                    else None)
            if tpot is None and goal == "latency":
                raise ValueError("TPOT undefined for 1-token outputs (no request decodes a "
                                 "second token): give output lengths of 2 or more, or goal "
                                 "throughput")
            ratios = {"output_throughput_ratio": r["output_throughput"] / off["output_throughput"],
                      "tpot_ratio": tpot,
                      "ttft_ratio": r["mean_ttft_ms"] / off["mean_ttft_ms"]}
            from ..limits import better  # bench's noise band, one rule (T8a-07)

            who = (better(ratios["tpot_ratio"], True) if goal == "latency"
                   else better(ratios["output_throughput_ratio"], False))
            rows[name] = dict(ratios, verdict={"on": "pays", "off": "does not pay"}.get(
                who, "within noise"))
        if not rows:
            raise ValueError("compare needs a speculating policy among the runs")
        if on is None:
            on = best_policy(rows, goal)
        if on not in rows:
            raise ValueError(f"no policy {on!r} among the runs ({', '.join(rows)})")
        return dict(rows[on], on=on, goal=goal, policies=rows)


def best_policy(rows: dict, goal: str = "latency") -> str:
    """The best speculating policy for the goal (``rows``: policy name -> ``tpot_ratio`` and
    ``output_throughput_ratio`` on / off, as :meth:`Simulation.compare` gives them; static
    policies are named ``k=N``); a schedule policy (``schedule``,
    ``disable_by_batch_size``: both are served as vLLM's schedule) only when it beats the best
    static k by more than the smallest measured cost of turning the schedule on
    (:func:`specnb.vllm.schedule.schedule_tax`), which the simulated steps do not include."""
    from ..vllm.schedule import schedule_tax

    tax = min(on / off for _, off, on in schedule_tax()) - 1.0
    score = {n: (r["tpot_ratio"] if goal == "latency" else -r["output_throughput_ratio"])
             for n, r in rows.items()}
    on = min(rows, key=score.get)
    static = [n for n in rows if n.startswith("k=")]
    if on in ("schedule", "disable_by_batch_size") and static:
        alt = min(static, key=score.get)
        taxed = score[on] * (1 + tax) if goal == "latency" else score[on] / (1 + tax)
        if taxed >= score[alt]:
            on = alt
    return on


def simulate(st, workload: Workload, policies, *, acceptance: Acceptance | None = None,
             config: EngineConfig | None = None, seed: int = 0,
             off_config: EngineConfig | None = None) -> Simulation:
    """Serve ``workload`` on setup ``st`` once per policy (each with the same seed, so that
    the loads are identical and the draws comparable) and return the bench-format results.

    Parameters
    ----------
    st : :class:`specnb.serving.Setup` (its draft drafts for the speculating policies)
    workload : :class:`Workload`
    policies : list of :class:`Policy` (names must differ; put ``policy("off")`` in for the
        on / off ratios)
    acceptance : :class:`Acceptance` for the speculating policies
    config : :class:`EngineConfig` (default :func:`engine_config` of the setup)
    seed : int >= 0, the draws' seed
    off_config : :class:`EngineConfig` for the ``off`` policy where it differs from
        ``config`` (vLLM V0's defaults schedule a plain run of a long-context model with
        chunked prefill and its speculative twin without: :func:`v0_engine_config`); None:
        ``config`` for every policy

    Raises
    ------
    ValueError
        as :func:`run`; two policies with one name; no policies.
    """
    pols = list(policies)
    if not pols:
        raise ValueError("give at least one policy")
    names = [p.name for p in pols]
    if len(set(names)) != len(names):
        raise ValueError(f"policy names must differ, got {names}")
    cfg = engine_config(st) if config is None else config
    results, traces = {}, {}
    from .. import serving as S

    for p in pols:
        use = off_config if (off_config is not None and p.name == "off") else cfg
        tr = run(st, workload, p, acceptance, config=use, seed=seed)
        traces[p.name] = tr
        results[p.name] = bench_result(tr, workload, label=p.name,
                                       model_id=S.model_id(st.target), gamma=p.k)
    desc = acceptance.describe() if acceptance is not None else ""
    return Simulation(results, traces, cfg, desc)


