"""What to do: advice built on the formulas (:mod:`specnb.theory`), the published data
(:mod:`specnb.data`), vLLM's contract (:mod:`specnb.vllm`) and the serving model
(:mod:`specnb.serving`). Every note is a :class:`specnb.notes.Note`: a stable ``code`` beside
its message.

Used by notebooks 06 and 07, ``specnb metrics`` / ``bench`` and the README and docs pages:

Recommend (:mod:`~specnb.advise.recommend`)
    :func:`recommend` -> :class:`Recommendation` (a situation in: workload kind and facts;
    :data:`RULES` with sources); :func:`measure_threshold` (:mod:`~specnb.advise.threshold`:
    peak batch from which to measure first); :data:`WORKLOADS`, :data:`MEASURE_BATCH`,
    :data:`SAMPLING_GAMMA_CAP`
The article's table (:mod:`~specnb.advise.article`)
    :data:`ARTICLE_SITUATIONS`, :func:`recommendation_table`, :func:`compare_with_article`
Evidence (:mod:`~specnb.advise.evidence`)
    :func:`workload_evidence`, :func:`batch_evidence`, :func:`sampling_gamma_evidence`,
    :func:`theorem_vs_measured`, :func:`workload_acceptance`; :func:`thin_window`,
    :data:`MIN_DRAFTS` (when a measured window supports a verdict)
Watch (:mod:`~specnb.advise.watch`)
    :func:`acceptance_advice` (what measured acceptance says to do, as :class:`Note` s),
    :func:`gamma1_verdict` (Corollary 3.9), :func:`theorem_advice` (Theorem 3.8 at a run's
    alpha), :func:`acceptance_length_advice`, :func:`best_draft_length`, :func:`watch_table`
On against off (:mod:`~specnb.advise.bench`)
    :func:`compare_bench` -> :class:`BenchComparison`; :func:`comparability`
Plan (:mod:`~specnb.advise.plan`; used by ``specnb plan``, notebook 09 and docs/serving.md)
    :func:`serving_plan` -> :class:`Plan` (grid -> gamma per batch -> schedule -> config ->
    serve line + coded notes); :func:`plan_schedule`, :func:`setup_config`,
    :func:`schedule_config`, :func:`schedule`, :func:`schedule_gammas`,
    :func:`memory_limit` (a batch whose KV cache does not fit never pays)
"""

from __future__ import annotations

from .article import ARTICLE_SITUATIONS, Situation, compare_with_article, recommendation_table
from .bench import BenchComparison, comparability, compare_bench
from .evidence import (MEASURE_BATCH, MIN_DRAFTS, SAMPLING_GAMMA_CAP, WORKLOADS, batch_evidence,
                       sampling_gamma_evidence, theorem_vs_measured, thin_window,
                       workload_acceptance, workload_evidence)
from .plan import (Plan, memory_limit, plan_schedule, schedule, schedule_config,
                   schedule_gammas, serving_plan, setup_config, setup_serve_line)
from .recommend import RULES, Recommendation, recommend
from .threshold import measure_threshold
from .watch import (acceptance_advice, acceptance_length_advice, best_draft_length,
                    gamma1_verdict, theorem_advice, watch_table)

__all__ = [
    "recommend", "Recommendation", "RULES", "measure_threshold", "WORKLOADS", "MEASURE_BATCH",
    "SAMPLING_GAMMA_CAP",
    "ARTICLE_SITUATIONS", "Situation", "recommendation_table", "compare_with_article",
    "workload_evidence", "batch_evidence", "sampling_gamma_evidence", "theorem_vs_measured",
    "workload_acceptance", "thin_window", "MIN_DRAFTS",
    "acceptance_advice", "gamma1_verdict", "theorem_advice", "acceptance_length_advice",
    "best_draft_length", "watch_table",
    "compare_bench", "BenchComparison", "comparability",
    "Plan", "serving_plan", "plan_schedule", "schedule", "schedule_gammas",
    "schedule_config", "setup_config", "setup_serve_line", "memory_limit",
]
