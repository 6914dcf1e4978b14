"""Hugging Face config dicts the serving tests share (not a test module)."""

from __future__ import annotations

#: A tiny LLaMA-style decoder (the vocabulary of Llama-3.1-8B, so it can draft for it).
LLAMA_CFG = {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
             "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128,
             "vocab_size": 128256}


def llama8b_config() -> dict:
    """Llama-3.1-8B's shape as a config.json dict (a fresh copy each call)."""
    return {"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096,
            "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
            "vocab_size": 128256, "tie_word_embeddings": False}
