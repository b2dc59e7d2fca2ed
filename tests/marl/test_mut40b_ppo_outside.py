"""PPO's ``outside`` diagnostic with an asymmetric clip range (DAPO's clip-higher): a ratio
leaves ``[1 - clip_low, 1 + clip_high]`` above only past ``1 + clip_high`` (mutation walk,
session 40: testing the upper side against ``clip_low`` survived the suite)."""

import torch

from marl.losses import ppo_clip


def test_outside_reads_each_side_of_an_asymmetric_range():
    ratio = torch.tensor([1.25, 1.3, 0.75, 0.85, 1.0])
    logp = torch.log(ratio)
    terms = ppo_clip(logp, torch.zeros(5), torch.ones(5), clip_low=0.2, clip_high=0.28)
    # 1.25: above 1 + clip_low but inside 1 + clip_high; 0.75: below 1 - clip_low
    assert terms.outside.tolist() == [False, True, True, False, False]


def test_outside_of_a_symmetric_range():
    ratio = torch.tensor([1.25, 1.15, 0.75, 0.85])
    terms = ppo_clip(torch.log(ratio), torch.zeros(4), -torch.ones(4), clip_low=0.2)
    assert terms.outside.tolist() == [True, False, True, False]
