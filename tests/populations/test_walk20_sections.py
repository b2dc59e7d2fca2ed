"""A learner of a user's own takes its settings from a preset YAML too (``my_algo: {lr: ..}``
under ``# @package _global_``), not only from ``+my_algo.lr=...`` typed: Hydra refused the key
at compose ("Key 'walk19_algo' not in 'ExperimentConfig'"), so an experiment of one's own
could not hold the settings it was run with. A top-level key no registered learner names is
still one line naming the nearest key, before the run folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from marl import registry
from populations.learner_sections import settings
from tests.populations.test_walk19_experiment import (
    KUHN,
    MODULE,
    _composed,
    _refused,
    own_learner,  # noqa: F401 (a fixture)
)


def _preset(tmp_path: Path, body: str) -> list[str]:
    """``experiment=mine`` from a config folder of the user's own on Hydra's search path."""
    folder = tmp_path / "myconfigs" / "experiment"
    folder.mkdir(parents=True)
    (folder / "mine.yaml").write_text("# @package _global_\n" + body)
    return [f"hydra.searchpath=[file://{tmp_path / 'myconfigs'}]", "experiment=mine"]


def test_an_own_learners_section_in_a_preset_reaches_it(own_learner, tmp_path,  # noqa: F811
                                                         monkeypatch):
    argv = _preset(tmp_path, "algo: walk19_algo\nwalk19_algo:\n  lr: 0.25\n  net:\n"
                             "    width: 4\n")
    exp = _composed([f"imports=[{MODULE}]", *argv, *KUHN], monkeypatch, tmp_path)
    assert settings(exp, registry.get("walk19_algo")) == \
        own_learner.OwnConfig(lr=0.25, net=own_learner.OwnNet(4))
    # the command line still overrides the preset's value
    exp = _composed([f"imports=[{MODULE}]", *argv, "walk19_algo.lr=0.5", *KUHN], monkeypatch,
                    tmp_path)
    assert settings(exp, registry.get("walk19_algo")).lr == 0.5


@pytest.mark.parametrize(("body", "words"), [
    ("walk19_algo:\n  lrr: 0.5\n", "walk19_algo.lrr: Key 'lrr' not in 'OwnConfig'; nearest: "
                                   "walk19_algo.lr"),
    ("framez: 3\n", "framez: not a key of the experiment nor the section of a registered "
                    "learner; nearest: frames"),
    # the schema's own sections stay closed (Hydra's message, with the nearest key added)
    ("mappo:\n  lrr: 0.5\n", "In 'experiment/mine': Key 'lrr' not in 'MAPPOConfig'; nearest: "
                             "mappo.lr"),
    ("population:\n  kindd: league\n", "In 'experiment/mine': Key 'kindd' not in "
                                        "'PopulationConfig'; nearest: population.kind"),
])
def test_a_bad_key_in_a_preset_is_one_line_before_the_folder(own_learner, body,  # noqa: F811
                                                             words,
                                                            tmp_path, monkeypatch, capsys):
    line = _refused([f"imports=[{MODULE}]", *_preset(tmp_path, body), *KUHN], monkeypatch,
                    tmp_path, capsys)
    assert words in line, line


def test_a_typed_key_the_schema_lacks_still_needs_a_plus(tmp_path, monkeypatch, capsys):
    line = _refused(["framez=3", *KUHN], monkeypatch, tmp_path, capsys)
    assert line.startswith("Could not override 'framez'") and "nearest: frames" in line, line


@pytest.mark.parametrize(("override", "words"), [
    ("+population.foo=1", "population.foo: Key 'foo' not in 'PopulationConfig'"),
    ("+runner.foo=1", "runner.foo: Key 'foo' not in 'RunnerConfig'"),
    ("+game.foo=1", "game.foo: Key 'foo' not in 'GameConfig'"),
    ("+population.psro.episodes=3", "population.psro.episodes: Key 'episodes' not in "
                                    "'PSROConfig' (a '+' cannot add keys to the schema); "
                                    "nearest: population.psro.episodes_per_entry"),
])
def test_a_key_added_to_a_mutable_section_is_refused(override, words, tmp_path, monkeypatch,
                                                     capsys):
    """Sections whose dataclass is not frozen took an added key silently (the run went on
    without the setting the user meant), where frozen ones refused it."""
    line = _refused([override, *KUHN], monkeypatch, tmp_path, capsys)
    assert line.startswith(f"bad config: {words}"), line


def test_the_library_psros_auto_payoffs_are_sampled_for_an_oracle_without_probs(
        own_learner):  # noqa: F811
    """``PSRO(..., RLOracle(learner_factory=registry_learner(<algo without action_probs>)),
    PSROConfig(payoffs="auto"))`` chose exact payoffs, which its members cannot give (only
    the experiment path, resolve_auto, looked); a learner that has them keeps exact."""
    import games
    from populations.psro import PSRO, PSROConfig, RLOracle
    from populations.psro_run import registry_learner

    spec = games.make("openspiel/kuhn_poker").spec
    chosen = {algo: PSRO("openspiel/kuhn_poker", RLOracle(
        spec, learner_factory=registry_learner(algo)), PSROConfig(payoffs="auto")).config.payoffs
        for algo in ("walk19_noprobs", "walk19_algo", "mappo")}
    assert chosen == {"walk19_noprobs": "sampled", "walk19_algo": "exact", "mappo": "exact"}


def test_two_exploiters_are_refused_before_the_folder(tmp_path, monkeypatch, capsys):
    """``[mappo,mappo_exploiter,vdn_exploiter]`` passed the early check, then failed after
    the run started with "league members need unique names; got ['mappo', 'exploiter',
    'exploiter']" (both are named exploiter; both would exploit the first main member)."""
    line = _refused(["population=pfsp", "population.members=[mappo,mappo_exploiter,"
                     "vdn_exploiter]", *KUHN], monkeypatch, tmp_path, capsys)
    assert line == ("bad config: population.members=['mappo', 'mappo_exploiter', "
                    "'vdn_exploiter']: one <algo>_exploiter per league (it exploits the first "
                    "main member, mappo); keep one of ['mappo_exploiter', 'vdn_exploiter']"), line


@pytest.mark.parametrize(("line", "notes"), [
    (["game=mpe_tag", "encoder=gnn", "population=pfsp", "population.members=[qmix,maddpg]"],
     ["encoder=gnn: not read by this run (population.members=['qmix', 'maddpg'] uses no "
      "'mappo' settings)"]),
    (["game=mpe_tag", "algo=maddpg", "encoder=gnn", "mappo.lr=0.1"],
     ["encoder=gnn, mappo.lr=0.1: not read by this run (algo=maddpg uses no 'mappo' "
      "settings)"]),
    (["algo=qmix", "population=pfsp", "population.members=[mappo,ippo]"],
     ["algo=qmix is not used: population.members=['mappo', 'ippo'] names the league's "
      "learners"]),
    (["game=mpe_tag", "population=psro", "population.oracle=rl", "encoder=gnn"],
     ["encoder=gnn: not read by this run (population.oracle=rl uses no 'mappo' settings)"]),
    (["population=psro", "population.oracle=exact", "qmix.lr=0.1"],
     ["qmix.lr=0.1: not read by this run (population.oracle=exact uses no 'qmix' settings)"]),
    # read: no note
    (["game=mpe_tag", "encoder=gnn", "population=pfsp",
      "population.members=[qmix,mappo_exploiter]"], []),
    (["game=mpe_tag", "algo=ippo", "encoder=gnn", "mappo.lr=0.1"], []),
    (["population=psro", "population.oracle=vdn", "vdn.lr=0.1"], []),
    (["game=mpe_tag", "population=psro", "encoder=gnn"], []),  # oracle=auto: decided with the game
])
def test_learner_settings_no_learner_reads_are_named(line, notes, tmp_path, monkeypatch):
    """They were ignored without a word: encoder=gnn in a league of qmix and maddpg, PSRO's
    rl oracle (MAPPO with its defaults) gave the same meta-weights with and without it."""
    from populations.learner_sections import unread_settings

    game = [] if any(w.startswith("game=") for w in line) else ["game=kuhn"]
    exp = _composed([*game, *line, "frames=500", "progress=false"], monkeypatch, tmp_path)
    assert unread_settings(exp, line) == notes


@pytest.mark.parametrize(("line", "warned"), [
    (["experiment=tag_pfsp_league", "runner.rollout_workers=2"], True),
    (["game=kuhn", "population=psro", "runner.rollout_workers=2"], True),
    (["game=kuhn", "population=pfsp", "population.members=[mappo,llm_grpo]",
      "runner.rollout_workers=2"], False),  # the LLM team's rollouts use them
    (["game=mpe_spread", "runner.rollout_workers=2", "num_envs=4"], False),
    (["game=mpe_tag", "algo=maddpg", "encoder=gnn"], True),  # unread_settings, wired in
])
def test_settings_a_run_does_not_read_are_warned_before_it_runs(line, warned, tmp_path,
                                                                 monkeypatch):
    """runner.rollout_workers beside a league or PSRO trained without workers, silently
    (only population=none runs and LLM teams read it)."""
    from populations.train_overrides import unused_overrides

    exp = _composed([*line, "progress=false"], monkeypatch, tmp_path)
    notes = unused_overrides(exp, line)
    assert bool(notes) == warned, notes


def test_an_llm_oracle_refusal_says_why(tmp_path, monkeypatch, capsys):
    """``population.oracle=llm_grpo`` listed the accepted oracles without saying why the LLM
    team is not one (walk 20)."""
    line = _refused(["population=psro", "population.oracle=llm_grpo", *KUHN], monkeypatch,
                    tmp_path, capsys)
    assert "population.oracle: algo=llm_grpo cannot be a PSRO oracle: it plays its own " \
        "episodes" in line, line
