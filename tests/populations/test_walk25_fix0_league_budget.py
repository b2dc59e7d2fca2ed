"""A league member whose ``population.frames_per_generation`` leaves its replay learner
without an update is told as the run starts, as a single learner's ``frames`` is
(``marl.train``'s budget warning): a warning when no generation left reaches the first
update (it never learns), an info line when the replay, which carries over between
generations, reaches it only after some; once per kind of member, naming its members, not
once per generation. Before: nothing; the members played as initialized, silently."""

from __future__ import annotations

import pytest

import games
from marl.train import league_budget_note
from marl.value_decomp import ValueDecomp, ValueDecompConfig
from tests.populations.user_modules import train_here


def _vdn(starts: int = 1000) -> ValueDecomp:
    return ValueDecomp(games.make("openspiel/kuhn_poker").spec,
                       ValueDecompConfig(mixer="vdn", hidden=(8,), learning_starts=starts,
                                         batch_size=16))


def test_no_generation_left_reaches_the_first_update():
    never, text = league_budget_note(_vdn(), 200, 8, 3)
    assert never
    assert text == (
        "population.frames_per_generation=200 ends before the first update: the learner "
        "collects vdn.learning_starts=1000 frames first, so it makes no update and plays as "
        "initialized (its 3 generation(s) left play 600 frames in all); give it at least 334 "
        "frames per generation or lower vdn.learning_starts")


def test_a_replay_that_does_not_carry_over_never_fills():
    never, text = league_budget_note(_vdn(), 200, 8, 10, carries=False)
    assert never and "each generation starts with an empty replay" in text


def test_a_later_generation_reaches_it():
    never, text = league_budget_note(_vdn(), 200, 8, 10)
    assert not never
    assert text.endswith("so at least its first 4 generation(s) publish untrained snapshots")


@pytest.mark.parametrize("frames, starts", [(1000, 1000), (64, 16)])
def test_a_generation_that_reaches_it_says_nothing(frames, starts):
    assert league_budget_note(_vdn(starts), frames, 8, 1) == (False, "")


def test_a_league_warns_once_for_its_members(tmp_path, monkeypatch, capfd):
    """Two VDN members (a main and its exploiter), two generations: one warning line."""
    train_here(["algo=vdn", "game=kuhn", "population=self_play",
                "population.members=[vdn,vdn_exploiter]", "population.frames_per_generation=64",
                "population.generations=2", "num_envs=4", "eval_episodes=2", "logger=none",
                "progress=false", f"hydra.run.dir={tmp_path / 'run'}"], monkeypatch, tmp_path)
    logged = "".join(capfd.readouterr())  # Hydra's log lines, on stdout or stderr
    lines = [line for line in logged.splitlines() if "ends before the first update" in line]
    assert len(lines) == 1, lines
    assert "[WARNING] - league members 'vdn', 'exploiter': population.frames_per_generation=64 " \
           "ends before the first update" in lines[0]
