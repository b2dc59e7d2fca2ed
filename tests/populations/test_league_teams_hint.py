"""A league on a game without two teams names what it accepts (found walking the CLI:
``population=fsp`` on 3-player goofspiel said only "needs two teams")."""

import pytest

from populations.league import League, LeagueConfig
from populations.run_folder import HYDRA_WORDS, spelled


def test_league_on_three_teams_names_psro_and_teams(tmp_path):
    cfg = LeagueConfig(game="openspiel/kuhn_poker", game_kwargs={"players": 3})
    with spelled(HYDRA_WORDS), pytest.raises(  # as selfplay-train population=fsp says it
            ValueError, match=r"needs two teams.*game\.kwargs\.teams=.*population=psro"):
        League(cfg, tmp_path / "run")
    with pytest.raises(ValueError, match=r"needs two teams.*game_kwargs=\{'teams'"):  # Python
        League(cfg, tmp_path / "run2")
