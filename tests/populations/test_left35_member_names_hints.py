"""A member given by its name takes keys by its index, and a config group's typo is told
the nearest option, in a sweep too (session 35, items left by session 34).

Before: ``population.members.0.mappo.epochs=2`` where member 0 was given by its name (a
preset's ``members: [mappo, mappo_exploiter]`` or ``population.members=[mappo,vdn]``) was
refused ("has no algo ... give that member as a mapping"): Hydra replaces the name by
``{mappo: {epochs: 2}}``. ``selfplay-train -m game=kuhn,openspiel/kuhn_poker`` got no
``game.name=`` hint, which ``game=openspiel/kuhn_poker`` alone gets; ``algo=mapo`` (and any
group but ``game``) got Hydra's list with no nearest option.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import populations.cli as cli
from populations import train_overrides
from populations.experiment import ExperimentConfig, league_member_specs
from tests.populations.user_modules import train_here

TAG = ["population=pfsp", "game=mpe_tag", "population.generations=1",
       "population.frames_per_generation=256", "num_envs=2", "eval_episodes=2",
       "progress=false", "logger=none"]  # fmt: skip
OPTIONS = {"algo": "ippo, llm_grpo, maddpg, mappo, qmix, vdn",
           "game": "climbing, kuhn, leduc, lookup, mpe_adversary, mpe_reference, mpe_spread, "
                   "mpe_tag, relay, rps, rps_biased, tictactoe, vmas_navigation, vmas_spread, "
                   "vmas_tag"}


def _prepared(argv: list[str], monkeypatch: pytest.MonkeyPatch,
              tmp_path: Path) -> ExperimentConfig:
    """The experiment ``selfplay-train argv`` runs: Hydra's task prepares it as the run's own
    task does (after the start checks passed), and stops before training."""
    from hydra.core.hydra_config import HydraConfig

    got = []
    monkeypatch.setattr(cli, "_train_task", lambda cfg: got.append(train_overrides.prepare(
        cfg, list(HydraConfig.get().overrides.task), check=False)))
    train_here([*TAG, *argv, f"hydra.run.dir={tmp_path / 'run'}"], monkeypatch, tmp_path)
    assert len(got) == 1
    return got[0]


def _refused(argv: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
             capsys: pytest.CaptureFixture[str]) -> str:
    """The one line (exit 2, no traceback, nothing made) ``selfplay-train argv`` is refused
    with, without ``selfplay-train: ``."""
    started = []
    monkeypatch.setattr(cli, "_train_task", started.append)
    with pytest.raises(SystemExit) as stop:
        train_here([*argv, f"hydra.run.dir={tmp_path / 'run'}",
                    f"hydra.sweep.dir={tmp_path / 'sweep'}"], monkeypatch, tmp_path)
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and started == [], err
    assert len(err) == 1 and err[0].startswith("selfplay-train: "), err
    assert not (tmp_path / "run").exists() and not (tmp_path / "sweep").exists()
    return err[0].removeprefix("selfplay-train: ")


# ------------------------------------------- 1. a key by index on a member given by its name
@pytest.mark.parametrize(("argv", "members", "names"), [
    (["population.members=[mappo,vdn]", "population.members.0.mappo.epochs=2"],
     [{"algo": "mappo", "mappo": {"epochs": 2}}, "vdn"], ["mappo", "vdn"]),
    (["population.members=[vdn,mappo]", "+population.members.1.mappo.epochs=2"],
     ["vdn", {"algo": "mappo", "mappo": {"epochs": 2}}], ["vdn", "mappo"]),
    # the preset's names: mappo and its exploiter read the section mappo alike
    (["experiment=tag_pfsp_league", "population.members.1.mappo.epochs=2"],
     ["mappo", {"algo": "mappo_exploiter", "mappo": {"epochs": 2}}], ["mappo", "exploiter"]),
    # a member given as a mapping kept its algo all along
    (["population.members=[vdn,{algo:mappo}]", "population.members.1.mappo.epochs=2"],
     ["vdn", {"algo": "mappo", "mappo": {"epochs": 2}}], ["vdn", "mappo"]),
])
def test_a_key_by_index_sets_the_named_members_setting(argv, members, names, monkeypatch,
                                                        tmp_path):
    exp = _prepared(argv, monkeypatch, tmp_path)
    assert list(exp.population.members) == members
    specs = league_member_specs(exp)
    assert [name for _, name, _, _ in specs] == names
    (at,) = [i for i, m in enumerate(members) if isinstance(m, dict)]
    assert specs[at][3].epochs == 2  # the run's section, with the member's change over it


def test_two_keys_of_the_presets_first_member_both_set(monkeypatch, tmp_path):
    exp = _prepared(["experiment=tag_pfsp_league", "population.members.0.mappo.epochs=2",
                     "population.members.0.mappo.lr=0.01"], monkeypatch, tmp_path)
    (_, name, _, mine), (_, other, _, theirs) = league_member_specs(exp)
    assert (name, mine.epochs, mine.lr, other) == ("mappo", 2, 0.01, "exploiter")
    assert theirs.epochs != 2


def test_a_sweep_of_a_named_members_key_checks_and_runs_each_job(monkeypatch, tmp_path):
    # each job composed by the sweep's start check (check_sweep_jobs) and by the job itself
    from hydra.core.hydra_config import HydraConfig

    got = []
    monkeypatch.setattr(cli, "_train_task", lambda cfg: got.append(train_overrides.prepare(
        cfg, list(HydraConfig.get().overrides.task), check=False)))
    train_here(["-m", *TAG, "population.members=[mappo,vdn]",
                "population.members.0.mappo.epochs=2,3", f"hydra.sweep.dir={tmp_path / 'sweep'}"],
               monkeypatch, tmp_path)
    assert [m for exp in got for m in exp.population.members] == [
        {"algo": "mappo", "mappo": {"epochs": 2}}, "vdn",
        {"algo": "mappo", "mappo": {"epochs": 3}}, "vdn"]


def test_a_typo_of_a_named_members_key_is_told_the_nearest(monkeypatch, tmp_path, capsys):
    line = _refused([*TAG, "population.members=[mappo,vdn]",
                     "population.members.0.mappo.epochz=2"], monkeypatch, tmp_path, capsys)
    assert line.endswith("population.members[0].mappo.epochz: Key 'epochz' not in "
                         "'MAPPOConfig'; nearest: mappo.epochs"), line


def test_another_learners_section_on_a_named_member_names_its_own(monkeypatch, tmp_path,
                                                                 capsys):
    line = _refused([*TAG, "population.members=[mappo,vdn]",
                     "population.members.0.mapo.epochs=2"], monkeypatch, tmp_path, capsys)
    assert line == ("bad config: population.members[0].mapo: not mappo's section; a member "
                    "takes algo, name and mappo: {...} (its settings)"), line


def test_a_member_never_named_is_still_told_the_mapping_form(monkeypatch, tmp_path, capsys):
    # member 0 was sections alone before the index key: there is no name to put back
    line = _refused([*TAG, "population.members=[mappo,vdn]",
                     "population.members.0={mappo:{epochs:2}}",
                     "population.members.0.mappo.lr=0.01"], monkeypatch, tmp_path, capsys)
    assert line.startswith("bad config: population.members[0]={mappo: {epochs: 2") and \
        " has no algo: " in line, line


# --------------------------------------------------- 2. a sweep's game name given as game=
def test_a_sweeps_game_names_are_told_game_name_once_each(monkeypatch, tmp_path, capsys):
    line = _refused(["-m", "game=kuhn,openspiel/kuhn_poker,openspiel/leduc_poker",
                     "algo=mappo,ippo", "frames=64"], monkeypatch, tmp_path, capsys)
    for name in ("openspiel/kuhn_poker", "openspiel/leduc_poker"):
        hint = f"; {name} is a game's name, not a preset: game.name={name} plays it"
        assert line.count(hint) == 1, line
    assert line.startswith("job 2 (game=openspiel/kuhn_poker algo=mappo), job 3 "
                           "(game=openspiel/kuhn_poker algo=ippo) cannot run: In 'config': "
                           "Could not find 'game/openspiel/kuhn_poker'; "), line
    assert line.endswith("no job was started: drop them from the sweep"), line


# ------------------------------------------------------- 3. any group's typo: the nearest
@pytest.mark.parametrize(("typed", "near"), [
    ("algo=mapo", "algo=mappo, algo=maddpg"),
    ("runner=rey", "runner=ray"),
    ("population=self_ply", "population=self_play"),
    ("experiment=tag_pfsp_leage", "experiment=tag_pfsp_league, experiment=vmas_tag_league"),
])
def test_a_groups_typo_is_told_the_nearest_option(typed, near, monkeypatch, tmp_path, capsys):
    group, _, option = typed.partition("=")
    line = _refused([typed], monkeypatch, tmp_path, capsys)
    assert line.startswith(f"In 'config': Could not find '{group}/{option}'; Available "
                           f"options in '{group}': "), line
    assert line.endswith(f"; nearest: {near}"), line


def test_a_sweeps_group_typo_is_told_the_nearest_option(monkeypatch, tmp_path, capsys):
    line = _refused(["-m", "algo=mappo,mapo", "frames=64"], monkeypatch, tmp_path, capsys)
    assert line == (f"In 'config': Could not find 'algo/mapo'; Available options in 'algo': "
                    f"{OPTIONS['algo']}; nearest: algo=mappo, algo=maddpg"), line


def test_a_sweeps_job_composed_from_another_config_folder_is_told_the_nearest(
        monkeypatch, tmp_path, capsys):
    # --config-dir: the options are Hydra's to find, each job's composition reports its own
    (tmp_path / "mine").mkdir()
    line = _refused(["-m", f"--config-dir={tmp_path / 'mine'}", "algo=mappo,mapo",
                     "game=kuhn", "frames=64"], monkeypatch, tmp_path, capsys)
    assert line == (f"job 1 (algo=mapo) cannot run: In 'config': Could not find 'algo/mapo'; "
                    f"Available options in 'algo': {OPTIONS['algo']}; nearest: algo=mappo, "
                    "algo=maddpg; no job was started: drop it from the sweep"), line


def test_a_game_typo_in_a_sweep_keeps_its_nearest(monkeypatch, tmp_path, capsys):
    line = _refused(["-m", "game=kuhn,kuhnn", "frames=64"], monkeypatch, tmp_path, capsys)
    assert line == (f"In 'config': Could not find 'game/kuhnn'; Available options in 'game': "
                    f"{OPTIONS['game']}; nearest: game=kuhn"), line


def test_an_option_spelt_like_none_gets_no_hint():
    from populations.cli_common import preset_hint

    assert preset_hint("algo", "alphazero", OPTIONS["algo"].split(", ")) == ""
    assert preset_hint("logger", "wandbb", ["csv", "none", "wandb"]) == "; nearest: logger=wandb"
