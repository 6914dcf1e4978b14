"""Drive vLLM's own n-gram and suffix proposers on a corpus of token sequences and write what
they propose, stepped as the engine steps them, to ``proposals.jsonl``.

Run with the oracle's virtualenv (``make oracle`` does it)::

    .venv-vllm-0.33.0/bin/python oracle/drive_proposals.py --out tests/cases/vllm/0.33.0

Driven, each on the same seeded corpus (``corpus`` lines: prompt and response ids):

* ``ngram``: ``vllm.v1.spec_decode.ngram_proposer.NgramProposer`` (numba-compiled, as
  served), constructed from a config stand-in and called through ``propose`` on a batch of
  every unfinished request per step, exactly as ``gpu_model_runner.propose_draft_token_ids``
  calls it (``sampled_token_ids``, ``num_tokens_no_spec``, ``token_ids_cpu``);
  plus single calls of ``_find_longest_matched_ngram_and_propose_tokens`` on every prefix
  (``call`` lines), with and without ``max_model_len`` reached;
* ``ngram_gpu``: ``NgramGPUKernel._find_first_and_extract_all_n_parallel`` (the kernel's
  matching, pure torch, run on the CPU) on every prefix (``call`` lines);
* ``suffix_calls``: arctic-inference's ``SuffixDecodingCache`` itself on seeded
  small-vocabulary requests (ties, evictions), every ``speculate`` call's tokens and score;
* ``suffix``: ``vllm.v1.spec_decode.suffix_decoding.SuffixDecodingProposer.propose`` over
  arctic-inference's real ``SuffixDecodingCache`` (its C++ suffix tree built from the sdist by
  ``oracle/build_arctic_suffix.sh``), the requests one after another in corpus order (the
  replay's model), with an input-batch stand-in holding what the runner's ``InputBatch``
  holds.

``stepped`` lines: per (method, settings, gamma) every request's steps ``[T, d, a]`` (context,
draft length, accepted: the draft's agreement with the response, never past its end; the step
appends a + 1) and the summed counters. specnb.replay must give the same integers
(``tests/replay/test_oracle_proposals.py``).
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np

HERE = Path(__file__).resolve().parent
FORMAT = 1


def make_corpus(seed: int = 0) -> list[dict]:
    """Seeded requests whose responses repeat parts of their prompts and of earlier responses
    (what n-gram and suffix drafts feed on), plus edge cases: a one-token response, a prompt
    shorter than the n-gram, long exact copies."""
    rng = random.Random(seed)
    out, earlier = [], []
    for i in range(24):
        vocab = rng.choice([4, 12, 50, 300])
        plen = rng.choice([1, 3, 9, 40, 120])
        prompt = [rng.randrange(vocab) for _ in range(plen)]
        resp = []
        rlen = rng.choice([1, 2, 8, 30, 90])
        while len(resp) < rlen:
            r = rng.random()
            src = prompt + resp
            if r < 0.35 and len(src) > 3:
                j = rng.randrange(len(src) - 2)
                resp += src[j:j + rng.randint(2, 12)]
            elif r < 0.55 and earlier:
                e = rng.choice(earlier)
                j = rng.randrange(len(e))
                resp += e[j:j + rng.randint(2, 12)]
            else:
                resp.append(rng.randrange(vocab))
        resp = resp[:rlen]
        earlier.append(resp)
        out.append({"id": f"r{i:02d}", "prompt_ids": prompt, "response_ids": resp})
    return out


def _step_batch(corpus, propose, gamma):
    """Step every request as the engine does, one batched propose per step. ``propose(live,
    num_tokens, token_rows, sampled)`` returns one draft per live request."""
    fulls = [r["prompt_ids"] + r["response_ids"] for r in corpus]
    T = [len(r["prompt_ids"]) + 1 for r in corpus]
    sampled = [fulls[i][len(r["prompt_ids"]):T[i]] for i, r in enumerate(corpus)]
    steps = [[] for _ in corpus]
    while True:
        live = [i for i in range(len(corpus)) if T[i] < len(fulls[i])]
        if not live:
            break
        drafts = propose(live, [T[i] for i in live], [fulls[i][:T[i]] for i in live],
                         [sampled[i] for i in live])
        for i, d in zip(live, drafts):
            d = [int(x) for x in d]
            a = 0
            for x, y in zip(d, fulls[i][T[i]:]):
                if x != y:
                    break
                a += 1
            steps[i].append([T[i], len(d), a])
            new = min(T[i] + a + 1, len(fulls[i]))
            sampled[i] = fulls[i][T[i]:new]
            T[i] = new
    return steps


def _counters(steps, gamma):
    flat = [s for req in steps for s in req]
    return {"num_steps": len(flat), "num_drafts": sum(1 for s in flat if s[1] > 0),
            "num_draft_tokens": sum(s[1] for s in flat),
            "num_accepted_tokens": sum(s[2] for s in flat),
            "num_accepted_tokens_per_pos": [sum(1 for s in flat if s[2] > i)
                                            for i in range(gamma)],
            "num_draft_tokens_per_pos": [sum(1 for s in flat if s[1] > i)
                                         for i in range(gamma)]}


def drive_ngram(corpus, lo, hi, gamma, max_model_len):
    from vllm.v1.spec_decode.ngram_proposer import NgramProposer

    cfg = SimpleNamespace(
        speculative_config=SimpleNamespace(prompt_lookup_min=lo, prompt_lookup_max=hi,
                                           num_speculative_tokens=gamma),
        model_config=SimpleNamespace(max_model_len=max_model_len),
        scheduler_config=SimpleNamespace(max_num_seqs=len(corpus)),
        parallel_config=SimpleNamespace(tensor_parallel_size=1))
    prop = NgramProposer(cfg)

    def propose(live, num_tokens, rows, sampled):
        buf = np.zeros((len(live), max_model_len), dtype=np.int32)
        for j, row in enumerate(rows):
            buf[j, :len(row)] = row
        return prop.propose(gamma, sampled, np.array(num_tokens, dtype=np.int32), buf)

    return _step_batch(corpus, propose, gamma)


def ngram_calls(corpus, lo, hi, k, max_model_len):
    from vllm.v1.spec_decode.ngram_proposer import _find_longest_matched_ngram_and_propose_tokens
    out = []
    for r in corpus[:12]:
        full = np.array(r["prompt_ids"] + r["response_ids"], dtype=np.int32)
        drafts = [_find_longest_matched_ngram_and_propose_tokens(
            full[:T], lo, hi, max_model_len, k).tolist() for T in range(1, full.size + 1)]
        out.append({"id": r["id"], "drafts": drafts})
    return out


def ngram_gpu_calls(corpus, lo, hi, k):
    import torch
    from vllm.v1.spec_decode.ngram_proposer_gpu import NgramGPUKernel
    fn = NgramGPUKernel._find_first_and_extract_all_n_parallel
    out = []
    for r in corpus[:12]:
        full = r["prompt_ids"] + r["response_ids"]
        n = len(full)
        # row T-1: the prefix full[:T], padded as the runner's max_model_len-wide buffer is
        rows = torch.tensor([full[:t] + [0] * (n + hi + k - t) for t in range(1, n + 1)],
                            dtype=torch.int32)
        lens = torch.arange(1, n + 1, dtype=torch.int32)
        res = fn(None, rows, lens, lo, hi, k)
        mask = lens >= lo  # the kernel's combined_mask (num_tokens >= min_n)
        drafts = []
        for t in range(n):
            row = res[t].tolist() if bool(mask[t]) else [-1] * k
            valid = 0
            while valid < k and row[valid] != -1:
                valid += 1
            drafts.append(row[:valid])
        out.append({"id": r["id"], "drafts": drafts})
    return out


def drive_suffix(corpus, gamma, depth, factor, pmin, cached, max_model_len):
    from vllm.v1.spec_decode.suffix_decoding import SuffixDecodingProposer

    cfg = SimpleNamespace(
        speculative_config=SimpleNamespace(
            num_speculative_tokens=gamma, suffix_decoding_max_tree_depth=depth,
            suffix_decoding_max_spec_factor=factor, suffix_decoding_min_token_prob=pmin,
            suffix_decoding_max_cached_requests=cached),
        model_config=SimpleNamespace(max_model_len=max_model_len))
    prop = SuffixDecodingProposer(cfg)
    steps = []
    for r in corpus:  # one request at a time, in corpus order
        full = r["prompt_ids"] + r["response_ids"]
        P, n = len(r["prompt_ids"]), len(full)
        T, sampled, req = P + 1, full[P:P + 1], []
        while True:
            batch = SimpleNamespace(
                req_ids=[r["id"]], req_id_to_index={r["id"]: 0},
                num_tokens_no_spec=np.array([T], dtype=np.int32),
                num_prompt_tokens=np.array([P], dtype=np.int32),
                token_ids_cpu=np.array([full[:T] + [0] * (max_model_len - T)], dtype=np.int32))
            draft = prop.propose(gamma, batch, [sampled])[0]
            if T >= n:  # the last step's tokens went into the trees; its draft is unused
                break
            a = 0
            for x, y in zip(draft, full[T:]):
                if x != y:
                    break
                a += 1
            req.append([T, len(draft), a])
            new = min(T + a + 1, n)
            sampled, T = full[T:new], new
        steps.append(req)
    # the next batch without the request stops it (SuffixDecodingProposer.propose)
    return steps


def suffix_calls(seed: int = 0, trials: int = 120):
    """SuffixDecodingCache driven directly on seeded small-vocabulary requests (many ties,
    evictions, implicit leaves): every speculate call's tokens and float32 score."""
    from arctic_inference.suffix_decoding import SuffixDecodingCache
    rng = random.Random(seed)
    out = []
    for _ in range(trials):
        depth = rng.choice([3, 4, 6, 24])
        cached = rng.choice([-1, 0, 1, 2, 3])
        vocab = rng.choice([2, 3, 5, 20])
        cache = SuffixDecodingCache(max_tree_depth=depth, max_cached_requests=cached)
        reqs = []
        for r in range(rng.randint(1, 5)):
            prompt = [rng.randrange(vocab) for _ in range(rng.randint(1, 30))]
            cache.start_request(r, np.array(prompt, dtype=np.int32))
            seq, calls = list(prompt), []
            for _ in range(rng.randint(1, 20)):
                toks = [rng.randrange(vocab) for _ in range(rng.randint(1, 3))]
                cache.add_active_response(r, np.array(toks, dtype=np.int32))
                seq += toks
                k, f, p = rng.choice([1, 3, 5, 24]), rng.choice([1.0, 0.5, 2.0]), \
                    rng.choice([0.1, 0.0, 0.3])
                d = cache.speculate(r, np.array(seq[-depth:], dtype=np.int32),
                                    max_spec_tokens=k, max_spec_factor=f, min_token_prob=p)
                calls.append({"add": toks, "k": k, "factor": f, "min_prob": p,
                              "draft": list(d.token_ids), "score": float(d.score)})
            cache.stop_request(r)
            reqs.append({"prompt": prompt, "calls": calls})
        out.append({"depth": depth, "cached": cached, "requests": reqs})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--arctic", type=Path, default=None,
                    help="folder holding the built arctic_inference.suffix_decoding "
                         "(oracle/build_arctic_suffix.sh); default VENV/arctic-suffix")
    args = ap.parse_args(argv)
    import vllm
    arctic = args.arctic or Path(sys.prefix) / "arctic-suffix"
    lines = []
    corpus = make_corpus()
    lines.append({"kind": "corpus", "name": "seeded-0", "requests": corpus})
    mml = 4096
    for lo, hi in ((1, 1), (2, 4), (3, 5), (5, 5)):
        for g in (1, 3, 5):
            steps = drive_ngram(corpus, lo, hi, g, mml)
            lines.append({"kind": "stepped", "method": "ngram", "gamma": g,
                          "params": {"prompt_lookup_min": lo, "prompt_lookup_max": hi},
                          "steps": steps, "counters": _counters(steps, g)})
    # max_model_len reached: drafts shortened to max_model_len - num_tokens
    for k, cap in ((5, 60), (3, 131)):
        lines.append({"kind": "call", "method": "ngram", "k": k, "max_model_len": cap,
                      "params": {"prompt_lookup_min": 2, "prompt_lookup_max": 4},
                      "requests": ngram_calls(corpus, 2, 4, k, cap)})
    lines.append({"kind": "call", "method": "ngram", "k": 4, "max_model_len": mml,
                  "params": {"prompt_lookup_min": 1, "prompt_lookup_max": 3},
                  "requests": ngram_calls(corpus, 1, 3, 4, mml)})
    for lo, hi, k in ((2, 4, 5), (1, 3, 3)):
        lines.append({"kind": "call", "method": "ngram_gpu", "k": k,
                      "params": {"prompt_lookup_min": lo, "prompt_lookup_max": hi},
                      "requests": ngram_gpu_calls(corpus, lo, hi, k)})
    suffix = "not driven"
    if (arctic / "arctic_inference" / "suffix_decoding").is_dir():
        sys.path.insert(0, str(arctic))
        suffix = (arctic / "VERSION").read_text().strip()
        for g, depth, factor, pmin, cached in ((1, 24, 1.0, 0.1, 10000), (3, 24, 1.0, 0.1, 10000),
                                               (5, 24, 1.0, 0.1, 10000), (5, 8, 2.0, 0.0, 3),
                                               (24, 24, 1.0, 0.1, 0), (4, 6, 0.5, 0.3, -1),
                                               (3, 24, 1.0, 0.1, 1)):
            steps = drive_suffix(corpus, g, depth, factor, pmin, cached, mml)
            lines.append({"kind": "stepped", "method": "suffix", "gamma": g,
                          "params": {"suffix_decoding_max_tree_depth": depth,
                                     "suffix_decoding_max_spec_factor": factor,
                                     "suffix_decoding_min_token_prob": pmin,
                                     "suffix_decoding_max_cached_requests": cached},
                          "steps": steps, "counters": _counters(steps, g)})
        lines.append({"kind": "suffix_calls", "method": "suffix", "caches": suffix_calls()})
    head = {"kind": "meta", "format": FORMAT, "vllm": vllm.__version__,
            "arctic_inference": suffix,
            "numba": __import__("numba").__version__,
            "driver": "oracle/drive_proposals.py"}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "proposals.jsonl"
    path.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n"
                            for x in [head] + lines))
    print(f"wrote {path}: {len(lines)} lines (vLLM {vllm.__version__}, arctic-inference "
          f"{suffix})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
