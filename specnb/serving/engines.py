"""Engine profiles: what a serving engine's speculative step costs beyond the roofline model
(issue 16), and their fits on published engine measurements. Profiles live in
``data/engine_profiles.csv`` (one row per parameter, with the fit and the points it was
fitted on); ``scripts/fit_engine_profiles.py`` refits them on ``data/engine_measurements.csv``
with :mod:`specnb.serving.fit` (which imports this module, :mod:`.setup` and :mod:`.speedup`;
this module imports neither) and prints held-out errors.

A profile adds to the cost of one speculative step (B sequences, gamma draft forwards,
proposal rate M, a head with an LM head of V_d rows)::

    extra = sd_overhead_ms                                  # per verification (replaces the
                                                            #   model's default 1.207 ms)
          + gamma x draft_step_ms[method]                   # per draft forward (launches,
                                                            #   bookkeeping)
          + B gamma x (V_d / 1000) x draft_logits_ns x 1e-6 # per draft token, per 1,000 LM-head
                                                            #   rows (sampling / top-k work)
          + B (1 + M gamma) x verify_token_us x 1e-3        # per verified token (scorer, e.g.
                                                            #   vLLM V0's batch expansion)

A profile may also carry step parameters (:data:`STEP_FIELDS`, a
:class:`~specnb.serving.moe.EngineStep`: MoE routing skew and per-expert costs, expert-parallel
all-to-alls, the CUDA-graph cap; issue 25), which act inside every forward
(``serving.step._step_totals``), and per-class variants (``sglang-moe``, picked by
:func:`profile_for` for a mixture-of-experts target).

Engine effects described in ``shared/reference/engines.md`` section 2 item 4. ``ideal`` is the
roofline alone: every extra 0, no fixed per-forward cost, ideal efficiencies;
``specdecode-bench`` is the model's own defaults (SpecDecode-Bench's fitted constants, vLLM
v0.10 on 1x H100: the 1.207 ms overhead, no extra), used for the MagicDec reference tables.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from .. import _check, data, limits
from .moe import EngineStep

__all__ = ["PARAMETERS", "EFFICIENCY_FIELDS", "STEP_FIELDS", "TREE_ENGINES", "DEFAULT_ENGINE",
           "EngineProfile", "profile_names", "profile", "features", "extra_cost_ms",
           "profile_for", "with_routing_skew"]

#: Cost parameters of a profile, with their units.
PARAMETERS = {"sd_overhead_ms": "ms per verification",
              "draft_step_ms": "ms per draft forward",
              "draft_logits_ns": "ns per draft token per 1,000 LM-head rows",
              "verify_token_us": "us per verified token"}

#: Efficiency overrides a profile may carry (``ideal``): field -> Efficiency attribute.
EFFICIENCY_FIELDS = ("bandwidth", "compute", "fixed_ms", "head_fixed_ms", "overlap")

#: Step parameters a profile may carry (:class:`~specnb.serving.moe.EngineStep` fields:
#: mixture-of-experts costs and the CUDA-graph cap; issue 25), with their units.
STEP_FIELDS = {"expert_us": "us per touched expert per MoE layer",
              "tile_tokens": "rows of one grouped-GEMM tile",
              "expert_parallel": "1 = experts placed whole (EP), 0 = tensor parallel",
              "a2a_us": "us per all-to-all (EP)",
              "graph_cap_tokens": "most query tokens a CUDA graph covers",
              "eager_layer_us": "us of host launch time per layer for a step without a CUDA graph",
              "fa2_walk_ns": "ns per cached token per layer of FlashAttention-2's unsplit walk",
              "routing_skew": "fraction in [0, 0.95]"}

#: Engines whose speculation drafts trees (SGLang's ``--speculative-eagle-topk`` > 1 and
#: ``--speculative-num-draft-tokens``); the profiles whose name starts with one of these.
TREE_ENGINES = ("sglang",)

#: The profile ``specnb plan`` uses without ``--engine``.
DEFAULT_ENGINE = "vllm"


@dataclass(frozen=True)
class EngineProfile:
    """One engine's costs. ``draft_step_ms`` maps a draft method (``eagle``, ``eagle3``,
    ``mtp``, ``draft_model``...) or ``"*"`` (any method) to ms per draft forward;
    ``efficiency`` holds overrides of the model's efficiencies (``ideal`` only);
    ``sd_overhead_ms`` None keeps the model's default."""

    name: str
    sd_overhead_ms: float | None = None
    draft_step_ms: dict = field(default_factory=dict)
    draft_logits_ns: float = 0.0
    verify_token_us: float = 0.0
    efficiency: dict = field(default_factory=dict)
    description: str = ""
    step: dict = field(default_factory=dict)

    def draft_step(self, method: str) -> float:
        """ms per draft forward for ``method`` (its own value, else ``"*"``, else 0)."""
        return float(self.draft_step_ms.get(method, self.draft_step_ms.get("*", 0.0)))

    def engine_step(self) -> EngineStep:
        """The profile's :class:`~specnb.serving.moe.EngineStep` (its defaults where the
        profile carries no step field)."""
        kw = dict(self.step)
        for k in ("tile_tokens", "graph_cap_tokens"):
            if k in kw:
                kw[k] = int(kw[k])
        if "expert_parallel" in kw:
            kw["expert_parallel"] = bool(kw["expert_parallel"])
        return EngineStep(**kw)

    @property
    def family(self) -> str:
        """The engine the profile stands for (``vllm``, ``vllm-v0``, ``sglang``): its name
        without a target-class suffix (``sglang-moe`` -> ``sglang``, :func:`profile_for`)."""
        return self.name.removesuffix("-moe")

    @property
    def trees(self) -> bool:
        """True when the engine drafts trees (:data:`TREE_ENGINES`)."""
        return self.name.startswith(TREE_ENGINES)


def profile_for(name, target) -> EngineProfile:
    """The profile of engine ``name`` for ``target`` (an Architecture): a profile fitted on
    the target's class where one exists (``<name>-moe`` for a mixture-of-experts target,
    e.g. ``sglang-moe``), else :func:`profile` ``(name)``. An :class:`EngineProfile` is
    returned unchanged.

    Raises
    ------
    ValueError
        an unknown engine.
    """
    p = profile(name)
    if isinstance(name, EngineProfile) or getattr(target, "moe", None) is None:
        return p
    return _profiles().get(f"{p.name}-moe", p)


def with_routing_skew(prof, routing_skew) -> EngineProfile:
    """``prof`` (a profile or its name) with ``routing_skew`` (the share in
    :data:`~specnb.serving.moe.ROUTING_SKEW_RANGE`; :class:`~specnb.serving.moe.EngineStep`).

    Raises
    ------
    ValueError
        a skew outside the range (TypeError for a non-number).
    """
    import dataclasses

    p = profile(prof)
    s = limits.routing_skew(routing_skew)
    return dataclasses.replace(p, step={**p.step, "routing_skew": s})


@functools.lru_cache(maxsize=None)
def _profiles() -> dict:
    out: dict = {}
    for rec in data.load("engine_profiles").to_dict("records"):
        name = rec["engine"]
        p = out.setdefault(name, {"draft_step_ms": {}, "efficiency": {}, "description": "",
                                  "step": {}})
        par, value = rec["parameter"], float(rec["value"])
        if par == "draft_step_ms":
            p["draft_step_ms"][rec["method"] or "*"] = value
        elif par in EFFICIENCY_FIELDS:
            p["efficiency"][par] = value
        elif par in STEP_FIELDS:
            p["step"][par] = value
        elif par in PARAMETERS:
            p[par] = value
        else:
            raise ValueError(f"data/engine_profiles.csv: unknown parameter {par!r} for {name}")
        p["description"] = p["description"] or rec["description"]
    return {k: EngineProfile(k, **v) for k, v in out.items()}


def profile_names() -> list[str]:
    """Engines of ``data/engine_profiles.csv``, in file order."""
    return list(_profiles())


def profile(name) -> EngineProfile:
    """The profile of engine ``name`` (case-insensitive; an :class:`EngineProfile` is returned
    unchanged).

    Raises
    ------
    ValueError
        an unknown engine; the message lists the known ones.
    """
    if isinstance(name, EngineProfile):
        return name
    key = str(name).strip().lower()
    if key not in _profiles():
        raise ValueError(f"engine must be one of {', '.join(profile_names())}; got {name!r} "
                         "(profiles: data/engine_profiles.csv)")
    return _profiles()[key]


def features(batch_size, gamma, *, draft_vocab=0, proposal_rate=1.0) -> dict:
    """The multipliers of each cost parameter for steps of ``batch_size`` sequences and
    ``gamma`` draft forwards (arrays broadcast): ``sd_overhead_ms`` 1, ``draft_step_ms``
    gamma, ``draft_logits_ns`` B gamma V_d / 1000 x 1e-6 (to ms), ``verify_token_us``
    B (1 + M gamma) x 1e-3 (to ms). ``draft_vocab`` 0 for drafts without an LM head of
    their own sampling (n-gram, suffix)."""
    b = _check.integer("batch_size", batch_size, lo=1).astype(float)
    g = _check.integer("gamma", gamma, lo=1).astype(float)
    v = _check.real("draft_vocab", draft_vocab, lo=0.0)
    m = limits.proposal_rate(proposal_rate)
    b, g, v = _check.broadcast(batch_size=b, gamma=g, draft_vocab=v)
    return {"sd_overhead_ms": np.ones_like(b), "draft_step_ms": g,
            "draft_logits_ns": b * g * v / 1000.0 * 1e-6,
            "verify_token_us": b * (1.0 + m * g) * 1e-3}


def extra_cost_ms(prof, batch_size, gamma, *, method: str, draft_vocab=0, proposal_rate=1.0,
                  default_sd_overhead_ms: float = 0.0):
    """The profile's cost of one speculative step beyond the model's, ms (see the module
    docstring); ``default_sd_overhead_ms`` stands in where the profile keeps the model's
    per-verification overhead (``sd_overhead_ms`` None)."""
    p = profile(prof)
    f = features(batch_size, gamma, draft_vocab=draft_vocab, proposal_rate=proposal_rate)
    over = default_sd_overhead_ms if p.sd_overhead_ms is None else p.sd_overhead_ms
    return _check.out(over * f["sd_overhead_ms"] + p.draft_step(method) * f["draft_step_ms"]
                      + p.draft_logits_ns * f["draft_logits_ns"]
                      + p.verify_token_us * f["verify_token_us"])
