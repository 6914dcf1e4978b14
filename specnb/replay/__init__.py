"""Acceptance replayed from a request log without a model (L2): the n-gram and suffix
proposers stepped as vLLM steps them, counted with vLLM's counters
(:mod:`specnb.acceptance_profile`). Never imports torch, :mod:`specnb.serving`,
:mod:`specnb.vllm` or :mod:`specnb.measure`."""
