"""Random-weight stand-ins for real checkpoints, built in seconds (no download): Llama-style
and GPT-2 models with the bundled tokenizer's vocabulary, saved folders, prompt files and a
small measurement (used by the tests of specnb.measure)."""

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOKENIZER = ROOT / "data" / "models" / "tokenizer"
VOCAB = 2048

PROMPTS = [{"task": "code", "prompt": "def add(a, b):\n    return"},
           {"task": "prose", "prompt": "Return the number of items in the queue"}]


def llama(layers, *, eos=(0, 1), pad=None, seed=0, positions=512, vocab=VOCAB, **gen):
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    eos = list(eos) if isinstance(eos, tuple) else eos
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=64, intermediate_size=128,
                      num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                      bos_token_id=0, eos_token_id=eos, pad_token_id=pad,
                      max_position_embeddings=positions)
    m = LlamaForCausalLM(cfg).eval()
    m.generation_config = GenerationConfig(bos_token_id=0, eos_token_id=eos, pad_token_id=pad,
                                           **gen)
    return m


def gpt2(layers, *, positions=1024, seed=0, vocab=VOCAB):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    return GPT2LMHeadModel(GPT2Config(vocab_size=vocab, n_layer=layers, n_embd=32, n_head=2,
                                      n_positions=positions, bos_token_id=0, eos_token_id=0,
                                      pad_token_id=0)).eval()


def save(model, folder, tok=None):
    model.save_pretrained(folder)
    if tok is not None:
        tok.save_pretrained(folder)
    return str(folder)


def prompts_file(path, items):
    path.write_text("".join(json.dumps(i) + "\n" for i in items))
    return str(path)


def small_measure(models, **kw):
    from specnb import measure as M

    args = dict(per_task=0, gammas=(2,), temperatures=(0.0,), max_new_tokens=12, repeats=1,
                warmup=0, pld=False, progress=False, prompts=PROMPTS)
    args.update(kw)
    return M.measure(models=models, **args)


def _tok():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(TOKENIZER)
