"""PSRO's ``population.oracle=auto`` (the ``psro`` preset's) was not judged for unread
settings: ``experiment=kuhn_psro population.oracle_frames=300 mappo.lr=1e-4`` resolved to the
exact oracle, which reads neither, and warned nothing, while other unread keys were warned
about. The oracle ``auto`` chooses for the game is judged now, in the other warnings' words;
an RL oracle's settings it does read stay unwarned."""

from __future__ import annotations

from populations.experiment import ExperimentConfig, GameConfig, PopulationConfig
from populations.train_overrides import unused_overrides


def _notes(oracle: str, game: str, overrides: list[str]) -> list[str]:
    cfg = ExperimentConfig(game=GameConfig(name=game),
                           population=PopulationConfig(kind="psro", oracle=oracle))
    return unused_overrides(cfg, overrides)


def test_auto_that_chooses_exact_warns_of_the_rl_settings():
    notes = _notes("auto", "openspiel/kuhn_poker",
                   ["population.oracle_frames=300", "mappo.lr=1e-4", "population.iterations=1"])
    assert notes == [
        "mappo.lr=1e-4: not read by this run (population.oracle=auto, which chose exact "
        "here, uses no 'mappo' settings)",
        "population.oracle_frames=300 is not used with population.oracle=auto, which chose "
        "exact here: exact best responses train nothing; only an RL oracle "
        "(population.oracle=rl or a learner's name) reads it"]


def test_an_explicit_exact_oracle_warns_of_oracle_frames():
    (note,) = _notes("exact", "openspiel/kuhn_poker", ["population.oracle_frames=300"])
    assert note.startswith("population.oracle_frames=300 is not used with "
                           "population.oracle=exact: ")


def test_auto_that_chooses_a_learner_reads_its_settings():
    """mpe2 simple_push (continuous actions): auto chooses a learner oracle that trains for
    oracle_frames with its own section; neither is warned about."""
    notes = _notes("auto", "pettingzoo/mpe2.simple_push_v3",
                   ["population.oracle_frames=300"])
    assert notes == []
