"""A reference speculative loop: speculative decoding written out over two causal LMs, with no
``generate()`` machinery, so that its per-round host overhead is what the algorithm needs.

Per round (Leviathan, Kalman & Matias, arXiv 2211.17192 v2, Algorithm 1):

1. the draft proposes k = min(gamma, max_new_tokens - generated - 1) tokens, one forward each,
   with its own KV cache (the first forward of a round feeds what the cache lacks);
2. one target forward over the tokens the target's cache lacks plus the k drafts gives the
   target's distributions at the k + 1 positions (the first round's forward is also the
   prefill, as in transformers' assisted decoding);
3. acceptance: at T = 0 the longest prefix whose drafts equal the target's argmax, then the
   target's argmax (correction or bonus); at T > 0 :func:`accept_resample`;
4. both caches are cropped to the accepted prefix (``DynamicCache.crop``, only when a draft
   was rejected).

The host side is kept lean (its per-round cost is what ``benchmarks/bench_measure_loops.py``
measures): one preallocated token buffer (drafts written into it by one ``torch.cat(out=)``
per round, the target's input a view of it, no concatenation of the sequence); the LM heads
run on the rows the loop reads only (``logits_to_keep``: 1 for a draft forward, k + 1 for the
verify forward, as ``generate`` and assisted decoding ask); at T = 0 one argmax and two host
transfers per round (the target's k + 1 argmax tokens and the fed tokens), the greedy prefix
compared on the host; cache lengths kept on the host and a ``DynamicLayer`` cropped by
narrowing its tensors; a draft model's forwards counted by the loop, not by hooks (a module
with a hook leaves torch's fast call path).

Counted the way transformers' assisted decoding is counted (:func:`specnb.measure.run_generate`):
tokens appended per target forward (accepted drafts + 1) and forward calls; drafts are
capped at ``max_new_tokens - generated - 1`` as transformers caps them, so at T = 0 both loops
run the same rounds. Generation stops after an end-of-sequence token (the target's
``generation_config.eos_token_id``), as ``generate`` does.

Logits processing: none beyond the temperature (pure temperature sampling at T > 0). A target
whose ``generation_config`` sets processors (penalties, top-k, ...) is refused by
:func:`specnb.measure.measure` for this loop.

The rule is written in torch here rather than reused from :mod:`specnb.verify`, whose
``speculative_sample`` draws the draft token itself for n independent steps of one (p, q): in
a loop the draft token is drawn while drafting, before the target runs. The test
(``tests/measure/test_reference.py``) checks both give the same output distribution.
"""

from __future__ import annotations

import contextlib
import inspect
import time

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from .. import _check
from .generate import GenRun, _count_forwards
from .load import _sync

__all__ = ["accept_resample", "accept_greedy", "reference_generate"]


def accept_greedy(logits, drafted, generator=None):
    """T = 0: ``(n, token)``: n = the length of the longest prefix of ``drafted`` (k,) equal to
    the target's argmax of ``logits`` (k + 1, V), token = the argmax at position n."""
    return _greedy_prefix(logits.argmax(-1).tolist(), drafted.tolist())


def _greedy_prefix(best: list, drafted: list) -> tuple:
    """The greedy rule on host lists: ``best`` the target's argmax at the k + 1 positions,
    ``drafted`` the k drafts; ``(n, best[n])`` with n the longest prefix of equal tokens."""
    n = 0
    for d, b in zip(drafted, best):
        if d != b:
            break
        n += 1
    return n, best[n]


def accept_resample(p, q, drafted, generator=None):
    """Leviathan et al.'s rule at T > 0: ``(n, token)``.

    Parameters
    ----------
    p : tensor (k + 1, V), the target's probabilities at the k drafted positions and the bonus.
    q : tensor (k, V), the draft's probabilities the drafts were sampled from.
    drafted : LongTensor (k,).
    generator : torch.Generator on p's device, optional.

    Draft i is accepted while u_i <= p_i(x_i) / q_i(x_i), u_i ~ U[0, 1) (Algorithm 1); at the
    first rejection n the token is drawn from norm(max(0, p_n - q_n)) (from p_n when that is 0
    everywhere); when all k are accepted, the bonus token is drawn from p_k. The output is
    distributed as p (Theorem 3.5 / Appendix A.1).
    """
    k = drafted.numel()
    n = 0
    if k:
        idx = torch.arange(k, device=p.device)
        ratio = p[idx, drafted] / q[idx, drafted]
        u = torch.rand(k, generator=generator, device=p.device)
        n = int((u <= ratio).cumprod(0).sum())
    if n < k:
        dist = torch.clamp(p[n] - q[n], min=0.0)
        if not dist.sum() > 0:
            dist = p[n]
    else:
        dist = p[k]
    return n, int(torch.multinomial(dist / dist.sum(), 1, generator=generator))


def _crop(cache, have: int, keep: int) -> None:
    """Keep the first ``keep`` of the ``have`` positions of ``cache``: what
    ``DynamicCache.crop(keep - have)`` does (transformers 5.x's ``crop`` takes the number of
    tokens to remove, as a negative int), with a plain ``DynamicLayer``'s keys and values
    narrowed in place of its ``crop`` (the same views, in about half the host time); any other
    layer kind is cropped by its own ``crop``."""
    if have <= keep:
        return
    for layer in cache.layers:
        if type(layer) is DynamicLayer:
            if layer.is_initialized:
                layer.keys = layer.keys.narrow(-2, 0, keep)
                layer.values = layer.values.narrow(-2, 0, keep)
        else:
            layer.crop(keep - have)


def _eos_ids(model) -> set:
    e = getattr(model.generation_config, "eos_token_id", None)
    return set() if e is None else set(e if isinstance(e, (list, tuple)) else [e])


_KEEPS: dict = {}


def _keeps_logits(model) -> bool:
    """Whether ``model``'s forward takes ``logits_to_keep`` (transformers' causal LMs do: the
    LM head then runs on the last rows only, as ``generate`` and assisted decoding ask it to);
    cached per class (the signature check costs as much as a few rounds)."""
    cls = type(model)
    if cls not in _KEEPS:
        try:
            _KEEPS[cls] = "logits_to_keep" in inspect.signature(model.forward).parameters
        except (TypeError, ValueError):
            _KEEPS[cls] = False
    return _KEEPS[cls]


_HOOK_DICTS = ("_global_backward_pre_hooks", "_global_backward_hooks",
               "_global_forward_hooks", "_global_forward_pre_hooks")


def _forward_of(model):
    """What the loop calls for ``model``'s forward: ``model.forward`` itself where torch's
    ``Module.__call__`` would call only that (an ``nn.Module`` with no hooks of its own or
    global ones, not compiled, not traced; read once per run), so that a round does not pay
    ``__call__``'s checks once per draft; otherwise the module (hooks run as they would)."""
    mod = torch.nn.modules.module
    if (isinstance(model, torch.nn.Module) and not torch._C._get_tracing_state()
            and getattr(model, "_compiled_call_impl", None) is None
            and not (model._forward_hooks or model._forward_pre_hooks or model._backward_hooks
                     or model._backward_pre_hooks)
            and all(getattr(mod, n, None) == {} for n in _HOOK_DICTS)):
        return model.forward
    return model


@torch.inference_mode()
def reference_generate(target, draft, input_ids, *, gamma: int, max_new_tokens: int,
                       temperature: float = 0.0, seed: int = 0, rule=None) -> GenRun:
    """One timed run of the reference loop (batch size 1); the same :class:`GenRun` as
    :func:`specnb.measure.run_generate` (tokens, wall seconds, tokens appended per target
    forward, target and draft forwards counted).

    Parameters
    ----------
    target, draft : causal LMs with one vocabulary, on one device.
    input_ids : 1-D LongTensor, the prompt.
    gamma : int >= 1, drafts per round; max_new_tokens : int >= 1.
    temperature : float >= 0 (0: greedy); seed : int >= 0, seeds sampling.
    rule : callable ``(p, q, drafted, generator) -> (n, token)`` at T > 0, optional
        (default :func:`accept_resample`; tests pass a wrong rule to show the test catches it).

    ``draft`` may instead be a drafter (an object with ``propose``, such as
    :class:`specnb.measure.head_drafter.HeadDrafter` for EAGLE / MTP heads): it drafts, runs
    the target's verify forward (``verify``) and hears what was accepted (``accepted``); its
    forwards are counted by hooks, a draft model's by the loop itself (no hook, so that
    torch's module call keeps its fast path).

    Raises
    ------
    ValueError
        gamma < 1, max_new_tokens < 1, temperature < 0, seed < 0.
    """
    g = _check.scalar_int("gamma", gamma, lo=1)
    mnt = _check.scalar_int("max_new_tokens", max_new_tokens, lo=1)
    t = _check.scalar_real("temperature", temperature, lo=0.0)
    _check.scalar_int("seed", seed, lo=0)
    dev = target.device
    gen = torch.Generator(device=dev).manual_seed(int(seed)) if t > 0 else None
    rule = rule or accept_resample
    eos = _eos_ids(target)
    prompt = input_ids.to(dev).reshape(-1)
    # One token buffer for the whole run: drafts are written where they would be appended, the
    # target reads its input as a view, and an accepted prefix needs no copy (no torch.cat of
    # the sequence per round). ``cols`` are its generated positions as (1, 1) views, made once
    # (one unbind): a greedy draft is written by its argmax (``out=``) and is the next draft
    # input as it stands; the new token is written by one ``fill_``. At T = 0 one host
    # transfer of the target's argmax and one of the fed tokens per round; cache lengths are
    # kept on the host (no get_seq_length).
    start = prompt.numel()
    buf = prompt.new_zeros((1, start + mnt + g))
    buf[0, :start] = prompt
    cols = buf.view(-1, 1, 1)[start:].unbind(0)  # (1, 1) views of buf, a fifth cheaper than split
    cur = start  # tokens in the sequence so far
    drafter = draft if hasattr(draft, "propose") else None  # the drafter seam (heads)
    if drafter is not None:
        drafter.reset()
    # the LM head on the rows the loop reads only (as generate: 1 for a draft, k + 1 to verify)
    dkeep = drafter is None and _keeps_logits(draft)
    tkeep = drafter is None and _keeps_logits(target)
    dkw = {"use_cache": True, **({"logits_to_keep": 1} if dkeep else {})}
    tkw = {"use_cache": True}
    tcache, dcache = DynamicCache(), DynamicCache()
    t_len = d_len = 0   # positions each cache holds that the next forward keeps
    d_have = 0          # positions in the draft's cache
    out, lengths, tcount, dcount = [], [], [0], [0]
    hooks = ((_count_forwards(target, tcount), _count_forwards(draft, dcount))
             if drafter is not None else (contextlib.nullcontext(),) * 2)
    with hooks[0], hooks[1]:
        tfwd = _forward_of(target)
        dfwd = _forward_of(draft) if drafter is None else None
        _sync(dev)
        t0 = time.perf_counter()
        while len(out) < mnt:
            k = min(g, mnt - len(out) - 1)
            if drafter is not None:
                proposed, qs = drafter.propose(k, t, gen)
                k = proposed.numel()
                if k:
                    buf[0, cur:cur + k] = proposed
            elif k:
                # the draft's cache lacks one token (a round after a rejection) or two (after
                # all k were accepted: the last draft and the bonus), the prompt in round 1
                inp = (cols[d_len - start] if cur - d_len == 1 and d_len >= start
                       else buf[:, d_len:cur])
                if t > 0:
                    qs, drafted = [], []
                    for _ in range(k):
                        lg = dfwd(input_ids=inp, cache=dcache, **dkw).logits
                        qs.append(torch.softmax(lg[0, -1].float() / t, -1))
                        inp = torch.multinomial(qs[-1], 1, generator=gen)[None]
                        drafted.append(inp)
                    torch.cat(drafted, 1, out=buf[:, cur:cur + k])  # one write per round
                else:
                    for j in range(cur - start, cur - start + k):
                        lg = dfwd(input_ids=inp, cache=dcache, **dkw).logits
                        if not dkeep and lg.shape[1] != 1:
                            lg = lg[:, -1:]
                        inp = cols[j]
                        torch.argmax(lg, -1, out=inp)  # the draft, in place, and the next input
                dcount[0] += k
                d_have = cur + k - 1  # the last draft is not fed to the draft
            fed = buf[:, t_len:cur + k]
            if drafter is not None:
                logits = drafter.verify(target, fed, tcache)
            else:
                if tkeep:
                    tkw["logits_to_keep"] = k + 1
                logits = tfwd(input_ids=fed, cache=tcache, **tkw).logits
                tcount[0] += 1
            cand = fed.tolist()[0][-k:] if k else []
            if t > 0:
                n, tok = rule(torch.softmax(logits[0, -(k + 1):].float() / t, -1),
                              torch.stack(qs) if qs else None, buf[0, cur:cur + k], gen)
            else:
                if not tkeep and logits.shape[1] != k + 1:  # argmax the rows read only
                    logits = logits[:, -(k + 1):]
                n, tok = _greedy_prefix(logits.argmax(-1).tolist()[0], cand)
            new = cand[:n]
            new.append(tok)
            if len(new) > mnt - len(out):
                new = new[:mnt - len(out)]
            stop = bool(eos) and not eos.isdisjoint(new)
            if stop:
                new = new[:next(j for j, x in enumerate(new) if x in eos) + 1]
            base = cur
            out += new
            lengths.append(len(new))
            if stop or len(out) >= mnt:
                break
            cols[base + n - start].fill_(tok)  # buf[0, base + n] = tok; the drafts are in place
            cur = base + n + 1
            if drafter is not None:
                drafter.accepted(base - t_len + n, buf[0, :cur].clone())
            t_len = base + n  # cached: old sequence + accepted drafts; the new token is fed next
            _crop(tcache, base + k, t_len)  # the target's cache holds the k drafts
            d_len = min(d_have, t_len)
            _crop(dcache, d_have, d_len)
            d_have = d_len
        _sync(dev)
        wall = time.perf_counter() - t0
    return GenRun(out, wall, lengths, tcount[0], dcount[0])
