"""The plan: a serving grid -> the gamma per batch size -> vLLM's
``num_speculative_tokens_per_batch_size`` schedule -> a ``speculative_config`` -> a
``vllm serve`` line, with coded notes (:class:`specnb.notes.Note`).

L3: imports :mod:`specnb.serving` (the model) and :mod:`specnb.vllm` (vLLM's contract: the
one schedule validator, the config builder, the serve line). Used by ``specnb plan``
(:func:`serving_plan`), notebook 09 (:func:`serving_plan`) and docs/serving.md (:func:`plan_schedule`).

:func:`serving_plan` -> :class:`Plan`; the parts: :func:`schedule`, :func:`schedule_gammas`,
:func:`schedule_of`, :func:`plan_schedule`, :func:`schedule_config`, :func:`setup_config`.

Note codes (stable; messages may be reworded): from :func:`setup_config`
``checkpoint-placeholder``, ``mtp-needs-target-layers``, ``self-draft-full-kv``,
``config-file-name``, ``schedule-tax``, ``no-gamma-pays``; from :func:`serving_plan` also
``weights-do-not-fit`` / ``no-sequence-fits`` / ``no-context-within-max-positions``
(:func:`specnb.serving.cannot_serve`: then no config, no serve line and no on/off advice),
``no-advice-over-max-positions`` (some contexts above the target's positions: no verdict
there), ``v0-no-serve-line`` (engine vllm-v0: no V1 schedule or serve line), :func:`setup_serve_line`'s ``fp8-online-quantization``,
``quantized-checkpoint-placeholder``, ``max-model-len-set``, ``max-model-len-capped``,
``max-num-batched-tokens-set`` and
``draft-dtype-not-in-line``,
``schedule-serves-every-context``,
``kv-does-not-fit``, ``no-schedule-for-every-context``, ``kv-cache-dtype``,
``loses-end-to-end``, ``draft-kv-budget-not-in-vllm``,
``dynamic-schedule-disabled-for-method`` (a method whose schedule vLLM drops: one static K,
:func:`static_schedule`), ``max-num-seqs-is-batch`` (the serve line's ``--max-num-seqs`` is
the largest batch size asked, below the most sequences that fit), ``draft-not-smaller`` (a
draft model with as many parameters as the target, or more: swapped flags?), ``moe-fixed-cost`` (a mixture-of-experts target at the default fixed
cost), and :func:`specnb.serving.context_limit_notes`' codes; with an
acceptance profile (:func:`profile_acceptance`) ``profile-context-extrapolated``,
``profile-bucket-empty``,
``profile-no-drafts``, ``mtp-reruns-layer`` (an mtp schedule longer than the target's MTP
layers) and ``profile-mean-draft-length`` (n-gram / suffix: verification charged
at the profile's tokens per draft, :func:`profile_draft_lengths`).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field

import numpy as np

from .. import serving as S
from .. import theory
from .._check import MAX_EXACT_INT
from .._json import records
from ..notes import Note
from ..runners import model_runner, runner_env

__all__ = ["memory_limit", "Plan", "serving_plan", "profile_acceptance", "v0_no_serve_line",
           "check_v0_draft", "V0_DRAFT_METHODS", "sglang_launch", "sglang_launch_line",
           "profile_draft_lengths", "profile_context_notes", "schedule", "schedule_gammas",
           "schedule_of", "static_schedule", "plan_schedule", "schedule_config", "setup_config",
           "setup_serve_line"]


# --------------------------------------------------------------------------- schedule
def schedule(batch_sizes, gammas, *, max_batch: int | None = None) -> list[list[int]]:
    """vLLM's ``num_speculative_tokens_per_batch_size`` from the best gamma per batch size.

    Each batch size's K applies from it up to the next listed batch size - 1; the first range
    starts at 1 (vLLM requires it, so batch sizes below the smallest listed one get its K);
    equal neighbours merge; the last range ends at ``max_batch`` (default: the largest batch
    size). K = 0 means no drafting. Ranges are inclusive and do not overlap.

    Parameters
    ----------
    batch_sizes : 1-D ints >= 1, distinct (any order)
    gammas : 1-D ints >= 0, same length
    max_batch : int >= max(batch_sizes) or None

    Returns
    -------
    list of ``[range_start, range_end, K]``

    Raises
    ------
    ValueError
        unequal lengths, repeated batch sizes, values out of range, max_batch too small.
    """
    from .. import _check

    b = S.check_axis("batch_sizes", batch_sizes, 1)
    k = S.check_axis("gammas", gammas, 0, theory.MAX_GAMMA)
    if b.size != k.size:
        raise ValueError(f"batch_sizes and gammas must have the same length, got {b.size} and "
                         f"{k.size}")
    if np.unique(b).size != b.size:
        raise ValueError("batch_sizes must be distinct, got repeats")
    order = np.argsort(b)
    b, k = b[order], k[order]
    top = int(b[-1]) if max_batch is None else _check.scalar_int("max_batch", max_batch,
                                                                 lo=int(b[-1]))
    out: list[list[int]] = []
    for i, (start, kk) in enumerate(zip(b, k)):
        start = 1 if i == 0 else int(start)
        end = int(b[i + 1]) - 1 if i + 1 < b.size else top
        if out and out[-1][2] == int(kk):
            out[-1][1] = end
        else:
            out.append([start, end, int(kk)])
    return out


def schedule_gammas(grid: S.Grid):
    """Per batch size of a :class:`specnb.serving.Grid`, the gamma for a schedule that serves
    every context of the grid: the gamma whose worst speedup over the contexts is highest, or
    0 when that worst speedup is not above 1 (the speedup: :attr:`specnb.serving.Grid.deciding`,
    end to end when the grid has input and output lengths). A batch size counts only at the contexts where
    its KV cache fits (``grid.fits``: it cannot run at the others), and gets 0 where it fits at
    none. With one context this is :func:`specnb.serving.best_gamma`. Returns (gammas,
    worst-case speedups), each of shape (B,)."""
    speed = grid.deciding  # the end-to-end figure when the grid has one
    if grid.fits is not None:  # a batch whose KV does not fit at a context never runs there
        speed = np.where(grid.fits, speed, np.inf)
    worst = speed.min(axis=1)  # (B, G)
    i = np.argmax(worst, axis=1)
    sp = worst[np.arange(worst.shape[0]), i]
    pays = np.isfinite(sp) & (sp > 1.0)  # inf: it fits at no context
    return np.where(pays, grid.gammas[i], 0), np.where(pays, sp, 1.0)


def schedule_of(grid: S.Grid) -> list[list[int]]:
    """:func:`plan_schedule` of a :func:`specnb.serving.batch_range_grid`."""
    k, _ = schedule_gammas(grid)
    return schedule(grid.batch_sizes, k)


def static_schedule(grid: S.Grid, dropped: str) -> tuple[list[list[int]], Note]:
    """The one static K for a method whose schedule vLLM drops
    (:func:`specnb.vllm.schedule.schedule_dropped`: suffix on Model Runner V1, trial 7
    T7-05): vLLM drafts ``num_speculative_tokens`` at every batch size, so the plan serves the
    gamma whose mean worst-case speedup (over the contexts, as :func:`schedule_gammas`) over
    the grid's batch sizes that fit is highest, each batch size weighted alike; K = 0 (leave
    speculation off) when that mean is not above 1. Returns (``[[1, max batch, K]]``, note
    ``dynamic-schedule-disabled-for-method`` naming the batch sizes where that K loses)."""
    from ..vllm.schedule import SCHEDULE_DROPPED_CODE

    speed = grid.deciding
    fits = np.ones(speed.shape, bool) if grid.fits is None else np.asarray(grid.fits)
    worst = np.where(fits, speed, np.inf).min(axis=1)  # (B, G)
    runs = np.isfinite(worst)
    mean = np.array([worst[runs[:, j], j].mean() if runs[:, j].any() else 0.0
                     for j in range(worst.shape[1])])
    j = int(np.argmax(mean))
    k = int(grid.gammas[j]) if mean[j] > 1.0 else 0
    top = int(grid.batch_sizes[-1])
    if k == 0:
        return [[1, top, 0]], Note(SCHEDULE_DROPPED_CODE, f"{dropped}; no one K pays on "
                                   f"average over batch sizes 1..{top} (best gamma "
                                   f"{int(grid.gammas[j])}: mean speedup {mean[j]:.2f}), so "
                                   "the plan leaves speculation off")
    lose = ", ".join(f"{a}" if a == e else f"{a}-{e}" for a, e in _runs(
        [int(b) for b, w in zip(grid.batch_sizes, worst[:, j]) if np.isfinite(w) and w <= 1]))
    return [[1, top, k]], Note(
        SCHEDULE_DROPPED_CODE, f"{dropped}; so the plan serves one static K = {k} (the gamma "
        f"with the highest mean speedup over batch sizes 1..{top}, {mean[j]:.2f}, each batch "
        "size weighted alike), not a per-batch-size schedule; "
        + (f"that K loses at batch {lose}" if lose else "it pays at every batch size that "
           "fits"))


def _runs(values):
    """Sorted ints as [start, end] runs of consecutive values."""
    out = []
    for v in values:
        if out and v == out[-1][1] + 1:
            out[-1][1] = v
        else:
            out.append([v, v])
    return out


def plan_schedule(st: S.Setup, contexts, gammas, *, max_batch: int, alpha=None, tau=None,
                  acceptance_rates=None) -> list[list[int]]:
    """The ``num_speculative_tokens_per_batch_size`` schedule for batch sizes 1..max_batch:
    the model on every integer batch size, :func:`schedule_gammas` over ``contexts``, then
    :func:`schedule`. Every K is one of ``gammas`` or 0. max_batch: 1 to
    :data:`specnb.serving.MAX_BATCH_SEARCH` (ValueError outside); the schedule stops at the
    fewest sequences that fit in memory at any context (:func:`memory_limit`)."""
    limit = memory_limit(st, contexts, max_batch)
    return schedule_of(S.batch_range_grid(st, contexts, gammas, limit, alpha=alpha,
                                          tau=tau, acceptance_rates=acceptance_rates))


def memory_limit(st: S.Setup, contexts, max_batch: int) -> int:
    """``max_batch`` cut at the most sequences whose KV cache fits at any of ``contexts``
    (:func:`specnb.serving.max_batch_in_memory`; a batch that fits at no context never runs,
    so it never pays; one that fits at some contexts is scheduled for those,
    :func:`schedule_gammas`); ``max_batch`` unchanged when not even one sequence fits (the
    weights do not fit: noted apart). max_batch: int >= 1."""
    mb = S.check_axis("max_batch", [max_batch], 1)[0]
    fit = max(int(S.max_batch_in_memory(st, int(c))) for c in np.atleast_1d(contexts))
    return int(min(mb, fit)) if fit >= 1 else int(mb)


# --------------------------------------------------------------------------- config
def schedule_config(sched, method: str, *, model: str | None = None, **options) -> dict | None:
    """A ``speculative_config`` with the schedule, built by
    :func:`specnb.vllm.speculative_config` (so vLLM's other rules are checked):
    ``num_speculative_tokens`` = the largest K, ``num_speculative_tokens_per_batch_size`` =
    the schedule. None when every K is 0 (do not turn speculation on). Turning the schedule on
    has a measured cost even at K = 0 (:func:`specnb.vllm.schedule.schedule_tax`); the feature
    is disabled under data parallelism > 1 (vLLM docs).

    Raises
    ------
    ValueError
        an invalid schedule (:func:`specnb.vllm.validate_schedule`); a config vLLM would
        reject (e.g. eagle without a ``model``).
    """
    from ..vllm import speculative_config, validate_schedule

    rows = [list(r) for r in validate_schedule(sched)]
    kmax = max(r[2] for r in rows)
    if kmax == 0:
        return None
    if all(r[2] == kmax for r in rows):
        return speculative_config(method, kmax, model=model, **options)
    return speculative_config(method, kmax, model=model,
                              num_speculative_tokens_per_batch_size=rows, **options)


def _tax_note() -> Note:
    from ..vllm.schedule import schedule_tax_text

    return Note("schedule-tax", schedule_tax_text() + "; the model does not include it, so "
                "compare against a static num_speculative_tokens; the schedule is disabled "
                "under data parallelism > 1")


def setup_config(st: S.Setup, sched, *, checkpoint: str | None = None,
                 acceptance_profile=None):
    """The vLLM ``speculative_config`` for a setup and a schedule, with notes.

    Method and ``model`` follow the draft: ``ngram`` (with
    :data:`specnb.vllm.NGRAM_OPTIONS`: prompt_lookup_min 2 and max 5, the vLLM docs'
    example), ``suffix``, ``mtp`` (no model; a note that the target checkpoint must carry MTP
    layers), ``eagle`` / ``eagle3`` (``checkpoint``, else the placeholder
    ``<eagle3-checkpoint>`` to replace), a draft model (its Hugging Face id or folder),
    ``self`` (``draft_model`` with the target itself; vLLM has no sparse-KV self-draft, so a
    KV budget cannot be expressed).

    ``acceptance_profile`` (a :class:`specnb.acceptance_profile.AcceptanceProfile`): the
    drafter settings it was replayed with (its ``params``: ``prompt_lookup_*``,
    ``suffix_decoding_*``) replace the defaults, since the profile's tau and proposal rate
    are that drafter's (the one home for ``specnb plan`` and ``specnb simulate``).

    Returns
    -------
    (config or None, list of :class:`specnb.notes.Note`): None when the schedule never drafts
    (K = 0 everywhere). Codes in the module docstring.

    Raises
    ------
    ValueError
        an invalid schedule or a config vLLM would reject.
    """
    from ..vllm import NGRAM_OPTIONS

    d = st.draft
    notes = []
    opts: dict = {}
    model = None
    if d.method == "ngram":
        opts = dict(NGRAM_OPTIONS)
    elif d.kind == "head" and d.method != "mtp":
        model = checkpoint or f"<{d.method}-checkpoint>"
        if checkpoint is None:
            notes.append(Note("checkpoint-placeholder",
                              f"replace <{d.method}-checkpoint> with the {d.method} head "
                              f"trained for {st.target.name}"))
    elif d.method == "mtp" and st.target.mtp_layers is None:  # known 0: refused (T7-10)
        notes.append(Note("mtp-needs-target-layers",
                          f"mtp needs MTP layers in the target checkpoint (DeepSeek-V3, "
                          f"GLM-4.5, MiMo and similar ship them); vLLM cannot add them, so "
                          f"check that {st.target.name} has them before serving this line"))
    elif d.kind == "model":
        model = checkpoint or S.model_id(d.arch)
    elif d.kind == "self":
        model = checkpoint or S.model_id(st.target)
        notes.append(Note("self-draft-full-kv",
                          "vLLM has no sparse-KV self-draft: with method draft_model the "
                          "target drafts for itself with its full KV cache"
                          + (f"; the modelled KV budget {d.kv_budget} is not expressible"
                             if d.kv_budget else "")))
    if d.kv_budget and d.kind != "self":  # the self-draft note above says it already
        notes.append(Note("draft-kv-budget-not-in-vllm",
                          f"vLLM has no setting for a draft KV budget: the serve line runs the "
                          f"{d.method} draft over its whole context, so the figures with the "
                          f"modelled budget of {d.kv_budget} tokens are a sparse-KV engine's "
                          "(MagicDec, StreamingLLM), not this line's; plan without "
                          "--draft-kv-budget for what vLLM will do"))
    if acceptance_profile is not None:
        # the settings the profile was replayed with are the ones to serve
        opts.update({k: v for k, v in acceptance_profile.params.items()
                     if v is not None and (k.startswith("prompt_lookup_")
                                           or k.startswith("suffix_decoding_"))})
    cfg = schedule_config(sched, served_method(d.method, acceptance_profile), model=model,
                          **opts)
    layers = max(1, int(st.target.mtp_layers or 0))
    top_k = max((int(r[2]) for r in sched), default=0) if sched else 0
    if d.method == "mtp" and cfg is not None and top_k > layers:
        notes.append(Note("mtp-reruns-layer",
                          f"num_speculative_tokens {top_k} with {st.target.name}'s "
                          f"{layers} MTP layer{'s' * (layers != 1)}: vLLM warns 'Enabling "
                          "num_speculative_tokens > 1 will run multiple times of forward on "
                          "same MTP layer, which may result in lower acceptance rate'; the "
                          "plan applies one acceptance to every position, so its figures for "
                          f"gamma > {layers} hold only if the rerun layer keeps that "
                          "acceptance: measure it (specnb metrics) before serving them"))
    for a in (st.target, d.arch if d.kind == "model" and checkpoint is None else None):
        if a is not None and a.source.endswith(".json") \
                and os.path.basename(a.source) != "config.json":
            notes.append(Note("config-file-name",
                              f"vLLM loads a model folder's config.json; {a.source} has "
                              f"another name, so the folder {S.model_id(a)} named here must "
                              "hold it as config.json (with the weights)"))
    if cfg is not None and "num_speculative_tokens_per_batch_size" in cfg:
        notes.append(_tax_note())
    if cfg is None:
        notes.append(Note("no-gamma-pays",
                          "no gamma pays at any batch size: leave speculative decoding off"))
    return cfg, notes


def _moe_fixed_cost_note(st) -> Note | None:
    """``moe-fixed-cost``: a mixture-of-experts target at the default fixed cost per forward
    (not calibrated): that cost is a dense Llama-3.1-8B fit, and the published MoE plain steps
    (``data/moe_plain_steps.csv``) sit far from the model at small batch, most for DeepSeek-V3.
    None for a dense target or a calibrated one."""
    if st.target.moe is None or st.target_efficiency != S.DEFAULT_EFFICIENCY:
        return None
    cmp = S.plain_step_comparison()
    first = cmp.loc[cmp.groupby("source_key", sort=False)["batch_size"].idxmin()]
    worst = first.loc[first["gap_ms"].abs().idxmax()]
    return Note("moe-fixed-cost",
                f"{st.target.name} is a mixture-of-experts target: the fixed cost per forward "
                "is the dense Llama-3.1-8B fit's (SpecDecode-Bench), and published MoE plain "
                f"steps sit far from the model at small batch ({worst['source_key']}: "
                f"{worst['model']} on {int(worst['gpus'])} GPUs at batch "
                f"{int(worst['batch_size'])}, {worst['published_ms']:.1f} ms published against "
                f"the model's {worst['model_ms']:.1f} ms; data/moe_plain_steps.csv). A fixed cost "
                "that is too small lets the extra experts a verification touches dominate the "
                "small-batch steps and understates the small-batch gains: calibrate on your "
                "own plain step times (--calibrate) before trusting them")


# --------------------------------------------------------------------------- the plan
@dataclass
class Plan:
    """What :func:`serving_plan` found.

    Attributes
    ----------
    setup : the :class:`specnb.serving.Setup` planned for
    acceptance : the acceptance given (one of alpha, tau, acceptance_rates)
    grid : :class:`specnb.serving.Grid` over the batch sizes, contexts and gammas asked
    best : (gamma, speedup) arrays of shape (B, S), :meth:`Grid.best`
    schedule : ``[[range_start, range_end, K], ...]`` over batch sizes 1..max(batch sizes)
        (the one that serves every context; K = 0 everywhere when it never drafts)
    config : the vLLM ``speculative_config`` (None: leave speculation off)
    serve : the ``vllm serve`` line (None without a config)
    crossover_batch, paying_batches, max_batch_in_memory : one entry per context (int keys)
    displaced : per context, the sequences the draft's weights and KV push out of memory
    max_num_seqs : the serve line's ``--max-num-seqs``: max(batch sizes), cut at the most
        sequences that fit at any context (a batch that fits at none never runs)
    context_notes : :func:`specnb.serving.context_limit_notes` (also first in ``notes``)
    notes : every :class:`specnb.notes.Note`, the context notes first
    cannot_serve : :func:`specnb.serving.cannot_serve`'s note when nothing fits in memory
        or every context is above the target's positions (then ``schedule``, ``config`` and
        ``serve`` are None: no on/off advice), else None
    over_max_positions : the contexts above the target's ``max_position_embeddings``
        (:func:`specnb.serving.contexts_over_max_positions`): no verdict there (their
        batches count as not fitting), and the schedule and serve line are for the others

    Every verdict (``best``, the paying ranges, the crossover, the schedule) reads one figure,
    :attr:`specnb.serving.Grid.deciding`: the end-to-end speedup when input and output
    lengths were given, else the decode speedup.
    """

    setup: S.Setup
    acceptance: dict
    grid: S.Grid
    best: tuple
    schedule: list | None
    config: dict | None
    serve: str | None
    crossover_batch: dict
    paying_batches: dict
    max_batch_in_memory: dict
    context_notes: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    displaced: dict = field(default_factory=dict)
    max_num_seqs: int | None = None
    cannot_serve: Note | None = None
    over_max_positions: list = field(default_factory=list)

    def rows(self, columns=("batch_size", "context", "gamma", "tau", "speedup", "t_plain_ms",
                            "t_verify_ms", "t_draft_ms", "bound", "fits", "t_engine_ms",
                            "speedup_end_to_end")) -> list[dict]:
        """The grid as JSON-ready dicts, one per (batch, context, gamma); a column the grid
        lacks (``speedup_end_to_end`` without input/output lengths) is left out."""
        frame = self.grid.frame()
        columns = [c for c in columns if c in frame.columns]
        return records(frame[columns], nan_to_none=False)


def _without_contexts(grid: S.Grid, contexts) -> S.Grid:
    """``grid`` with every batch at ``contexts`` marked as not fitting: no verdict there
    (:func:`specnb.serving.best_gamma` and the paying ranges skip a batch that does not
    fit), the figures kept."""
    fits = np.ones(grid.speedup.shape, bool) if grid.fits is None else np.array(grid.fits)
    fits[:, np.isin(grid.contexts, list(contexts)), :] = False
    return dataclasses.replace(grid, fits=fits)


#: SGLang's --speculative-algorithm for specnb's draft methods (SGLang's docs: EAGLE-2/3,
#: MTP through EAGLE, a small draft model as STANDALONE, NGRAM); others have no SGLang name.
SGLANG_ALGORITHM = {"eagle3": "EAGLE3", "eagle": "EAGLE", "mtp": "EAGLE",
                    "draft_model": "STANDALONE", "ngram": "NGRAM"}


#: SGLang's default request cap with speculative decoding (EAGLE, EAGLE3, STANDALONE; MTP runs
#: as EAGLE): ``server_args.py`` ``_handle_speculative_decoding`` sets
#: ``max_running_requests = 48`` when unset ("Max running requests is reset to 48 for
#: speculative decoding"; 32 in early-2025 versions), and its CUDA graphs for speculative
#: decoding are captured up to that batch; SGLang's DeepSeek guide: "To enable DeepSeek MTP
#: for large batch sizes (>48) ... Adjust --max-running-requests ... Set --cuda-graph-bs".
SGLANG_SPEC_MAX_RUNNING_REQUESTS = 48


def _length_that_fits(st, contexts):
    """``(top, fits)``: the longest context planned for (None without one) and, when one
    sequence of the target's full positions does not fit beside the weights, the longest
    length that does (:func:`specnb.serving.max_model_len_that_fits`); else 0. The one home of
    the context cap both engines' lines print (vLLM's --max-model-len, SGLang's
    --context-length)."""
    from .. import serving as S

    mp = st.target.max_position_embeddings
    top = None if contexts is None or not np.size(contexts) else int(np.max(contexts))
    fits = 0 if mp is None or top is None or top < 1 or S.max_batch_in_memory(st, mp) >= 1 \
        else S.max_model_len_that_fits(st, mp)
    return top, fits


def sglang_launch_line(st: S.Setup, config: dict | None, *, max_num_seqs: int | None = None,
                       tree: dict | None = None, contexts=None) -> str | None:
    """The line of :func:`sglang_launch` alone (same parameters)."""
    return sglang_launch(st, config, max_num_seqs=max_num_seqs, tree=tree, contexts=contexts)[0]


def sglang_launch(st: S.Setup, config: dict | None, *, max_num_seqs: int | None = None,
                  tree: dict | None = None, contexts=None) -> tuple:
    """``python -m sglang.launch_server`` for a setup and its (vLLM-form) ``config`` and its
    notes: ``(line, notes)`` (the one home: ``specnb plan --engine sglang`` and ``specnb
    simulate --engine sglang``).

    The speculative flags are the tree's when ``tree`` is given (``steps``, ``topk``,
    ``num_draft_tokens``), else the chain of ``config["num_speculative_tokens"]``: topk 1,
    steps + 1 draft tokens; the draft's checkpoint (``config["model"]``) for EAGLE /
    STANDALONE. NGRAM takes neither ``--speculative-num-steps`` nor ``--speculative-eagle-topk``:
    SGLang's ``_handle_ngram`` (``arg_groups/speculative_hook.py`` @ d9ccf6a7) overwrites
    ``speculative_eagle_topk`` with ``--speculative-ngram-max-bfs-breadth`` (default 10: a BFS
    tree of up to 10 branches) and derives the steps, so the chain is
    ``--speculative-ngram-max-bfs-breadth 1 --speculative-num-draft-tokens gamma + 1`` (the
    flags of ``arg_groups/fields/spec.py`` @ 7e997c67; ``min-bfs-breadth`` defaults to 1), note
    ``sglang-ngram-matcher`` (SGLang's n-gram trie is not vLLM's prompt lookup; T7-13).
    The weight dtype as for vLLM (:func:`specnb.serving.serve_weight_args`); ``--tp-size``
    with gpus > 1; ``--max-running-requests`` and ``--cuda-graph-max-bs`` at ``max_num_seqs``
    when it exceeds :data:`SGLANG_SPEC_MAX_RUNNING_REQUESTS` (else SGLang admits at most 48
    requests with speculation on). Memory (T7-03): ``--mem-fraction-static`` when the setup's
    share is not SGLang's own default (:func:`specnb.limits.sglang_mem_fraction_static`),
    else note ``sglang-memory-share`` saying the share planned; ``--context-length
    max(contexts)`` when one sequence of the target's ``max_position_embeddings`` does not fit
    in the KV pool, note ``sglang-context-length-set`` (SGLang starts anyway and caps each
    request at the pool: no refusal as vLLM's), or the longest that fits, note
    ``sglang-context-length-capped``. None (and no notes) when ``config`` is None (nothing
    pays) or the draft method has no SGLang name (:data:`SGLANG_ALGORITHM`)."""
    from .. import limits

    algo = SGLANG_ALGORITHM.get(st.draft.method)
    if config is None or algo is None:
        return None, []
    steps = tree["steps"] if tree else int(config["num_speculative_tokens"])
    topk = tree["topk"] if tree else 1
    ndt = tree["num_draft_tokens"] if tree else steps + 1
    draft = ([] if algo == "NGRAM" or st.draft.method == "mtp" else
             ["--speculative-draft-model-path", config.get("model") or "<draft>"])
    # the weight dtype as for vLLM (SGLang takes --quantization fp8 online, --dtype too)
    model, weight_args, notes = S.serve_weight_args(st.target, st.dtype)
    if algo == "NGRAM":  # topk is --speculative-ngram-max-bfs-breadth's (T7-13)
        from ..vllm import NGRAM_OPTIONS

        window = (f"prompt_lookup_min {NGRAM_OPTIONS.get('prompt_lookup_min')} / max "
                  f"{NGRAM_OPTIONS.get('prompt_lookup_max')} in the request's own tokens")
        spec = ["--speculative-ngram-max-bfs-breadth", str(topk),
                "--speculative-num-draft-tokens", str(ndt)]
        notes.append(Note("sglang-ngram-matcher",
                          "SGLang's NGRAM drafts from its own n-gram trie over the prompts "
                          "and outputs it has seen (--speculative-ngram-max-trie-depth, default "
                          "18; versions of late 2025 had --speculative-ngram-min/max-match-"
                          "window-size 1/12 instead), not vLLM's prompt lookup "
                          f"({window}): an alpha measured on vLLM's n-gram drafter "
                          "need not hold; measure SGLang's accept length"))
    else:
        spec = ["--speculative-num-steps", str(steps), "--speculative-eagle-topk", str(topk),
                "--speculative-num-draft-tokens", str(ndt)]
    parts = ["python", "-m", "sglang.launch_server", "--model-path", model,
             "--speculative-algorithm", algo, *draft, *spec, *weight_args]
    if st.gpus > 1:
        parts += ["--tp-size", str(st.gpus)]
    if max_num_seqs and max_num_seqs > SGLANG_SPEC_MAX_RUNNING_REQUESTS:
        parts += ["--max-running-requests", str(max_num_seqs),
                  "--cuda-graph-max-bs", str(max_num_seqs)]
    own = limits.sglang_mem_fraction_static(st.gpu.device_memory_bytes, st.gpus)
    if st.memory_fraction != own:
        parts += ["--mem-fraction-static", f"{st.memory_fraction:g}"]
    else:
        notes.append(Note("sglang-memory-share",
                          f"memory planned at SGLang's default --mem-fraction-static {own:g} "
                          f"(weights + KV pool) for {st.gpu.name} at tp {st.gpus}, as SGLang "
                          f"computes it at start ({limits.SGLANG_MEMORY_SOURCE}; its prefill "
                          "CUDA-graph, DP-attention and DeepEP reserves left out, so SGLang's "
                          "pool may be somewhat smaller); --gpu-memory-utilization U plans "
                          "another share and puts --mem-fraction-static U in the line"))
    top, fits = _length_that_fits(st, contexts)
    if fits >= 1:
        length = min(top, fits)
        parts += ["--context-length", str(length)]
        notes.append(Note(
            "sglang-context-length-set" if top <= fits else "sglang-context-length-capped",
            f"--context-length {length} ("
            + ("the longest context planned for" if top <= fits else
               f"the longest one sequence fits at: the planned context {top:,} does not")
            + f"): SGLang's KV pool does not hold one sequence of {st.target.name}'s "
            f"{st.target.max_position_embeddings:,} positions; SGLang starts anyway and caps each request at min("
            "context_length, KV pool tokens) - 1 (the scheduler's max_req_len), refusing "
            f"longer ones; up to {fits:,} would fit"))
    return " ".join(parts), notes


#: The specnb drafts vLLM V0 can run, as ``Draft.method`` (vLLM v0.6.3, the V0 the vllm-v0
#: profile and its notes read: ``spec_decode/spec_decode_worker.py``'s ``create_worker``
#: picks ``NGramWorker`` for ``[ngram]``, ``MLPSpeculatorWorker`` / ``MedusaWorker`` by the
#: draft's model_type, else ``MultiStepWorker``: a draft model, EAGLE-1 among them (model_type
#: ``eagle``; at a draft TP above 1 it raises "EAGLE does not support TP > 1 yet", not checked
#: here). No suffix decoding, EAGLE-3, MTP or DFlash proposer exists in it (MTP came to V0 in
#: a later release, not read here); trial 7, T7-07.
V0_DRAFT_METHODS = ("ngram", "eagle", "draft_model")


def check_v0_draft(st: S.Setup) -> None:
    """Refuse a draft vLLM V0 could not run when the engine is ``vllm-v0`` (plan and simulate,
    the one home of the rule): only :data:`V0_DRAFT_METHODS`.

    Raises
    ------
    ValueError
        ``param`` ``draft``: suffix, eagle3, mtp or dflash on vllm-v0.
    """
    from .._check import ParamValueError

    if st.engine.family != "vllm-v0":
        return
    d = st.draft
    allowed = "ngram, eagle (EAGLE-1), a draft model or self (draft_model with the target)"
    if d.method not in V0_DRAFT_METHODS:
        raise ParamValueError(
            f"draft {d.name} on engine vllm-v0: vLLM V0 (read from v0.6.3's spec_decode "
            f"proposers: n-gram, a draft model, EAGLE-1, Medusa, MLP speculator) has no "
            f"{d.name} proposer, so no V0 server runs what would be computed; V0 drafts "
            f"specnb models: {allowed}; or give --engine vllm for {d.name}", "draft")


def v0_no_serve_line(st: S.Setup, tool: str = "plan") -> Note | None:
    """``Note("v0-no-serve-line")`` when the setup's engine is ``vllm-v0`` (the one home of
    the rule, for ``plan`` and ``simulate``, T5-M3 / T6-W3), else None: the figures are V0's,
    while a ``--speculative-config`` line and ``num_speculative_tokens_per_batch_size`` are
    V1's (v0.6.3 takes ``--speculative-model [ngram] --num-speculative-tokens``, and its
    scheduler budget follows the line's --max-model-len), so no line runs what was computed.
    ``tool``: the command to rerun with ``--engine vllm``."""
    if st.engine.name != "vllm-v0":
        return None
    return Note("v0-no-serve-line",
                "the figures are vLLM V0's (engine vllm-v0: batch-expansion scorer, CUDA "
                "graphs up to batch 256, its own draft cost); "
                "num_speculative_tokens_per_batch_size and a --speculative-config line are "
                "V1's (the key from vLLM 0.24.0 on) and would run V1's costs, not these: no "
                + ("schedule or serve line" if tool == "plan" else "serve line (the schedule "
                   "above is the one simulated)")
                + f"; {tool} with --engine vllm for the line to serve on current vLLM")


def plan_runner(method: str, acceptance_profile=None, proposal_rate: float = 1.0) -> str | None:
    """The vLLM model runner a plan's serve line runs the draft on (``"v1"`` / ``"v2"``; None
    for a draft whose runner changes nothing specnb models): an acceptance profile's own
    (what it replayed: T8a-01); else for ``ngram`` V1 when the proposal rate is below 1
    (Model Runner V2's kernel drafts at every step, so M < 1 is V1's CPU proposer); else
    vLLM 0.33's default (:func:`specnb.runners.model_runner`)."""
    m = method
    if m not in S.PARTIAL_PROPOSAL_METHODS:
        return None
    if acceptance_profile is not None and acceptance_profile.runner is not None:
        return acceptance_profile.runner
    if m == "ngram" and acceptance_profile is None and proposal_rate < 1:
        return "v1"
    return model_runner(m)


def served_method(method: str, acceptance_profile=None) -> str:
    """vLLM's method name a plan serves for the draft ``method``: the profile's ``ngram_gpu``
    where it replayed that (on Model Runner V1 a GPU proposer that keeps async scheduling, not
    ngram's CPU one: T9-04), else ``method``."""
    if method == "ngram" and acceptance_profile is not None \
            and acceptance_profile.method == "ngram_gpu":
        return "ngram_gpu"
    return method


def with_sync_host(st: S.Setup, runner: str | None, method: str | None = None):
    """``(setup, note)``: ``st`` charged, per sequence per speculative step, the host time
    that vLLM V1's synchronous scheduling adds where the method turns async scheduling off
    on ``runner`` while the plain run keeps it (:func:`specnb.simulate.host.host_cost`'s
    ``sync_us_per_request``, the simulator's one rule; ``Setup.sync_host_us_per_seq``), with
    note ``v1-sync-scheduling``; ``(st, None)`` where there is none (T9-01). ``method``:
    vLLM's method served (:func:`served_method`; default the draft's)."""
    from ..simulate.host import host_cost

    sync = (host_cost(st, runner=runner, method=method).sync_us_per_request
            if runner is not None else 0.0)
    if sync <= 0:
        return st, None
    return dataclasses.replace(st, sync_host_us_per_seq=sync), Note(
        "v1-sync-scheduling",
        f"{st.draft.method} runs on Model Runner V1, where vLLM 0.33 turns async scheduling off "
        f"for it (config/vllm.py, v1_async_sched_incompat) while the plain run keeps it on: "
        f"every speculative step pays {sync:g} us of host time per sequence in series "
        "(simulate.host.SYNC_HOST_US_PER_REQUEST, from vLLM PR #23914), counted here"
        + (" (V1's CPU n-gram scan, which simulate also charges, is not)"
           if st.draft.method == "ngram" else ""))


def runner_note(method: str, runner: str | None, env: dict) -> Note | None:
    """Note ``model-runner-env`` when the serve line sets ``VLLM_USE_V2_MODEL_RUNNER`` so that
    vLLM serves ``method`` on the runner the figures are for; None when it needs nothing."""
    if not env:
        return None
    return Note("model-runner-env",
                f"{' '.join(f'{k}={v}' for k, v in env.items())} in the serve line: the "
                f"figures are Model Runner {runner.upper()}'s {method} drafts"
                + ((" (the CPU proposer: a draft only where a match is, the earliest "
                    "match)" if method == "ngram" else " (V1's GPU n-gram proposer: the "
                    "earliest match, a draft only where one is; async scheduling kept)")
                   + f", while vLLM 0.33 serves {method} on Model Runner V2 by default, whose "
                   "kernel drafts gamma tokens for every request at every step"
                   if runner == "v1" else ""))


def setup_serve_line(st: S.Setup, config: dict, *, max_num_seqs: int, contexts=None,
                     extra_args=(), runner: str | None = None):
    """The ``vllm serve`` line for a setup and its ``speculative_config``: the one home of
    the setup's flags, which ``specnb plan``, ``specnb simulate`` and the notebooks print.

    ``--max-num-seqs max_num_seqs``; ``--tensor-parallel-size`` with gpus > 1;
    ``--kv-cache-dtype`` when the setup's is not ``auto``; ``--gpu-memory-utilization`` when
    not vLLM's default; the weight dtype (:func:`specnb.serving.serve_weight_args`:
    ``--quantization fp8`` for fp8 on an unquantized checkpoint, a placeholder checkpoint for
    int8 / int4, nothing for a checkpoint already in the dtype); ``--max-model-len
    max(contexts)`` when one sequence of the target's ``max_position_embeddings`` does not fit
    in the KV room (vLLM V1 then refuses to start: ``check_enough_kv_cache_memory``,
    ``vllm/v1/core/kv_cache_planning.py`` v0.33.0), note ``max-model-len-set``, or, when
    not even that context fits, the longest that does
    (:func:`specnb.serving.max_model_len_that_fits`), note ``max-model-len-capped`` (the
    contexts above it are not served);
    ``--max-num-batched-tokens max_num_seqs`` when ``max_num_seqs`` is above vLLM's default
    budget on the GPU (:func:`specnb.simulate.engine.default_batch_limits`; vLLM refuses a
    budget below max_num_seqs), unless ``extra_args`` names the flag, note
    ``max-num-batched-tokens-set``; ``extra_args`` last; ``runner`` (:func:`plan_runner`): the
    model runner the figures are for, ``VLLM_USE_V2_MODEL_RUNNER`` before the line when vLLM
    would not pick it itself (:func:`specnb.runners.runner_env`), note ``model-runner-env``.

    Returns
    -------
    (line, notes): the shell-quoted line (:func:`specnb.vllm.serve_command`) and a list of
    :class:`specnb.notes.Note` (``fp8-online-quantization``,
    ``quantized-checkpoint-placeholder``, ``max-model-len-set``, ``max-model-len-capped``,
    ``max-num-batched-tokens-set``,
    ``draft-dtype-not-in-line``: a draft model or head counted in fp8 / int8 / int4, which vLLM
    loads unquantized unless its checkpoint is).
    """
    from ..vllm import serve_command

    model, weight_args, notes = S.serve_weight_args(st.target, st.dtype)
    d = st.draft
    d_dtype = d.dtype or st.draft_dtype or st.dtype
    if d.kind in ("model", "head") and d.method != "mtp" and d_dtype not in ("bf16", "fp16"):
        # vLLM's SpeculativeConfig.quantization: None = an unquantized draft; only mtp
        # (the target's own layers) takes the target's --quantization (config/speculative.py)
        notes.append(Note("draft-dtype-not-in-line",
                          f"the plan counts the draft {d.name}'s weights in {d_dtype} "
                          "(--draft-dtype), but vLLM loads a draft model or "
                          "head as its checkpoint stores it (speculative_config quantization "
                          "None: unquantized) and does not apply the target's --quantization "
                          "to it; plan with --draft-dtype bf16 for what this line runs, or "
                          "serve a quantized draft checkpoint"))
    args = (["--max-num-seqs", str(int(max_num_seqs))]
            + (["--tensor-parallel-size", str(st.gpus)] if st.gpus > 1 else [])
            + ([] if st.kv_dtype == "auto" else ["--kv-cache-dtype", st.kv_dtype])
            + ([] if st.memory_fraction == S.DEFAULT_GPU_MEMORY_UTILIZATION else
               ["--gpu-memory-utilization", f"{st.memory_fraction:g}"])
            + weight_args)
    from ..simulate.engine import default_batch_limits

    given = {str(a) for a in extra_args}
    budget = default_batch_limits(st.gpu.name)[0]
    if "--max-num-batched-tokens" not in given and max_num_seqs > budget:
        # vLLM never raises its default budget to max_num_seqs and then refuses to start
        args += ["--max-num-batched-tokens", str(int(max_num_seqs))]
        notes.append(Note("max-num-batched-tokens-set",
                          f"--max-num-batched-tokens {int(max_num_seqs)}: vLLM's default budget "
                          f"on {st.gpu.name} is {budget} tokens, below --max-num-seqs "
                          f"{int(max_num_seqs)}, which vLLM's SchedulerConfig refuses at start "
                          "('max_num_batched_tokens ... must be greater than or equal to "
                          "max_num_seqs')"))
    top, fits = _length_that_fits(st, contexts)
    if fits >= 1 and top <= fits:
        args += ["--max-model-len", str(top)]
        notes.append(Note("max-model-len-set",
                          f"--max-model-len {top} (the longest context planned for): one sequence of "
                          f"{st.target.name}'s {st.target.max_position_embeddings:,} positions does not fit in the KV cache "
                          f"room, and vLLM refuses to start without a shorter max_model_len "
                          f"('To serve at least one request with the model's max seq len'); "
                          f"up to {fits:,} would fit; the server refuses longer requests"))
    elif fits >= 1:  # T6-W6: never a max_model_len vLLM refuses
        unserved = sorted({int(c) for c in np.atleast_1d(contexts) if c > fits})
        args += ["--max-model-len", str(fits)]
        notes.append(Note("max-model-len-capped",
                          f"--max-model-len {fits} (the longest context one sequence fits at, "
                          "vLLM's own estimate_max_model_len): at the planned context "
                          + ", ".join(f"{c:,}" for c in unserved) + " not even one sequence's "
                          "KV cache fits, and vLLM refuses to start with that max_model_len "
                          "(check_enough_kv_cache_memory); this line does not serve "
                          + ("that context" if len(unserved) == 1 else "those contexts")
                          + ": the server refuses longer requests"))
    served = config.get("method", d.method) if isinstance(config, dict) else d.method
    env = runner_env(served, runner) if runner is not None else {}
    rn = runner_note(served, runner, env)
    if rn is not None:
        notes.append(rn)
    return serve_command(config, model, extra_args=args + [str(a) for a in extra_args],
                         env=env), notes


def check_profile_method(profile, method: str, noun: str = "plan", verb: str = "plan") -> None:
    """ValueError unless the acceptance ``profile`` replayed the draft ``method`` (ngram_gpu
    counts as ngram): the one rule of plan and simulate (T8a-04)."""
    pm = profile.method.replace("ngram_gpu", "ngram")
    if pm != method:
        raise ValueError(f"the acceptance profile replays {profile.method}, the {noun}'s draft "
                         f"is {method}: {verb} the method the profile measured")


def profile_context_notes(profile, contexts) -> list:
    """``[Note("profile-context-extrapolated", ...)]`` when some of ``contexts`` (tokens) lie
    beyond every step of the profile's log (its ``source.context_range``), else ``[]``: the
    acceptance there is carried over, not measured. ``plan`` and ``simulate`` both say it."""
    seen = (profile.source or {}).get("context_range")
    beyond = sorted({int(c) for c in contexts if seen and c > seen[1]})
    if not beyond:
        return []
    return [Note("profile-context-extrapolated",
                 f"context {', '.join(f'{c:,}' for c in beyond)} "
                 f"{'is' if len(beyond) == 1 else 'are'} beyond every step of the profile's log "
                 f"(contexts {seen[0]}-{seen[1]} tokens): its acceptance there is "
                 "carried over, not measured, and acceptance often falls with context "
                 "(vllm-project/speculators#684); replay a log with such contexts")]


def profile_acceptance(profile, contexts, gammas, *, proposal_rate: bool):
    """tau and the proposal rate M per (context, gamma) from an acceptance profile
    (:mod:`specnb.acceptance_profile`, ``specnb replay --out``): the entry of the context
    bucket holding each context, over the log's task mix.

    Parameters
    ----------
    profile : AcceptanceProfile
    contexts, gammas : ints (every gamma must be one of the profile's)
    proposal_rate : take M from the profile (n-gram / suffix: drafts / steps); else M = 1

    Returns
    -------
    (tau, m, notes): two float arrays of shape (len(contexts), len(gammas)) and the
    :class:`~specnb.notes.Note` list: ``profile-context-extrapolated`` (a context beyond
    every step of the log, from the profile's ``source.context_range``), ``profile-bucket-empty`` (no step of the log had that
    context: the whole log's entry stands in), ``profile-no-drafts`` (steps but no draft: tau
    1, M ~ 0).

    Raises
    ------
    ValueError
        a gamma the profile lacks (naming its gammas), a negative context.
    """
    tau = np.empty((len(contexts), len(gammas)))
    m = np.ones_like(tau)
    empty, none = set(), set()
    for i, c in enumerate(contexts):
        for j, g in enumerate(gammas):
            if profile.entry(g, context=c).counters.num_steps == 0:
                empty.add(int(c))  # the whole log's entry stands in (_profile_entry)
            e = _profile_entry(profile, g, c)
            if e.counters.num_drafts == 0:
                none.add(int(c))
                tau[i, j], m[i, j] = 1.0, 1e-9
                continue
            tau[i, j] = min(e.tau, g + 1.0)
            if proposal_rate:
                m[i, j] = e.proposal_rate
    notes = profile_context_notes(profile, contexts)
    if empty:
        notes.append(Note("profile-bucket-empty",
                          f"the acceptance profile has no step at context {sorted(empty)} "
                          "(its log never reached it): the whole log's acceptance stands in; "
                          "replay a log that does, or with other --context-buckets"))
    if none:
        notes.append(Note("profile-no-drafts",
                          f"at context {sorted(none)} the replayed method proposed no draft: "
                          "speculation gains nothing there"))
    return tau, m, notes


def _profile_entry(profile, g, c):
    """The profile's entry for gamma ``g`` at context ``c``: its bucket's, or the whole log's
    when no step of the log reached that bucket."""
    e = profile.entry(g, context=c)
    return profile.entry(g) if e.counters.num_steps == 0 else e


def profile_draft_lengths(profile, contexts, gammas):
    """The mean tokens per draft, vLLM's ``num_draft_tokens / num_drafts``, per (context,
    gamma) of an acceptance profile (the entries :func:`profile_acceptance` reads), at most
    gamma; gamma where the entry has no draft. n-gram and suffix drafts stop where the match
    does (suffix at gamma 5 in the bundled log: 1.73 tokens), and vLLM verifies each request's
    own draft, so this is the L of ``B (1 + M L)`` verified tokens
    (:func:`specnb.serving.workload.query_tokens`). Returns a (contexts, gammas) array."""
    out = np.empty((len(contexts), len(gammas)))
    for i, c in enumerate(contexts):
        for j, g in enumerate(gammas):
            k = _profile_entry(profile, g, c).counters
            out[i, j] = (min(k.num_draft_tokens / k.num_drafts, float(g)) if k.num_drafts
                         else float(g))
    return out


def _profile_grid(st, batches, contexts, gammas, tau, m, *, input_len=None, output_len=None,
                  lengths_per_draft=None):
    """:func:`specnb.serving.evaluate` cell by cell with the (context, gamma) tau and M of
    :func:`profile_acceptance`, stitched into one (B, S, G) grid; with ``input_len`` and
    ``output_len`` each cell holds evaluate's own ``speedup_end_to_end``, so the verdicts read
    from the grid (best gamma, paying ranges, crossover, schedule) follow the end-to-end
    figure as on the scalar path. Both the asked grid and the 1..limit one pass them."""
    lengths = {"input_len": input_len, "output_len": output_len}
    cols = []
    for i, c in enumerate(contexts):
        cells = [S.evaluate(dataclasses.replace(
            st, proposal_rate=float(m[i, j]),
            mean_draft_len=(None if lengths_per_draft is None
                            else float(lengths_per_draft[i, j]))), batches, [c], [g],
            tau=float(tau[i, j]), **lengths) for j, g in enumerate(gammas)]
        cols.append(_stitch(cells, axis=2))
    return _stitch(cols, axis=1)


def _stitch(grids, axis: int):
    """Grids joined along the context (1) or gamma (2) axis."""
    first = grids[0]
    out = {}
    for f in dataclasses.fields(first):
        v = [getattr(g, f.name) for g in grids]
        if v[0] is None:
            out[f.name] = None
        elif f.name == "batch_sizes" or (f.name == "gammas" and axis == 1) or (
                f.name in ("contexts", "max_batch_in_memory") and axis == 2):
            out[f.name] = v[0]
        elif f.name in ("contexts", "gammas", "max_batch_in_memory"):
            out[f.name] = np.concatenate(v)
        else:
            out[f.name] = np.concatenate(v, axis=axis)
    return S.Grid(**out)


def serving_plan(st: S.Setup, batch_sizes, contexts, gammas, *, alpha=None, tau=None,
         acceptance_rates=None, input_len=None, output_len=None,
         acceptance_profile=None) -> Plan:
    """The plan for a setup: the model on the asked grid, the schedule for batch sizes
    1..max(batch_sizes) that serves every context, its vLLM config and serve line
    (``--max-num-seqs`` = max(batch_sizes), ``--tensor-parallel-size`` with gpus > 1,
    ``--kv-cache-dtype`` when the setup's is not ``auto``), the
    crossover and paying batch sizes per context, the KV room, and coded notes.

    Parameters
    ----------
    st : Setup (e.g. calibrated: ``serving.calibrate(...).setup``)
    batch_sizes, contexts, gammas : lists of ints (batch >= 1, context >= 0, gamma >= 1);
        sorted here; max(batch_sizes) at most :data:`specnb.serving.MAX_BATCH_SEARCH`
    alpha, tau, acceptance_rates : exactly one (:func:`specnb.serving.tokens_per_step`), or
    acceptance_profile : an :class:`~specnb.acceptance_profile.AcceptanceProfile`: tau per
        context bucket and gamma, and for ``ngram`` / ``suffix`` drafts the proposal rate M
        too (:func:`profile_acceptance`)
    input_len, output_len : tokens per sequence (both or neither): the grid gains
        ``speedup_end_to_end`` (the prefill counted), and every verdict, the best gamma, the
        schedule and the serve line follow it (note ``loses-end-to-end`` where decoding
        alone would pay); input_len must not exceed a context (ValueError)

    The memory cap (:func:`specnb.serving.memory_cap` at the setup's
    ``gpu_memory_utilization``): a batch whose KV cache does not fit never pays, so each
    context's paying ranges and crossover stop at its own cap, and the schedule and
    ``--max-num-seqs`` at the most sequences that fit at any context (:func:`memory_limit`).

    Returns
    -------
    Plan

    Raises
    ------
    ValueError
        as :func:`specnb.serving.evaluate` and :func:`setup_config`.
    """
    acc = {k: v for k, v in (("alpha", alpha), ("tau", tau),
                              ("acceptance_rates", acceptance_rates)) if v is not None}
    batches, contexts, gammas = sorted(batch_sizes), sorted(contexts), list(gammas)
    runner = plan_runner(st.draft.method, acceptance_profile, st.proposal_rate)
    st, sync_note = with_sync_host(st, runner, served_method(st.draft.method,
                                                             acceptance_profile))
    prof_notes = []
    if acceptance_profile is not None:
        if acc:
            raise ValueError("give an acceptance profile or one of alpha, tau, "
                             "acceptance_rates, not both")
        S.check_axis("contexts", contexts, 0)
        S.check_axis("gammas", gammas, 1, theory.MAX_GAMMA)
        check_profile_method(acceptance_profile, st.draft.method)
        p_tau, p_m, prof_notes = profile_acceptance(
            acceptance_profile, contexts, gammas,
            proposal_rate=st.draft.method in S.PARTIAL_PROPOSAL_METHODS)
        acc = {"acceptance_profile": acceptance_profile.method, "tau": p_tau.tolist()}
        p_len = None
        if st.draft.method in S.PARTIAL_PROPOSAL_METHODS:  # drafts that stop early: verify L
            p_len = profile_draft_lengths(acceptance_profile, contexts, gammas)
            acc["mean_draft_len"] = p_len.tolist()
            short = [(int(g), float(p_len[i, j])) for i in range(len(contexts))
                     for j, g in enumerate(gammas) if p_len[i, j] < g - 0.05]
            if short:
                g0, l0 = short[-1]
                prof_notes.append(Note(
                    "profile-mean-draft-length",
                    f"verification is charged at the profile's mean draft length "
                    f"(num_draft_tokens / num_drafts: e.g. {l0:.2f} tokens at gamma {g0}), not "
                    "gamma tokens per draft: vLLM verifies each request's own draft, and "
                    f"{st.draft.method} drafts stop where the match does"))
        grid = _profile_grid(st, batches, contexts, gammas, p_tau, p_m, input_len=input_len,
                             output_len=output_len, lengths_per_draft=p_len)
    else:
        grid = S.evaluate(st, batches, contexts, gammas, alpha=alpha, tau=tau,
                          acceptance_rates=acceptance_rates, input_len=input_len,
                          output_len=output_len)
    top = max(batches)
    caps = {int(c): S.memory_cap(st, int(c)) for c in contexts}
    room = {c: int(m["max_batch"]) for c, m in caps.items()}
    over = S.contexts_over_max_positions(st, contexts)  # vLLM cannot serve these at all
    servable = [c for c in contexts if int(c) not in over] or contexts
    fit_any = max(room[int(c)] for c in servable)
    limit = memory_limit(st, servable, top)
    # one grid over every batch size 1..limit for the schedule, crossover and paying ranges
    if acceptance_profile is not None:  # with the lengths: the verdict rule of the scalar path
        full = _profile_grid(st, np.arange(1, limit + 1), contexts, gammas, p_tau, p_m,
                             input_len=input_len, output_len=output_len,
                             lengths_per_draft=p_len)
    else:
        full = S.batch_range_grid(st, contexts, gammas, limit, alpha=alpha, tau=tau,
                                  acceptance_rates=acceptance_rates, input_len=input_len,
                                  output_len=output_len)
    if over:  # beyond the model's positions: no verdict, no schedule for those contexts
        grid, full = _without_contexts(grid, over), _without_contexts(full, over)
    nothing = S.cannot_serve(st, contexts)
    sched = schedule_of(full)
    dropped_note = None
    if st.engine.name == "vllm" and len({r[2] for r in sched}) > 1:
        from ..vllm.schedule import schedule_dropped

        dropped = schedule_dropped(st.draft.method)  # vLLM would run one static K (T7-05)
        if dropped is not None:
            sched, dropped_note = static_schedule(full, dropped)
    cfg, notes = setup_config(st, sched, acceptance_profile=acceptance_profile)
    if dropped_note is not None:
        notes.append(dropped_note)
    if cfg is None:  # no serve line: no placeholder in it to replace
        notes = [n for n in notes if n.code != "checkpoint-placeholder"]
    if nothing is not None:  # no on/off advice: nothing runs at all
        sched, cfg = None, None
        notes = [n for n in notes if n.code in ("mtp-needs-target-layers",)]
    serve = None
    v0 = v0_no_serve_line(st)
    if v0 is not None and cfg is not None and nothing is None:
        # V0's costs, V1's flags: no line that runs neither (T5-M3)
        cfg = None
        notes = [n for n in notes if n.code not in ("checkpoint-placeholder", "schedule-tax")]
        notes.append(v0)
    if cfg is not None and st.engine.family == "sglang":  # SGLang's line (T7-03)
        serve, serve_notes = sglang_launch(st, cfg, max_num_seqs=limit, contexts=servable)
        notes += serve_notes
    elif cfg is not None:
        serve, serve_notes = setup_serve_line(st, cfg, max_num_seqs=limit,
                                              contexts=servable,
                                              runner=runner)
        notes += serve_notes
    if nothing is not None:
        notes.append(nothing)
    if input_len is not None and nothing is None:
        dec = grid.speedup.max(axis=2) > 1.0
        e2e = grid.speedup_end_to_end.max(axis=2) > 1.0
        lost = dec & ~e2e & grid.fits[..., 0]
        if lost.any():
            bs = sorted({int(b) for b in grid.batch_sizes[np.flatnonzero(lost.any(axis=1))]})
            notes.append(Note("loses-end-to-end",
                              "decoding alone would pay at batch "
                              + ", ".join(map(str, bs)) + f", but with the prefill of "
                              f"{input_len} prompt tokens and {output_len} output tokens per "
                              "sequence it loses end to end (e2e columns): the best gamma, "
                              "the paying ranges, the schedule and the serve line follow the "
                              "end-to-end figure"))
    if over and nothing is None:
        notes.append(Note("no-advice-over-max-positions",
                          "no verdict, schedule or serve line for context "
                          + ", ".join(f"{c:,}" for c in over) + f": above the target "
                          f"{st.target.name}'s maximum of "
                          f"{st.target.max_position_embeddings:,} positions, vLLM does not "
                          "serve them (the table shows the model's figures only); the "
                          "schedule and the serve line are for the other contexts"))
    if len(contexts) > 1:
        notes.append(Note("schedule-serves-every-context",
                          "the schedule serves every --context: per batch size, the gamma "
                          "whose worst speedup over the contexts is highest (0 if that is not "
                          "above 1)"))
    tight = {c: m for c, m in room.items() if m < top and c not in over}
    if tight and nothing is None:
        notes.append(Note("kv-does-not-fit",
                          f"KV cache room (weights first, in {S.memory_budget_text(st)}): "
                          + ", ".join(f"context {c}: " + (f"at most {m} sequences" if m else
                                                          "not even one sequence")
                                      for c, m in tight.items())
                          + "; larger batch sizes are shown but cannot run at once, so they "
                          "never pay: the paying ranges stop there"
                          + (f", the schedule and --max-num-seqs at {limit}" if limit < top
                             else "")))
    if nothing is None and serve is not None and top < fit_any:
        notes.append(Note("max-num-seqs-is-batch",
                          f"--max-num-seqs {limit} is your largest --batch: the plan covers "
                          f"batch sizes 1..{top} and the server admits no more; "
                          + (f"{fit_any} sequences fit at the shortest context "
                             f"(give --batch up to {fit_any} to plan for them)"
                             if fit_any < MAX_EXACT_INT else "at context 0 the KV cache "
                             "limits no batch (give --batch up to the most sequences the "
                             "server should admit)")))
    kv_store = S.kv_storage_dtype(st.kv_dtype, st.dtype)
    if nothing is None and st.kv_dtype == "auto" and st.dtype == "fp8":
        fp8 = dataclasses.replace(st, kv_dtype="fp8")
        notes.append(Note("kv-cache-dtype",
                          f"KV cache {kv_store} (vLLM's default kv_cache_dtype auto stores the "
                          "activation dtype, also with fp8 weights); --kv-cache-dtype fp8 "
                          "halves it: " + ", ".join(
                              f"{int(S.max_batch_in_memory(fp8, c))} sequences at context {c} "
                              f"instead of {room[c]}" for c in room)))
    fa2 = S.multi_token_note(st, contexts) if nothing is None else None
    if fa2 is not None:
        notes.append(fa2)
    if st.draft.kind == "model" and st.draft.arch.params >= st.target.params:
        notes.append(Note("draft-not-smaller",
                          f"the draft {st.draft.name} ({st.draft.arch.params / 1e9:.1f} B "
                          f"parameters) is not smaller than the target {st.target.name} "
                          f"({st.target.params / 1e9:.1f} B): a draft model pays only when it "
                          "is much cheaper than the target (a small model of its family); "
                          "are --model and --draft swapped?"))
    displaced = {c: int(m["displaced"]) for c, m in caps.items()}
    shown = {c: d for c, d in displaced.items() if room[c] < MAX_EXACT_INT}  # not context 0's
    if st.draft.kind != "none" and any(shown.values()):
        notes.append(Note("draft-displaces-sequences",
                          "the draft's weights and KV cache take the room of "
                          + ", ".join(f"{d} sequence{'s' * (d != 1)} at context {c} "
                                      f"({room[c] + d} fit "
                                      f"without it, {room[c]} with it)"
                                      for c, d in shown.items())))
    moe = _moe_fixed_cost_note(st)
    if moe is not None and nothing is None:
        notes.append(moe)
    if (acceptance_profile is None and st.draft.method == "suffix"
            and st.mean_draft_len is None and nothing is None):
        notes.append(Note("suffix-full-draft-assumed",
                          "every suffix draft is charged gamma tokens of verification, the "
                          "most it can be: suffix drafts stop where the match does, and vLLM "
                          "verifies each request's own draft; an acceptance profile (specnb replay "
                          "--method suffix --out) gives the mean draft length"))
    context_notes = S.context_limit_notes(st, contexts)
    notes = context_notes + prof_notes + ([sync_note] if sync_note and nothing is None else []) + notes
    paying = S.paying_of(full)
    if cfg is None and any(paying) and nothing is None and not v0:
        # setup_config's no-gamma-pays is about the worst context only
        notes = [n for n in notes if n.code != "no-gamma-pays"]
        notes.append(Note("no-schedule-for-every-context",
                          "no schedule pays at every --context at once, but speculation pays "
                          "at context " + ", ".join(str(int(s)) for s, r in zip(contexts, paying)
                                                    if r)
                          + " (see above): plan with the contexts you serve"))
    return Plan(st, acc, grid, grid.best(), sched, cfg, serve,
                {int(s): int(c) for s, c in zip(contexts, S.crossover_of(full))},
                {int(s): r for s, r in zip(contexts, paying)}, room, context_notes, notes,
                displaced, None if nothing is not None else limit, nothing, over)
