"""What vLLM's ``SpeculativeConfig`` accepts: methods, keys, old names, version boundaries.

Everything here is transcribed from vLLM's source, named by commit:

* ``vllm/config/speculative.py`` @ ``002e77c1f0ef9b19cff8b9e21cfbd6feb3d6b443`` ("current"):
  the ``SpeculativeMethod`` / ``MTPModelTypes`` literals, the fields and their constraints,
  ``__post_init__`` (method inference, n-gram defaults, suffix checks) and ``_verify_args``.
* ``vllm/config/speculative.py`` @ ``f19b16d95e4395790661f4835e4436bc3dd5d9c7`` (intermediate):
  still had ``disable_by_batch_size`` and ``speculative_token_tree``.
* PR #31541 (merged 2025-12-30) made ``@config`` dataclasses ``extra="forbid"``; before it
  pydantic's default ``extra="ignore"`` dropped unknown keys silently. PR #14434 introduced the
  JSON ``--speculative-config`` (before it, V0 used ``--speculative-model`` and friends).
  PR #35060 (Feb 2026) removed ``disable_by_batch_size``.

The version numbers attached to those PRs are approximate (vLLM's release tags were not mapped
to commits); every finding that depends on them says so.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Source every rule cites.
SOURCE = "vllm/config/speculative.py @ 002e77c1"

#: Model-specific MTP method names (``MTPModelTypes`` @ 002e77c1). All but ``mtp`` are
#: deprecated: vLLM logs "method `<x>` is deprecated and replaced with mtp." and uses ``mtp``.
MTP_METHODS = (
    "deepseek_mtp", "dots3_note_mtp", "mimo_mtp", "mimo_v2_mtp", "glm4_moe_mtp",
    "glm4_moe_lite_mtp", "glm_ocr_mtp", "ernie_mtp", "nemotron_h_mtp", "exaone_moe_mtp",
    "exaone4_5_mtp", "qwen3_next_mtp", "qwen4_exp_mtp", "qwen3_5_mtp", "longcat_flash_mtp",
    "bailing_hybrid_v3_mtp", "minimax_m3_mtp", "bailing_hybrid_mtp", "mtp", "kimi_k3_mtp",
    "pangu_ultra_moe_mtp", "step3p5_mtp", "hy_v3_mtp", "hy_v4_mtp", "gemma4_mtp",
    "inkling_mtp", "glm5_next_mtp",
)

#: Every value ``method`` may take @ 002e77c1 (``SpeculativeMethod``), canonical names first.
METHODS = (
    "ngram", "suffix", "draft_model", "eagle", "eagle3", "mtp", "medusa", "mlp_speculator",
    "ngram_gpu", "dflash", "dspark", "custom_class", "extract_hidden_states",
) + tuple(m for m in MTP_METHODS if m != "mtp")

#: The methods :func:`specnb.vllm.speculative_config` builds (deprecated ``*_mtp`` names excluded).
BUILD_METHODS = METHODS[:13]

#: Methods that load a separate draft checkpoint named by ``model``.
NEEDS_MODEL = frozenset({"draft_model", "eagle", "eagle3", "medusa", "mlp_speculator", "dflash",
                         "custom_class"})
#: Model-backed methods whose checkpoint usually carries ``n_predict`` (num_speculative_tokens
#: then defaults to it). A plain causal LM (draft_model) and EAGLE heads usually do not.
N_PREDICT_METHODS = frozenset({"medusa", "mlp_speculator", "mtp", "dflash", "dspark"})
NGRAM_METHODS = frozenset({"ngram", "ngram_gpu"})
#: Methods ``parallel_drafting`` is documented for ("Only compatible with EAGLE and draft model
#: methods"; forced on for dflash/dspark).
PARALLEL_DRAFTING_METHODS = frozenset({"eagle", "eagle3", "draft_model", "dflash", "dspark"})

#: Common misspellings of a method -> the method meant (checked before difflib).
METHOD_ALIASES = {
    "eagle-3": "eagle3", "eagle_3": "eagle3", "eagle-1": "eagle", "eagle1": "eagle",
    "eagle2": "eagle", "eagle-2": "eagle",
    "n-gram": "ngram", "n_gram": "ngram", "ngrams": "ngram", "prompt_lookup": "ngram",
    "prompt-lookup": "ngram", "pld": "ngram", "[ngram]": "ngram",
    "draft": "draft_model", "draft-model": "draft_model", "draftmodel": "draft_model",
    "small_model": "draft_model", "sps": "draft_model", "standalone": "draft_model",
    "mlp": "mlp_speculator", "mlp-speculator": "mlp_speculator",
    "suffix_decoding": "suffix", "suffix-decoding": "suffix",
    "ngram-gpu": "ngram_gpu", "multi_token_prediction": "mtp", "nextn": "mtp",
}


@dataclass(frozen=True)
class Field:
    """One ``SpeculativeConfig`` field as the checker sees it.

    kind: "bool", "int", "float", "str", "literal", "list", "internal" or "object".
    minimum: the smallest allowed value for numbers (inclusive unless ``exclusive``).
    """

    kind: str
    nullable: bool = True
    minimum: float | None = None
    exclusive: bool = False
    maximum: float | None = None
    choices: tuple = ()
    default: object = None
    doc: str = ""


#: The user-settable fields @ 002e77c1, in the order of the class body.
FIELDS: dict[str, Field] = {
    "enforce_eager": Field("bool", doc="override the target's enforce_eager"),
    "num_speculative_tokens": Field("int", minimum=0, exclusive=True,
                                    doc="draft length gamma; Field(gt=0)"),
    "model": Field("str", doc="draft model, EAGLE head or extra weights"),
    "method": Field("literal", choices=METHODS, doc="speculative method"),
    "draft_tensor_parallel_size": Field("int", minimum=1, doc="1 or the target's TP"),
    "tensor_parallel_size": Field("int", doc="exists only to be rejected"),
    "quantization": Field("str", doc="draft weights' quantization"),
    "moe_backend": Field("str", doc="draft MoE backend"),
    "attention_backend": Field("str", doc="draft attention backend ('auto' = None)"),
    "kv_cache_dtype": Field("str", doc="draft KV-cache dtype"),
    "max_model_len": Field("int", minimum=1, doc="draft max length"),
    "revision": Field("str", doc="draft model revision"),
    "code_revision": Field("str", doc="draft code revision"),
    "index_share_for_mtp_iteration": Field("bool", doc="only with method='mtp'"),
    "disable_padded_drafter_batch": Field("bool", nullable=False, default=False),
    "disable_eagle_block_drop": Field("bool", nullable=False, default=False),
    "use_local_argmax_reduction": Field("bool", nullable=False, default=False),
    "use_heterogeneous_vocab": Field("bool", nullable=False, default=False),
    "prompt_lookup_max": Field("int", minimum=1, doc="n-gram window maximum"),
    "prompt_lookup_min": Field("int", minimum=1, doc="n-gram window minimum"),
    "parallel_drafting": Field("bool", nullable=False, default=False),
    "num_speculative_tokens_per_batch_size": Field("list", doc="dynamic SD schedule"),
    "suffix_decoding_max_tree_depth": Field("int", nullable=False, minimum=1, default=24),
    "suffix_decoding_max_cached_requests": Field("int", nullable=False, minimum=0,
                                                 default=10000),
    "suffix_decoding_max_spec_factor": Field("float", nullable=False, minimum=0, default=1.0),
    "suffix_decoding_min_token_prob": Field("float", nullable=False, minimum=0, maximum=1,
                                            default=0.1),
    "draft_load_config": Field("object", doc="defaults to the target's load config"),
    "rejection_sample_method": Field("literal", nullable=False,
                                     choices=("standard", "synthetic", "block"),
                                     default="standard"),
    "synthetic_acceptance_rates": Field("list", doc="only with rejection_sample_method="
                                                    "'synthetic'"),
    "synthetic_acceptance_length": Field("float", doc="only with rejection_sample_method="
                                                      "'synthetic'"),
    "enable_adaptive_verification": Field("bool", nullable=False, default=False),
    "draft_sample_method": Field("literal", nullable=False, choices=("greedy", "probabilistic"),
                                 default="greedy"),
    "dspark_draft_topk": Field("int", minimum=1, doc="DSpark only"),
    "target_model_config": Field("internal"),
    "target_parallel_config": Field("internal"),
    "draft_model_config": Field("internal"),
    "draft_parallel_config": Field("internal"),
}

#: Keys that are request sampling parameters (SamplingParams), not speculative_config keys
#: (docs/features/speculative_decoding/README.md @ 01ed47b4, "Notes").
SAMPLING_KEYS = frozenset({"temperature", "top_p", "top_k", "min_p", "repetition_penalty",
                           "presence_penalty", "frequency_penalty", "max_tokens", "seed"})

#: Old or mistaken key -> (replacement key or None, explanation).
LEGACY_KEYS: dict[str, tuple[str | None, str]] = {
    "ngram_prompt_lookup_max": ("prompt_lookup_max", "the V0 flag --ngram-prompt-lookup-max "
                                "lost its ngram_ prefix in the JSON config (PR #15348)"),
    "ngram_prompt_lookup_min": ("prompt_lookup_min", "the V0 flag --ngram-prompt-lookup-min "
                                "lost its ngram_ prefix in the JSON config (PR #15348)"),
    "speculative_model": ("model", "the V0 flag --speculative-model became the 'model' key "
                          "(PR #14434)"),
    "draft_model": ("model", "the draft checkpoint goes in 'model' (and method 'draft_model')"),
    "speculative_draft_tensor_parallel_size": ("draft_tensor_parallel_size",
                                               "V0 flag name (PR #14434)"),
    "speculative_max_model_len": ("max_model_len", "V0 flag name (PR #14434)"),
    "speculative_model_quantization": ("quantization", "V0 flag name (PR #14434)"),
    "num_draft_tokens": ("num_speculative_tokens", "vLLM calls the draft length "
                         "num_speculative_tokens"),
    "num_spec_tokens": ("num_speculative_tokens", "vLLM calls the draft length "
                        "num_speculative_tokens"),
    "speculative_tokens": ("num_speculative_tokens", "vLLM calls the draft length "
                           "num_speculative_tokens"),
    "adaptive_verification": ("enable_adaptive_verification", "the docs page "
                              "dynamic_speculative_decoding.md @ 015a47e1 uses the wrong name"),
    "synthetic_acceptance_rate": ("synthetic_acceptance_rates", "docs README @ 01ed47b4 "
                                  "names a key the code does not have"),
    "disable_by_batch_size": (None, "PR #35060, Feb 2026; it was unused since "
                              "v0.10.0, when the V0 engine was removed (issue #25112); for "
                              "batch-size-dependent drafting see "
                              "num_speculative_tokens_per_batch_size"),
    "speculative_disable_by_batch_size": (None, "V0 flag; its JSON successor "
                                          "disable_by_batch_size was removed by PR #35060"),
    "speculative_token_tree": (None, "in vLLM @ f19b16d9, removed by @ 002e77c1"),
    "disable_logprobs": (None, "an old V1-era field, removed"),
    "disable_log_stats": (None, "an internal V1-era field, never a user key; removed"),
    "enable_chunked_prefill": (None, "an internal V1-era field; set --enable-chunked-prefill "
                               "on the server instead"),
    "spec_decoding_acceptance_method": (None, "V0 only (typical acceptance sampler), removed "
                                        "with the V0 engine"),
    "typical_acceptance_sampler_posterior_threshold": (None, "V0 only, removed"),
    "typical_acceptance_sampler_posterior_alpha": (None, "V0 only, removed"),
    "disable_mqa_scorer": (None, "V0 only, removed"),
    "ngram_prompt_lookup_window": (None, "never a vLLM key"),
    "fly_window_size": (None, "FLy verification keys from draft_model.md @ 04329df5 are not in "
                        "the code @ 002e77c1"),
    "fly_entropy_threshold": (None, "FLy verification keys from draft_model.md @ 04329df5 are "
                              "not in the code @ 002e77c1"),
}

#: Keys that vLLM fills in itself; a user value breaks start-up.
INTERNAL_KEYS = frozenset(k for k, f in FIELDS.items() if f.kind == "internal")

# Version boundaries (approximate; see the module docstring).
#: First release with the JSON --speculative-config (PR #14434, March 2025).
JSON_CONFIG_SINCE = (0, 8)
#: First release that rejects unknown keys (PR #31541, merged 2025-12-30).
STRICT_KEYS_SINCE = (0, 14)

#: The suffix-decoding draft length default (= suffix_decoding_max_tree_depth's default).
SUFFIX_DEFAULT_TOKENS = 24

# Starting values from vLLM's docs examples (used by check.suggest_fix and specnb.advise).
#: Draft length to start with per method when no acceptance has been measured: vLLM's docs
#: examples and the article's FAQ (ngram 4; draft_model 5; eagle3 3, the article's "start at
#: 3-5"; mtp 1, vLLM's MTP example). :mod:`specnb.advise.recommend` explains each value.
DEFAULT_GAMMA = {"mtp": 1, "eagle3": 3, "ngram": 4, "draft_model": 5}
#: ``speculative_config`` options for ngram drafting: vLLM's docs example.
NGRAM_OPTIONS = {"prompt_lookup_min": 2, "prompt_lookup_max": 5}
#: Above this ``num_speculative_tokens`` the checker warns (``num-speculative-tokens-huge``):
#: vLLM accepts any integer > 0 (``Field(gt=0)``), but its docs use 1 to 32 (suffix: 32) and
#: 1024 is the context of the smallest models served (GPT-2's n_positions), so a draft this
#: long is surely a typo. With a draft config.json, its max_position_embeddings is the bound.
MAX_SENSIBLE_GAMMA = 1024
