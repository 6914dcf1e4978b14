"""Starting values shared by the config builder and the recommender (no imports, no cycle).

:data:`DEFAULT_GAMMA` is the draft length to start with per method when no acceptance has been
measured: vLLM's docs examples and the article's FAQ (ngram 4 with ``prompt_lookup_min`` 2,
``prompt_lookup_max`` 5; draft_model 5; eagle3 3, the article's "start at 3-5"; mtp 1, vLLM's
MTP example). :mod:`specnb.vllm.advise` explains each value.
"""

from __future__ import annotations

#: Starting draft length per method when no alpha is measured (sources in the module doc).
DEFAULT_GAMMA = {"mtp": 1, "eagle3": 3, "ngram": 4, "draft_model": 5}

#: ``speculative_config`` options for ngram drafting: vLLM's docs example (sources above).
NGRAM_OPTIONS = {"prompt_lookup_min": 2, "prompt_lookup_max": 5}
