"""A policy file's game name is untrusted: ``marl.play`` makes it only once
``games.registry.recorded_name_refusal`` accepts it (sec38: a crafted snapshot naming
``pettingzoo/os:system(command=...)`` ran the command through ``play``/``PolicyPlayer``)."""
from __future__ import annotations

import pytest
import torch

import games
from marl.mappo import MAPPO, MAPPOConfig
from marl.play import PolicyPlayer, play, recorded_game


@pytest.fixture(scope="module")
def crafted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sec38")
    marker = folder / "ran"
    path = folder / "kuhn.pt"
    MAPPO(games.make("openspiel/kuhn_poker").spec, MAPPOConfig(), seed=0).policy().save(path)
    data = torch.load(path, weights_only=True)
    data["meta"]["game"] = f'pettingzoo/os:system(command="touch {marker}")'
    evil = folder / "evil.pt"
    torch.save(data, evil)
    return path, evil, marker


@pytest.mark.parametrize("use", ["play", "PolicyPlayer", "recorded_game"])
def test_a_crafted_game_name_runs_nothing(crafted, use):
    _, evil, marker = crafted
    call = {"play": lambda: play(str(evil), episodes=1, num_envs=1),
            "PolicyPlayer": lambda: PolicyPlayer(str(evil), num_envs=1),
            "recorded_game": lambda: recorded_game(str(evil))}[use]
    with pytest.raises(games.GameError) as err:
        call()
    assert not marker.exists()
    line = str(err.value)
    assert "\n" not in line and "pettingzoo/os:system" in line and "game=" in line


def test_a_named_game_still_plays_a_crafted_file(crafted):
    _, evil, marker = crafted
    result = play(str(evil), episodes=2, num_envs=2, game="openspiel/kuhn_poker")
    assert set(result.returns) == {"player_0", "player_1"} and not marker.exists()


def test_an_honest_file_plays_its_own_game(crafted):
    path, _, _ = crafted
    assert recorded_game(str(path)) == "openspiel/kuhn_poker"
    assert play(str(path), episodes=2, num_envs=2).returns["player_0"].shape == (2,)


def test_a_users_own_module_plays_once_named_in_the_environment(crafted, tmp_path, monkeypatch):
    """A notebook's own PettingZoo module (review38a L5): refused by name until the user lists
    it in SELFPLAY_IMPORTS (what imports= sets for the command lines), and the line says so."""
    path, _, _ = crafted
    module = tmp_path / "sec38_own_env.py"
    module.write_text("from pettingzoo.classic import rps_v2\n"
                      "def parallel_env(**kw):\n    return rps_v2.parallel_env(**kw)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("SELFPLAY_IMPORTS", raising=False)
    data = torch.load(path, weights_only=True)
    data["meta"]["game"] = "pettingzoo/sec38_own_env:parallel_env"
    own = tmp_path / "own.pt"
    torch.save(data, own)
    with pytest.raises(games.GameError, match="SELFPLAY_IMPORTS=module"):
        recorded_game(str(own))
    monkeypatch.setenv("SELFPLAY_IMPORTS", "sec38_own_env")
    assert recorded_game(str(own)) == "pettingzoo/sec38_own_env:parallel_env"
