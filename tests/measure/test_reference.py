"""specnb.measure.reference: the reference speculative loop.

* the accept/resample rule on a small vocabulary: its output is distributed as p, as
  specnb.verify's reference rule; replaced by the draft's residual it is not (fast);
* every emitted token at T = 1 with gamma 2 and 3 on stand-in chains whose p and q rows
  differ at every position: the joint distribution of the output is the target's; a bonus
  drawn from the wrong row, or a residual at the wrong position, fails (fast);
* on the bundled pair (slow): greedy output token-identical to plain greedy generation on every
  bundled prompt at several gammas; rounds, target and draft forwards counted as transformers'
  assisted decoding counts them (identical at T = 0); at T = 1 the first generated token over
  many seeds distributed as the target's p and as plain sampling's, a test that fails when the
  residual is replaced by the draft's distribution (parametrized).
"""

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from specnb import verify  # noqa: E402
from specnb.measure import reference as R  # noqa: E402


def draft_residual(p, q, drafted, generator=None):
    """The wrong rule: on rejection resample from the draft's q instead of norm(max(0, p - q))
    (what a lenient verifier's output amounts to: distributed as min(p, q) + (1 - beta) q)."""
    k = drafted.numel()
    n = 0
    if k:
        idx = torch.arange(k)
        u = torch.rand(k, generator=generator)
        n = int((u <= p[idx, drafted] / q[idx, drafted]).cumprod(0).sum())
    dist = q[n] if n < k else p[k]
    return n, int(torch.multinomial(dist, 1, generator=generator))


RULES = {"leviathan": (R.accept_resample, True), "draft_residual": (draft_residual, False)}


def pvalue(z: float) -> float:
    """Upper tail of the standard normal (verify.chi_square's Wilson-Hilferty z)."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def pooled(p: np.ndarray, n: int, min_expected: float = 5.0):
    """Categories: every token with n p >= min_expected, the rest pooled as one; returns
    (map token -> category, category probabilities)."""
    keep = np.flatnonzero(n * p >= min_expected)
    cat = np.full(p.size, keep.size)
    cat[keep] = np.arange(keep.size)
    probs = np.append(p[keep], max(0.0, 1.0 - p[keep].sum()))
    return cat, probs / probs.sum()


def two_sample_pvalue(a: np.ndarray, b: np.ndarray, k: int) -> float:
    """Chi-square test of homogeneity of two samples of categories in [0, k) (Wilson-Hilferty
    upper tail)."""
    table = np.stack([np.bincount(a, minlength=k), np.bincount(b, minlength=k)]).astype(float)
    table = table[:, table.sum(0) > 0]
    exp = table.sum(1, keepdims=True) * table.sum(0, keepdims=True) / table.sum()
    chi2, dof = float(((table - exp) ** 2 / exp).sum()), table.shape[1] - 1
    v = 2.0 / (9.0 * dof)
    return pvalue((np.cbrt(chi2 / dof) - (1.0 - v)) / np.sqrt(v))


@pytest.mark.slow  # 6000 draws a rule (seconds); the fast tier checks the rule in gamma_2 below
@pytest.mark.parametrize("rule", list(RULES))
def test_rule_output_distribution_small_vocabulary(rule):
    fn, lossless = RULES[rule]
    p = np.array([0.45, 0.25, 0.15, 0.10, 0.05])
    q = np.array([0.05, 0.10, 0.15, 0.30, 0.40])
    pt, qt = torch.tensor(np.stack([p, p])), torch.tensor(q[None])
    gen = torch.Generator().manual_seed(0)
    out = []
    for _ in range(6000):
        x = torch.multinomial(qt[0], 1, generator=gen)
        n, tok = fn(pt, qt, x, gen)
        out.append(int(x) if n == 1 else tok)
    z = verify.chi_square(np.array(out), p)["z"]
    ref, _ = verify.speculative_sample(p, q, 6000, np.random.default_rng(0))
    same_as_verify = two_sample_pvalue(np.array(out), ref, p.size)
    if lossless:
        assert abs(z) < 4 and same_as_verify > 1e-3
    else:
        assert z > 8 and same_as_verify < 1e-6


def test_greedy_rule_prefix_and_bonus():
    logits = torch.tensor([[0.0, 2.0, 1.0], [3.0, 0.0, 1.0], [0.0, 0.0, 5.0]])
    assert R.accept_greedy(logits, torch.tensor([1, 0])) == (2, 2)   # both accepted, bonus
    assert R.accept_greedy(logits, torch.tensor([1, 2])) == (1, 0)   # correction at 1
    assert R.accept_greedy(logits, torch.tensor([0, 0])) == (0, 1)
    assert R.accept_greedy(logits[:1], torch.tensor([], dtype=torch.long)) == (0, 1)


def test_bad_arguments_named():
    with pytest.raises(ValueError, match="gamma"):
        R.reference_generate(None, None, torch.tensor([1]), gamma=0, max_new_tokens=4)
    with pytest.raises(ValueError, match="temperature"):
        R.reference_generate(None, None, torch.tensor([1]), gamma=1, max_new_tokens=4,
                             temperature=-1)


# ------------------------------------------- every emitted token at T > 0, gamma >= 2 (R5)
class Markov(torch.nn.Module):
    """A stand-in causal LM whose next-token distribution depends on the current token
    (row ``logp[x]``), so that every position of a round has its own p (target) or q (draft)
    row. It fills the DynamicCache it is given with one dummy position per input token, so
    the loop's cache bookkeeping (lengths, crops) runs as with a real model."""

    def __init__(self, probs):
        super().__init__()
        self.logp = torch.log(torch.tensor(probs, dtype=torch.float64))
        self.anchor = torch.nn.Parameter(torch.zeros(1))
        self.generation_config = type("GC", (), {"eos_token_id": None})()

    @property
    def device(self):
        return torch.device("cpu")

    def forward(self, input_ids, cache=None, use_cache=True, **_):
        n = input_ids.shape[1]
        if cache is not None:
            z = torch.zeros(1, 1, n, 1)
            cache.update(z, z, 0)
        return type("Out", (), {"logits": self.logp[input_ids]})()


# target p(next | current) and draft q(next | current): every row different, q far from p
P_ROWS = [[0.70, 0.20, 0.10], [0.10, 0.60, 0.30], [0.25, 0.15, 0.60]]
Q_ROWS = [[0.20, 0.50, 0.30], [0.50, 0.10, 0.40], [0.60, 0.30, 0.10]]


def bonus_from_the_last_draft_row(p, q, drafted, generator=None):
    """Wrong: when every draft is accepted, the bonus comes from p[k - 1], not p[k]."""
    n, tok = R.accept_resample(p, q, drafted, generator)
    k = drafted.numel()
    if n == k and k:
        tok = int(torch.multinomial(p[k - 1], 1, generator=generator))
    return n, tok


def residual_at_the_first_row(p, q, drafted, generator=None):
    """Wrong: the residual after a rejection at n >= 1 uses row 0, not row n."""
    n, tok = R.accept_resample(p, q, drafted, generator)
    if 0 < n < drafted.numel():
        d = torch.clamp(p[0] - q[0], min=0.0)
        tok = int(torch.multinomial(d / d.sum(), 1, generator=generator))
    return n, tok


SEQUENCE_RULES = {"leviathan": (R.accept_resample, True),
                  "bonus_row": (bonus_from_the_last_draft_row, False),
                  "residual_row": (residual_at_the_first_row, False)}
N_SEQ = 600


@pytest.fixture(scope="module")
def markov_pair():
    torch.set_num_threads(1)  # tiny tensors: threads only add overhead
    return Markov(P_ROWS), Markov(Q_ROWS)


def _sequence_test(markov_pair, gamma, rule):
    """gamma + 1 tokens after the prompt token 0, at T = 1: one round of gamma drafts, then
    accepted drafts and a bonus from p[gamma] (all accepted) or a residual at the rejected
    position. Their joint distribution must be the target chain's, prod_i p(x_i | x_(i-1))
    (chi-square over all sequences, the rare ones pooled)."""
    import itertools

    fn, lossless = SEQUENCE_RULES[rule]
    target, draft = markov_pair
    a = np.array(P_ROWS)
    n_tok = gamma + 1
    seqs = list(itertools.product(range(3), repeat=n_tok))
    probs = np.array([np.prod([a[x0, x1] for x0, x1 in zip((0,) + sq[:-1], sq)])
                      for sq in seqs])
    index = {sq: i for i, sq in enumerate(seqs)}
    got = np.array([index[tuple(R.reference_generate(
        target, draft, torch.tensor([0]), gamma=gamma, max_new_tokens=n_tok, temperature=1.0,
        seed=s, rule=fn).tokens)] for s in range(N_SEQ)])
    cat, pooled_p = pooled(probs, N_SEQ)
    z = verify.chi_square(cat[got], pooled_p)["z"]
    if lossless:
        assert abs(z) < 4, z
    else:
        assert z > 6, z


@pytest.mark.fast_sample(every=3)  # make check: the lossless rule
@pytest.mark.parametrize("rule", list(SEQUENCE_RULES))
def test_every_emitted_token_is_distributed_as_the_target_gamma_2(markov_pair, rule):
    """gamma 2: the bonus row and the residual at the rejected position each decide a test."""
    _sequence_test(markov_pair, 2, rule)


@pytest.mark.slow
@pytest.mark.parametrize("rule", list(SEQUENCE_RULES))
def test_every_emitted_token_is_distributed_as_the_target_gamma_3(markov_pair, rule):
    _sequence_test(markov_pair, 3, rule)


# ----------------------------------------------------------------------------- bundled pair
MAX_NEW = 32


@pytest.fixture(scope="module")
def encoded(models):
    from specnb import measure as M

    items = M.load_prompts(per_task=0)
    return items, M.encode_prompts(models["target"][1], items, max_new_tokens=MAX_NEW,
                                   context=256)


@pytest.mark.slow
def test_greedy_token_identical_on_every_bundled_prompt(models, encoded):
    from specnb import measure as M

    tgt = models["target"][0]
    items, ids = encoded
    assert len(items) == 36
    mismatched = []
    for dname, (dm, _) in models["drafts"].items():
        for i, x in enumerate(ids):
            plain = M.run_generate(tgt, x, max_new_tokens=MAX_NEW).tokens
            assert len(plain) == MAX_NEW or plain[-1] == 0
            for g in ((1, 2, 5, 8) if dname == "draft-2x128" else (3,)):
                run = R.reference_generate(tgt, dm, x, gamma=g, max_new_tokens=MAX_NEW)
                if run.tokens != plain:
                    mismatched.append((dname, items[i]["id"], g))
    assert mismatched == []


@pytest.mark.slow
@pytest.mark.parametrize("gamma", [1, 3, 6])
def test_counts_as_transformers_counts(models, encoded, gamma):
    """Rounds = target forwards = streamed chunks, tokens = sum of accepted-per-round; at T = 0
    the reference loop and transformers' assisted decoding run the very same rounds."""
    from specnb import measure as M

    tgt = models["target"][0]
    dm = models["drafts"]["draft-1x64"][0]
    _, ids = encoded
    for x in ids[::9]:
        ref = R.reference_generate(tgt, dm, x, gamma=gamma, max_new_tokens=MAX_NEW)
        hf = M.run_generate(tgt, x, max_new_tokens=MAX_NEW, draft=dm, gamma=gamma)
        assert sum(ref.accept_lengths) == len(ref.tokens) == MAX_NEW
        assert ref.target_forwards == len(ref.accept_lengths)
        assert max(ref.accept_lengths) <= gamma + 1
        assert ref.accept_lengths == hf.accept_lengths
        assert (ref.target_forwards, ref.draft_forwards) == (hf.target_forwards,
                                                             hf.draft_forwards)
    # at T = 1 too, every round appends accepted drafts + 1 and one target forward
    run = R.reference_generate(tgt, dm, ids[0], gamma=gamma, max_new_tokens=MAX_NEW,
                               temperature=1.0, seed=3)
    assert sum(run.accept_lengths) == len(run.tokens)
    assert run.target_forwards == len(run.accept_lengths)


N_SEEDS = 1500


@pytest.fixture(scope="module")
def first_token(models, encoded):
    """The target's exact next-token distribution p at T = 1 after prompt 0, and plain
    sampling's first token over N_SEEDS seeds (transformers' generate)."""
    from specnb import measure as M

    tgt = models["target"][0]
    x = encoded[1][0]
    with torch.inference_mode():
        p = torch.softmax(tgt(input_ids=x[None]).logits[0, -1].double(), -1).numpy()
    plain = np.array([M.run_generate(tgt, x, max_new_tokens=1, temperature=1.0,
                                     seed=s).tokens[0] for s in range(N_SEEDS)])
    return x, p / p.sum(), plain


@pytest.mark.slow
@pytest.mark.parametrize("rule", list(RULES))
def test_sampling_matches_plain_sampling(models, first_token, rule):
    """At T = 1 the first token (drafted by draft-1x64 at gamma 1, then accepted or resampled)
    over many seeds: chi-square against the target's p and against plain sampling. The
    Leviathan rule passes both; the draft's residual fails both."""
    fn, lossless = RULES[rule]
    tgt = models["target"][0]
    dm = models["drafts"]["draft-1x64"][0]
    x, p, plain = first_token
    toks = np.array([R.reference_generate(tgt, dm, x, gamma=1, max_new_tokens=2,
                                          temperature=1.0, seed=s, rule=fn).tokens[0]
                     for s in range(N_SEEDS)])
    cat, probs = pooled(p, N_SEEDS)
    p_fit = pvalue(verify.chi_square(cat[toks], probs)["z"])
    p_plain = two_sample_pvalue(cat[toks], cat[plain], probs.size)
    if lossless:
        assert p_fit > 1e-3 and p_plain > 1e-3, (p_fit, p_plain)
    else:
        assert p_fit < 1e-6 and p_plain < 1e-6, (p_fit, p_plain)
