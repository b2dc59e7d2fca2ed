"""The settings' names moved to torch-free modules (``marl.configs``,
``populations.experiment_config``, ``populations.psro_config``) so that ``selfplay-train``
checks them before torch loads; user code written against their old homes keeps working:
each old module still hands out the same objects."""

import importlib

import pytest

OLD_HOMES = {  # old module: (names, where they live now)
    "marl.mappo": (("MAPPOConfig", "MAPPO_KEYS", "OPTIMS", "ROLLOUT_ENDS", "TRUNCATIONS"),
                   "marl.configs"),
    "marl.actor_critic": (("NetConfig", "CRITICS", "ENCODERS", "INITS", "SHARING", "VALUES"),
                          "marl.configs"),
    "marl.value_decomp": (("ValueDecompConfig", "LOSSES", "STATE_INPUTS", "TARGET_UPDATES",
                           "TEAM_REWARDS", "check_choice"), "marl.configs"),
    "marl.maddpg": (("MADDPGConfig", "STATE_INPUTS", "TARGET_ACTIONS", "check_choice"),
                    "marl.configs"),
    "populations.experiment": (("PopulationConfig", "RunnerConfig", "ExploitEvery", "MODES",
                                "EXPLOITER", "league_algos"), "populations.experiment_config"),
}
ELSEWHERE = [  # populations.experiment's other old names, each from its own module
    ("populations.experiment", "MatchmakingConfig", "populations.matchmaking"),
    ("populations.experiment", "PSROConfig", "populations.psro_config"),
    ("populations.experiment", "ORACLE_NAMES", "populations.psro_run"),
    ("populations.experiment", "oracle_algos", "populations.psro_run"),
]


@pytest.mark.parametrize("old, name, new", [
    *[(old, name, new) for old, (names, new) in OLD_HOMES.items() for name in names],
    *ELSEWHERE])
def test_a_moved_name_is_importable_from_its_old_module(old, name, new):
    exec(f"from {old} import {name} as moved", scope := {})
    assert scope["moved"] is getattr(importlib.import_module(new), name)
