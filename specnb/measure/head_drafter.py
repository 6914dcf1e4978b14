"""An EAGLE, EAGLE-3 or MTP head as the drafter of the reference loop
(:func:`specnb.measure.reference_generate` takes it in place of a draft model), run as vLLM
runs it (``vllm/v1/spec_decode/llm_base_proposer.py``, ``propose``): the target's verify pass
also returns the hidden states the head reads; after each round the head runs once over the
newly verified positions (input token x_{i+1}, the target's state h_i; its cache at later
positions is dropped), its last row gives draft 1, and drafts 2..k feed the previous draft and
the head's own state one position further on. The first round drafts nothing: the head has
no target state before the prefill (vLLM's first output token also comes from the prefill).

So that :func:`specnb.measure.measure` (``draft_heads=``, ``specnb measure --draft-head``) can
put a head beside draft models, a drafter also answers as a causal LM where measure asks one
(the target's ``config`` and ``generation_config``, ``device``): called on a whole sequence it
returns the head's step-1 logits aligned as a causal LM's (row p predicts token p + 1: the
head's first pass at position p - 1; row 0 is uniform), which is what teacher forcing's alpha
of a head is (its first draft's agreement; later drafts show in the runs' counted alpha); called
on one token with the cache it returned, it runs one chained step (what ``forward_time`` times).
"""

from __future__ import annotations

import torch

from . import heads as H

__all__ = ["HeadDrafter"]


class HeadDrafter:
    """The reference loop's drafter seam for a head: ``reset()`` before a run,
    ``verify(target, fed, cache)`` (the target's forward, returning logits (1, q, V)),
    ``accepted(n_valid, seq)`` after acceptance (the first ``n_valid`` fed positions were
    verified; ``seq`` (n,) every verified token so far, the new one included) and
    ``propose(k, temperature, generator) -> (drafts (k',), [q_i])`` with k' = 0 in the first
    round. ``register_forward_hook`` reaches the head, so the loop counts head forwards."""

    def __init__(self, head: H.Head, target):
        self.head = head
        self.target = target
        self.config = target.config
        self.generation_config = target.generation_config
        self.reset()

    @classmethod
    def load(cls, path, target, method: str | None = None) -> "HeadDrafter":
        """:func:`specnb.measure.heads.load_head` for ``target``, wrapped."""
        return cls(H.load_head(path, target, method=method), target)

    @property
    def device(self):
        return next(self.target.parameters()).device

    def eval(self):
        self.head.eval()
        return self

    @torch.inference_mode()
    def __call__(self, input_ids, attention_mask=None, cache=None, use_cache=False, **kw):
        """The causal-LM face (see the module docstring): ``.logits`` (1, q, V) and ``.cache``."""
        head = self.head
        if cache is None:
            ids = input_ids[0]
            out, final, aux = H.target_states(self.target, input_ids,
                                              aux_layers=head.aux_layers)
            hid = head.combine(final, aux)
            caches = head.new_caches()
            n = ids.numel()
            ar = torch.arange(n - 1, device=ids.device)
            lg, rec = head(ids[1:], hid[:-1], ar, caches,
                           H._mask(ar[None, :] <= ar[:, None], hid.dtype))
            logits = torch.cat([torch.zeros_like(out.logits[0, :1]), lg])
            return _Out(logits[None], {"caches": caches, "pos": n - 1, "rec": rec[-1:]})
        x = input_ids[0, -1:]
        n_keys = len(cache["caches"][0]) + 1
        lg, rec = head(x, cache["rec"], torch.tensor([cache["pos"]], device=x.device),
                       cache["caches"], torch.zeros(1, 1, 1, n_keys, dtype=rec_dtype(cache),
                                                    device=x.device))
        cache.update(pos=cache["pos"] + 1, rec=rec)
        return _Out(lg[None], cache)

    def register_forward_hook(self, fn):
        return self.head.register_forward_hook(fn)

    def reset(self) -> None:
        self.caches = self.head.new_caches()
        self.n_first = 0      # positions whose first-pass entries are in the caches
        self.pending = []     # combined target states of verified positions not yet run
        self.seq = None
        self._last = None

    def verify(self, target, fed, cache):
        out, final, aux = H.target_states(target, fed, aux_layers=self.head.aux_layers,
                                          cache=cache)
        self._last = self.head.combine(final, aux)
        return out.logits

    def accepted(self, n_valid: int, seq) -> None:
        self.pending.append(self._last[:n_valid])
        self.seq = seq

    def propose(self, k: int, temperature: float, generator=None):
        dev = self.seq.device if self.seq is not None else None
        if self.seq is None or k <= 0:
            return torch.zeros(0, dtype=torch.long, device=dev), []
        for kv in self.caches:
            kv.crop(self.n_first)
        hid = torch.cat(self.pending)
        m, p0 = hid.shape[0], self.n_first
        pos = torch.arange(p0, p0 + m, device=dev)
        keys = torch.arange(p0 + m, device=dev)
        logits, rec = self.head(self.seq[p0 + 1:p0 + m + 1], hid, pos, self.caches,
                                H._mask(keys[None, :] <= pos[:, None], hid.dtype))
        self.n_first, self.pending = p0 + m, []
        lg, h = logits[-1:], rec[-1:]
        drafted, qs = [], []
        for j in range(1, k + 1):
            if temperature > 0:
                qs.append(torch.softmax(lg[0].float() / temperature, -1))
                x = torch.multinomial(qs[-1], 1, generator=generator)
            else:
                x = lg[0].argmax(-1, keepdim=True)
            drafted.append(x)
            if j == k:
                break
            at = p0 + m - 1 + j
            n_keys = len(self.caches[0]) + 1
            lg, h = self.head(x, h, torch.tensor([at], device=dev), self.caches,
                              torch.zeros(1, 1, 1, n_keys, dtype=hid.dtype, device=dev))
        return torch.cat(drafted), qs


def rec_dtype(cache) -> torch.dtype:
    return cache["rec"].dtype


class _Out:
    """What a causal LM's forward returns, as far as measure reads it."""

    def __init__(self, logits, cache):
        self.logits = logits
        self.cache = cache
        self.past_key_values = cache
