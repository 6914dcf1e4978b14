"""L3: advice built on the model (:mod:`specnb.serving`) and the vLLM contract
(:mod:`specnb.vllm`). :mod:`specnb.advise.plan`: grid -> gamma per batch -> schedule -> config ->
serve line + coded notes (``specnb plan``, notebook 09)."""
