"""``PSROConfig(payoffs='sampled', episodes_per_entry=0)`` failed with a ZeroDivisionError in
the sampled-payoff bar (a ValueError before the bar came): PSROConfig refuses a count below
one, or no integer, in one line. ``sampling()`` gave the estimator back ``on_entries=None``
rather than the callback it had."""

from __future__ import annotations

import pytest

KUHN = "openspiel/kuhn_poker"


@pytest.mark.parametrize("episodes", [0, -3, True, 2.5])
def test_psro_refuses_episodes_per_entry_that_is_no_count(episodes):
    from populations.psro import PSRO, ExactBestResponse, PSROConfig

    with pytest.raises(ValueError, match=rf"^population\.psro\.episodes_per_entry={episodes!r}; "
                                         r"expected an integer >= 1$"):
        PSRO(KUHN, ExactBestResponse(KUHN), PSROConfig(payoffs="sampled", nash_conv=False,
                                                       episodes_per_entry=episodes))


def test_sampling_gives_the_estimator_back_its_own_callback():
    from marl.train import RandomPolicy
    from populations.payoffs import SampledPayoffs, sampling
    from populations.psro import Member, new_entry_blocks

    est = SampledPayoffs(KUHN, episodes=2, num_envs=2, lockstep=False)
    for agent in est.players:
        est.add_member(Member(f"psro/{agent}/0", agent, RandomPolicy(est.spec, seed=0)))
    seen = []
    est.on_entries = seen.append
    blocks = new_entry_blocks((0, 0), (1, 1))
    with sampling(est, blocks, "payoffs", progress=False):
        for index in blocks:
            est.block(index)
    assert est.on_entries == seen.append and seen == []  # its own, not called inside
    est.block(blocks[0])
    assert seen == [2]
