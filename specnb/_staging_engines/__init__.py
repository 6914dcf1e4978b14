"""Issue 16 (serving model on the engines people run), staged while ``specnb/serving.py``
becomes the ``specnb/serving/`` package: pure, torch-free functions to be moved into it.

Modules: :mod:`.moe` (experts touched, MoE/MLA parameter counts, MLA KV bytes, MTP module),
:mod:`.catalogue` (shapes with MoE/MLA parts from ``data/``), :mod:`.heads` (EAGLE-1 vs
EAGLE-3 head shapes), :mod:`.speculation` (proposal-rate algebra, prefill, end-to-end ratio),
:mod:`.memory_cap` (KV room after weights, sequences the draft displaces),
:mod:`.profiles` (engine profiles of ``data/engine_profiles.csv``).
"""
