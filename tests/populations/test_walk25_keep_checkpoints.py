"""``keep_checkpoints``'s default (3) was written in four places and checked two ways:
``LeagueConfig(keep_checkpoints=2.5)`` and ``=True`` were accepted (``population.keep_checkpoints``
refused them) and would break the first save's pruning. One default
(:data:`populations.experiment_config.KEEP_CHECKPOINTS`) and one check for both configs."""

from __future__ import annotations

import pytest

KUHN = "openspiel/kuhn_poker"


@pytest.mark.parametrize("value", [0, -1, True, 2.5])
def test_the_league_refuses_keep_checkpoints_as_the_population_setting_does(value):
    from populations.experiment_config import PopulationConfig
    from populations.league import LeagueConfig

    with pytest.raises(ValueError) as population:
        PopulationConfig(keep_checkpoints=value)
    with pytest.raises(ValueError) as league:
        LeagueConfig(game=KUHN, keep_checkpoints=value)
    assert str(league.value) == str(population.value) == (
        f"keep_checkpoints={value!r}; expected an integer >= 1 (the newest checkpoints kept "
        "on disk)")


def test_the_league_cli_names_its_flag():
    from populations.league_cli import _as_flag

    assert _as_flag("keep_checkpoints=0; expected an integer >= 1 (the newest checkpoints "
                    "kept on disk)") == ("--keep-checkpoints 0; expected an integer >= 1 (the "
                                         "newest checkpoints kept on disk)")


def test_one_default_of_keep_checkpoints():
    import inspect

    from populations.checkpoint import save_checkpoint
    from populations.experiment_config import KEEP_CHECKPOINTS, PopulationConfig
    from populations.league import LeagueConfig
    from populations.single_run import _Checkpoints

    defaults = {PopulationConfig.keep_checkpoints, LeagueConfig.keep_checkpoints,
                inspect.signature(save_checkpoint).parameters["keep"].default,
                inspect.signature(_Checkpoints).parameters["keep"].default}
    assert defaults == {KEEP_CHECKPOINTS}
