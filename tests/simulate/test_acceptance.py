"""specnb/simulate/acceptance.py: accepted lengths drawn from tau, rates and profiles keep
the mean acceptance length they were given."""

import numpy as np
import pytest

from specnb import acceptance_profile as AP
from specnb import simulate as M


def test_draws_from_tau_keep_tau():
    acc = M.acceptance(tau=2.8, gamma=3)
    a = acc.draw(np.random.default_rng(0), 3, np.zeros(200_000))
    assert 1 + a.mean() == pytest.approx(2.8, abs=0.01)
    assert acc.tau(3) == pytest.approx(2.8)


def test_draws_from_per_position_rates_keep_the_rates():
    acc = M.acceptance(acceptance_rates=[0.8, 0.5, 0.2])
    a = acc.draw(np.random.default_rng(0), 3, np.zeros(200_000))
    for i, r in enumerate([0.8, 0.5, 0.2]):
        assert (a > i).mean() == pytest.approx(r, abs=0.005)
    assert acc.tau(2) == pytest.approx(2.3)


def test_profile_gives_its_gammas_and_proposal_rate():
    c = AP.Counters(num_steps=100, num_drafts=50, num_draft_tokens=150,
                    num_accepted_tokens=75, num_accepted_tokens_per_pos=(40, 25, 10),
                    num_draft_tokens_per_pos=(50, 50, 50))
    prof = AP.build("ngram", {3: [(None, {None: c})]})
    acc = M.acceptance(profile=prof)
    assert acc.proposal_rate(3) == pytest.approx(0.5)
    assert acc.tau(3) == pytest.approx(prof.entry(3).tau)
    with pytest.raises(ValueError, match="has gammas \\[3\\] but the policy drafts 2"):
        acc.check_gamma(2)


@pytest.mark.parametrize("kwargs, match", [
    (dict(), "exactly one"), (dict(tau=2.0), "gamma"), (dict(tau=5.0, gamma=3), "tau"),
    (dict(acceptance_rates=[0.5, 0.7]), "must not increase"),
    (dict(alpha=0.5, proposal_rate=0.0), "proposal_rate"),
])
def test_bad_acceptance(kwargs, match):
    with pytest.raises(ValueError, match=match):
        M.acceptance(**kwargs)


def test_profile_drafts_are_drawn_at_their_own_length_as_the_profile_counts_them():
    """T8a-14: a profile whose drafts stop early (n-gram / suffix) is verified at each draft's
    own length: the drawn lengths and accepted counts reproduce the profile's counters."""
    import numpy as np

    from specnb import acceptance_profile as AP
    from specnb.simulate import acceptance

    # 100 drafts at gamma 3: 100 have a token at 1, 60 at 2, 20 at 3; accepted 50, 20, 5
    c = AP.Counters(200, 100, 180, 75, (50, 20, 5), (100, 60, 20))
    acc = acceptance(profile=AP.build("suffix", {3: [(None, {None: c})]}))
    rng = np.random.default_rng(0)
    n = 200_000
    L = np.array([acc.draft_length(rng, 3) for _ in range(n)])
    assert L.min() >= 1 and L.max() <= 3
    assert L.mean() == pytest.approx(180 / 100, abs=0.01)
    a = acc.draw(rng, 3, [0.0] * n, lengths=L)
    assert np.all(a <= L)
    assert a.mean() == pytest.approx(75 / 100, abs=0.01)
    for i, want in enumerate((50, 20, 5)):
        assert float(np.mean(a > i)) == pytest.approx(want / 100, abs=0.01)
