"""Will speculation pay at my batch size and context length? A step-time model of speculative
decoding on a GPU, by batch size B, context length S and draft length gamma.

The physics (``shared/reference/batch-model.md`` section 1; MagicDec, arXiv 2408.11049): one
forward over B sequences with context S and q query tokens each (q = 1 decoding, q = gamma + 1
verifying) moves every weight once plus B x S x (KV bytes per token), and does about
2 x params FLOPs per query token plus attention, 4 x layers x heads x head_dim FLOPs per query
token per context token. Each part runs at the slower of memory and compute (a roofline with
efficiency factors), plus a fixed cost per step and, under tensor parallelism, two all-reduces
per layer. Speculation pays while ``tau x T_plain > gamma x T_draft + T_verify + overhead``
(MagicDec eq. 2 with a per-step overhead).

This package is the model only (L2): it imports no :mod:`specnb.vllm`. What turns a grid into
vLLM's schedule, config and serve line is :mod:`specnb.advise.plan`.

The face (``from specnb import serving as S``), by module; used by notebook 09 (all but the
calibration internals), ``specnb plan`` (:func:`setup`, :func:`tokens_per_step`,
:func:`calibrate`, :func:`evaluate`, :func:`verdict`, :func:`describe_paying`, through
:mod:`specnb.advise.plan`: :func:`batch_range_grid`, :func:`crossover_of`, :func:`paying_of`,
:func:`max_batch_in_memory`, :func:`context_limit_notes`, :func:`model_id`), notebooks 06 and
08 and ``specnb.vllm.advise`` (:func:`gpu`, :func:`architecture`, :func:`architecture_names`,
:func:`setup`, :func:`crossover_batch`, :func:`max_batch_in_memory`,
:func:`context_limit_notes`, :data:`MAX_BATCH_SEARCH`):

catalogue (``data/gpus.csv``, ``data/model_architectures.csv``; names case-insensitive)
    :func:`gpu` -> :class:`GPU`; :func:`gpu_names`; :func:`architecture` (catalogue name or a
    Hugging Face ``config.json`` path / dict) -> :class:`Architecture`;
    :func:`resolve_architecture` (also the config read); :func:`architecture_names`;
    :func:`ridge_point`; :func:`model_id` (the Hugging Face id or config folder); :data:`DTYPES`;
    :data:`KV_CACHE_DTYPES`, :func:`kv_storage_dtype` (vLLM's ``--kv-cache-dtype``; ``auto``
    stores the activation dtype, bf16 also for fp8 weights); :func:`gpu_alias_note`.
step
    :class:`Efficiency`; :data:`DEFAULT_EFFICIENCY` (SpecDecode-Bench's fitted constants),
    :data:`DEFAULT_HEAD_EFFICIENCY`, :func:`default_efficiency_sources`;
    :func:`step_breakdown` (bytes, FLOPs, times, bound); :func:`step_time_ms`.
setup
    :class:`Draft` / :func:`draft` (``ngram``, ``suffix``, ``eagle``, ``eagle3``, ``mtp``, a
    catalogue name or ``config.json``, ``self``; optional KV budget); :class:`Setup` /
    :func:`setup`; :func:`max_batch_in_memory`; :func:`context_limit_notes` (coded
    :class:`specnb.notes.Note`); :func:`cannot_serve` (nothing fits: the sizes and what to
    change); :data:`DRAFT_METHODS`, :data:`SD_OVERHEAD_MS`.
speedup (arrays broadcast: batch x context x gamma)
    :func:`t_plain_ms`, :func:`t_verify_ms`, :func:`t_draft_ms`, :func:`tokens_per_step`,
    :func:`speedup`, :func:`per_token_latency_ms`, :func:`verdict`; :func:`evaluate` ->
    :class:`Grid` (``.frame()``, ``.best()``); :func:`check_axis`; :func:`best_gamma`;
    :func:`crossover_batch`,
    :func:`paying_batches`, :func:`describe_paying`; :func:`batch_range_grid` with
    :func:`crossover_of` and :func:`paying_of` (one grid, read several ways);
    :data:`NGRAM_DRAFT_FRACTION`, :data:`MAX_BATCH_SEARCH`, :data:`MAX_GRID_CELLS`.
moe, heads, engines (issue 16)
    :class:`MoE`, :class:`MLA`, :func:`experts_touched` (uniform routing: an upper bound),
    :mod:`specnb.serving.moe` (parameter counts, MLA KV bytes, MTP module, MoE configs);
    :class:`HeadShape`, :func:`head_from_config` (EAGLE-1 vs EAGLE-3 from their shapes);
    :class:`EngineProfile`, :func:`engine_profile`, :func:`engine_names`,
    :data:`DEFAULT_ENGINE` (``data/engine_profiles.csv``; fits in
    :mod:`specnb.serving.fit`); :func:`memory_cap` (sequences that fit, with and without
    the draft), :func:`t_engine_ms`, :func:`prefill_ms`, :func:`end_to_end_speedup`;
    :data:`PARTIAL_PROPOSAL_METHODS`, :data:`DEFAULT_GPU_MEMORY_UTILIZATION`; issue 25:
    :class:`EngineStep` (a profile's MoE step costs and CUDA-graph cap),
    :data:`ROUTING_SKEW_RANGE`, :func:`with_routing_skew`; SGLang trees :func:`check_tree`,
    :func:`tree_parts`, :func:`tree_speedup`, :func:`max_tree_tokens`,
    :func:`sglang_tree_shape`; the profile fits in :mod:`specnb.serving.fit`;
    :func:`proposal_rate_from_counters`, :data:`PROPOSAL_RATE_HELP` (M from vLLM's counters;
    :mod:`specnb.serving.workload`).
mixed (continuous batching, for :mod:`specnb.simulate`)
    :func:`mixed_step_ms` (one step's target / draft / engine ms from its per-sequence mix of
    prefill chunks, decode and verify tokens and draft tokens); :class:`MixedStep` (a setup
    prepared for many steps).
calibrate
    :func:`read_measurements` (CSV ``role, batch_size, context, query_tokens, ms``);
    :func:`calibrate` -> :class:`Calibration` (``.setup``, ``.report``, ``.notes``);
    :func:`predict_measurements`; :data:`MEASURED_COLUMNS`, :data:`OVERLAP_GRID`,
    :data:`FIT_EFFICIENCY_RANGE`; ``vllm bench serve`` runs (:data:`BENCH_COLUMNS`, read by
    :func:`specnb.vllm.bench_points`): :func:`calibrate_bench` -> :class:`BenchCalibration`
    (``.report``, ``.predict(concurrencies)``), :func:`predict_bench`, :data:`BENCH_FIT`;
    :func:`published_bench_results` (published sweeps as bench results, :data:`PUBLISHED_SWEEPS`).
reference (``data/magicdec_steps.csv``, EAGLE-3 Tables 3 and 5, ``data/moe_plain_steps.csv``)
    :data:`MAGICDEC_TABLES`, :data:`MAGICDEC_SNAPKV_BUDGET`, :func:`magicdec_table`,
    :func:`magicdec_setup`, :func:`table_measurements`, :func:`predict_table`,
    :func:`fit_and_predict`; :data:`EAGLE3_BATCH_TABLES`, :func:`batch_table_comparison`;
    published plain MoE steps: :func:`moe_plain_steps`, :func:`plain_step_comparison`,
    :func:`calibrated_on_plain_steps`, :func:`routing_skew_from_plain_steps`; published
    batch-1 plain steps of dense targets on other GPUs (``data/gpu_plain_steps.csv``):
    :func:`gpu_plain_steps`, :func:`layer_fixed_from_plain_steps`; this project's
    H200 step times calibrated short to long:
    :func:`measured_context_split`, :data:`MEASURED_KV_FLOOR_FIT`.

Units: times in milliseconds (``_ms``), bytes in bytes, FLOP/s and bytes/s in SI units.
Scalars give Python floats; arrays broadcast with numpy's rules.
"""

from __future__ import annotations

from .bench_calibrate import (BENCH_COLUMNS, BENCH_FIT, PUBLISHED_SWEEPS, BenchCalibration,
                              calibrate_bench, predict_bench, published_bench_results)
from .calibrate import (FIT_EFFICIENCY_RANGE, MEASURED_COLUMNS, OVERLAP_GRID, Calibration,
                        calibrate, predict_measurements, read_measurements)
from .catalogue import (DTYPES, GPU, KV_CACHE_DTYPES, Architecture, architecture,
                        checkpoint_dtype_of,
                        architecture_names, gpu, gpu_alias_note, gpu_names, kv_storage_dtype,
                        model_id, published_active_params, resolve_architecture,
                        ridge_point, weight_bytes_of)
from .engines import DEFAULT_ENGINE, EngineProfile, with_routing_skew
from .engines import profile as engine_profile
from .engines import profile_names as engine_names
from .heads import HeadShape, head_from_config
from .mixed import MixedStep, mixed_step_ms
from .moe import MLA, ROUTING_SKEW_RANGE, EngineStep, MoE, experts_touched
from .workload import PROPOSAL_RATE_HELP, proposal_rate_from_counters
from .reference import (EAGLE3_BATCH_TABLES, MAGICDEC_SNAPKV_BUDGET, MAGICDEC_TABLES,
                        batch_table_comparison, calibrated_on_plain_steps, fit_and_predict,
                        gpu_plain_steps, layer_fixed_from_plain_steps,
                        MEASURED_KV_FLOOR_FIT, magicdec_setup, magicdec_table,
                        measured_context_split, moe_plain_steps,
                        plain_step_comparison, predict_table,
                        routing_skew_from_plain_steps, table_measurements)
from .setup import (DEFAULT_GPU_MEMORY_UTILIZATION, DRAFT_METHODS, PARTIAL_PROPOSAL_METHODS,
                    SD_OVERHEAD_MS, Draft, Setup, cannot_serve, check_tensor_parallel, default_draft_dtype,
                    contexts_over_max_positions,
                    context_limit_notes, draft, max_batch_in_memory, max_model_len_that_fits,
                    memory_cap, memory_budget_text, quantization_conflict,
                    read_checkpoint_placeholder, serve_weight_args,
                    serve_weight_dtype, setup)
from .speedup import (MAX_BATCH_SEARCH, MAX_GRID_CELLS, NGRAM_DRAFT_FRACTION, Grid,
                      batch_range_grid, best_gamma, check_axis, check_tree, crossover_batch,
                      crossover_of, describe_paying, end_to_end_speedup, evaluate,
                      paying_batches, paying_of, per_token_latency_ms, prefill_ms, speedup,
                      multi_token_note, t_draft_ms, t_engine_ms, t_plain_ms, t_verify_ms,
                      tokens_per_step, tree_parts, tree_speedup, verdict, max_tree_tokens,
                      sglang_tree_shape, SGLANG_TREE_SOURCE)
from .step import (DEFAULT_EFFICIENCY, DEFAULT_HEAD_EFFICIENCY, Efficiency,
                   default_efficiency_sources, step_breakdown, step_time_ms)

__all__ = [
    "GPU", "Architecture", "Efficiency", "Draft", "Setup", "Grid", "Calibration",
    "checkpoint_dtype_of", "weight_bytes_of", "quantization_conflict", "serve_weight_args", "serve_weight_dtype", "max_model_len_that_fits",
    "read_checkpoint_placeholder",
    "contexts_over_max_positions", "default_draft_dtype", "memory_budget_text",
    "DEFAULT_EFFICIENCY", "DEFAULT_HEAD_EFFICIENCY", "DTYPES", "DRAFT_METHODS",
    "SD_OVERHEAD_MS", "NGRAM_DRAFT_FRACTION", "MAX_BATCH_SEARCH", "MAX_GRID_CELLS",
    "gpu", "gpu_names", "architecture", "resolve_architecture", "architecture_names",
    "ridge_point", "model_id", "KV_CACHE_DTYPES", "kv_storage_dtype", "gpu_alias_note",
    "step_breakdown", "step_time_ms",
    "draft", "setup", "max_batch_in_memory", "context_limit_notes", "cannot_serve",
    "multi_token_note",
    "check_tensor_parallel",
    "t_plain_ms", "t_verify_ms", "t_draft_ms", "tokens_per_step", "speedup",
    "per_token_latency_ms", "verdict",
    "evaluate", "check_axis", "best_gamma", "batch_range_grid", "crossover_batch", "crossover_of",
    "paying_batches", "paying_of", "describe_paying",
    "read_measurements", "calibrate", "predict_measurements", "MEASURED_COLUMNS", "OVERLAP_GRID",
    "FIT_EFFICIENCY_RANGE", "default_efficiency_sources",
    "MAGICDEC_TABLES", "MAGICDEC_SNAPKV_BUDGET", "magicdec_table", "magicdec_setup",
    "table_measurements", "predict_table", "fit_and_predict",
    "EAGLE3_BATCH_TABLES", "batch_table_comparison", "moe_plain_steps",
    "plain_step_comparison", "calibrated_on_plain_steps", "routing_skew_from_plain_steps",
    "measured_context_split", "gpu_plain_steps", "layer_fixed_from_plain_steps",
    "MEASURED_KV_FLOOR_FIT",
    "MoE", "MLA", "experts_touched", "HeadShape", "head_from_config", "EngineProfile",
    "engine_profile", "engine_names", "DEFAULT_ENGINE", "memory_cap", "t_engine_ms",
    "prefill_ms", "end_to_end_speedup", "PARTIAL_PROPOSAL_METHODS",
    "DEFAULT_GPU_MEMORY_UTILIZATION", "published_active_params", "PROPOSAL_RATE_HELP",
    "proposal_rate_from_counters",
    "BENCH_COLUMNS", "BENCH_FIT", "BenchCalibration", "calibrate_bench", "predict_bench",
    "PUBLISHED_SWEEPS", "published_bench_results", "MixedStep", "mixed_step_ms",
    "EngineStep", "ROUTING_SKEW_RANGE", "with_routing_skew", "check_tree", "tree_parts",
    "tree_speedup", "max_tree_tokens", "sglang_tree_shape", "SGLANG_TREE_SOURCE",
]
