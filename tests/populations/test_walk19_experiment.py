"""Experiment settings that walk 19 found accepted and then ignored, or refused only after the
run folder was made: a learner of your own's command-line section (``+my_algo.lr=0.5`` reached
it as a plain dict: ``AttributeError`` after the folder), ``population.psro.seed`` (recorded,
never read), a league's game refusals (after ``league.db`` was created), ``payoffs=auto`` with
an oracle whose policy has no action probabilities (exact, then a failure after a whole
iteration), and ``algo=`` beside ``population=psro`` (never read, silently)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import populations.cli as cli
import populations.train_overrides as train_overrides
from marl import registry
from populations.experiment import ExperimentConfig, GameConfig, plain, settings
from populations.experiment_config import PopulationConfig
from populations.psro_config import PSROConfig
from tests.populations.test_walk18_cli_more import _train

MODULE = "walk19_own_learner"  # a learner of a user's own, as README "Add your own learner"
SOURCE = '''
from dataclasses import dataclass

import numpy as np

from hydra.core.config_store import ConfigStore
from marl.core import Capabilities, Policy, register_policy
from marl.registry import register_learner


@dataclass(frozen=True)
class OwnNet:
    width: int = 8  # hidden width


@dataclass(frozen=True)
class OwnConfig:
    lr: float = 1e-3  # step size
    batch_episodes: int = 16  # episodes per update
    net: OwnNet = OwnNet()

    def __post_init__(self):
        if not self.lr > 0:
            raise ValueError(f"lr={self.lr!r}; expected a number > 0")


@register_policy("walk19_noprobs")
class NoProbs(Policy):  # acts, but has no action probabilities (Policy.action_probs raises)
    def act(self, agent, vs, greedy=False):
        return np.zeros(len(vs.done), dtype=np.int64)

    def payload(self):
        return {}

    @classmethod
    def from_payload(cls, meta, payload):
        return cls()


class OwnLearner:  # only built here: the config it receives is what these tests look at
    def __init__(self, spec, config, agents=None, device="cpu", seed=0):
        self.spec, self.cfg, self.agents = spec, config, agents


CAPS = Capabilities(discrete=True, continuous=False, on_policy=True, turn_based=True,
                    centralized_critic=False, partial_seats=True)
register_learner("walk19_algo", config=OwnConfig, policy="walk19_kind", capabilities=CAPS)(
    OwnLearner)
register_learner("walk19_noprobs", config=OwnConfig, policy="walk19_noprobs",
                 capabilities=CAPS)(type("NoProbsLearner", (OwnLearner,), {}))
ConfigStore.instance().store(group="algo", name="walk19_algo", node={"algo": "walk19_algo"},
                             package="_global_")
'''


@pytest.fixture
def own_learner(tmp_path, monkeypatch):
    """The module above, importable from ``tmp_path`` (``imports=[walk19_own_learner]``),
    and taken out of every registry after the test (the learner matrices take every
    registered learner)."""
    from hydra.core.config_store import ConfigStore

    from games.registry import IMPORTS_ENV
    from marl import core

    (tmp_path / f"{MODULE}.py").write_text(SOURCE)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    for name in (IMPORTS_ENV, "PYTHONPATH"):  # import_user_modules sets them for workers
        monkeypatch.setenv(name, os.environ.get(name, ""))
    try:
        yield __import__(MODULE)
    finally:
        sys.modules.pop(MODULE, None)
        for name in ("walk19_algo", "walk19_noprobs"):
            registry._LEARNERS.pop(name, None)
        for kind in ("walk19_kind", "walk19_noprobs"):
            registry._POLICY_MODULES.pop(kind, None)
        core._POLICIES.pop("walk19_noprobs", None)
        ConfigStore.instance().repo.get("algo", {}).pop("walk19_algo.yaml", None)


KUHN = ["game=kuhn", "frames=500", "progress=false"]


def _psro(oracle: str) -> PopulationConfig:
    """``population=psro`` as its preset sets it (``auto`` tools), with ``oracle``."""
    return PopulationConfig(kind="psro", oracle=oracle,
                            psro=PSROConfig(payoffs="auto", meta_solver="auto"))


def _refused(argv: list[str], monkeypatch, tmp_path: Path, capsys) -> str:
    """``selfplay-train argv`` in this process: its one line on stderr, after checking that
    Hydra's task never started and nothing was written."""
    started = []  # a missed refusal would train (and fail after the folder)
    monkeypatch.setattr(cli, "_train_task", started.append)
    run = tmp_path / "run"
    with pytest.raises(SystemExit) as stop:
        _train([*argv, f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and started == [], err
    assert len(err) == 1 and err[0].startswith("selfplay-train: "), err
    assert not run.exists()
    return err[0].removeprefix("selfplay-train: ")


def _composed(argv: list[str], monkeypatch, tmp_path: Path) -> ExperimentConfig:
    """The experiment ``selfplay-train argv`` would run (Hydra's task stopped before it runs)."""
    started = []
    monkeypatch.setattr(cli, "_train_task", started.append)
    _train([*argv, f"hydra.run.dir={tmp_path / 'run'}"], monkeypatch, tmp_path)
    assert len(started) == 1
    return train_overrides.prepare(started[0], [], check=False)


# ------------------------------------------------- 1. a learner of your own's section
def test_an_own_learners_section_reaches_it_as_its_config_dataclass(own_learner, tmp_path,
                                                                     monkeypatch):
    """``+walk19_algo.lr=0.5`` reached the learner as ``{'lr': 0.5}`` (AttributeError: 'dict'
    object has no attribute 'lr', after the run folder was made)."""
    exp = _composed([f"imports=[{MODULE}]", "algo=walk19_algo", "+walk19_algo.lr=0.5",
                     "+walk19_algo.net.width=4", *KUHN], monkeypatch, tmp_path)
    entry = registry.get("walk19_algo")
    assert settings(exp, entry) == own_learner.OwnConfig(lr=0.5, net=own_learner.OwnNet(4))
    import games
    from populations.experiment import make_learner

    learner = make_learner(exp, games.make("openspiel/kuhn_poker").spec)
    assert learner.cfg.lr == 0.5 and learner.cfg.batch_episodes == 16
    # settings.json records it (a resume with another lr is one with other settings)
    assert plain(exp)["walk19_algo"] == {"lr": 0.5, "batch_episodes": 16, "net": {"width": 4}}


def test_without_a_section_an_own_learner_gets_its_defaults(own_learner):
    cfg = ExperimentConfig(algo="walk19_algo", game=GameConfig("openspiel/kuhn_poker"))
    assert settings(cfg, registry.get("walk19_algo")) == own_learner.OwnConfig()
    assert "walk19_algo" not in plain(cfg)


@pytest.mark.parametrize(("override", "words"), [
    ("+walk19_algo.lrr=0.5", "walk19_algo.lrr: Key 'lrr' not in 'OwnConfig'; nearest: "
                             "walk19_algo.lr"),
    ("+walk19_algo.zzz=1", "walk19_algo.zzz: Key 'zzz' not in 'OwnConfig'; keys of "
                           "walk19_algo: lr, batch_episodes, net"),
    ("+walk19_algo.net.widht=4", "walk19_algo.net.widht: Key 'widht' not in 'OwnNet'; "
                                 "nearest: walk19_algo.net.width"),
    ("+walk19_algo.lr=fast", "walk19_algo.lr=fast; expected a number > 0"),
    ("+walk19_algo.lr=-1", "walk19_algo.lr=-1.0; expected a number > 0"),
    ("+walk19_algoo.lr=0.5", "walk19_algoo: not a key of the experiment nor the section of a "
                             "registered learner; nearest: walk19_algo"),
    ("+walk19_algo=5", "walk19_algo=5: a learner's section takes settings by key "
                       "(walk19_algo.<key>=...; keys of walk19_algo: lr, batch_episodes, net)"),
    ("+framez=3", "framez: not a key of the experiment nor the section of a registered "
                  "learner; nearest: frames"),
])
def test_a_bad_key_or_value_of_an_own_section_is_one_line_before_the_folder(
        own_learner, override, words, tmp_path, monkeypatch, capsys):
    line = _refused([f"imports=[{MODULE}]", "algo=walk19_algo", override, *KUHN], monkeypatch,
                    tmp_path, capsys)
    assert line == words or line.startswith(words), line


def test_an_own_section_is_checked_when_another_algo_runs(own_learner, tmp_path, monkeypatch,
                                                          capsys):
    """Every section is checked, also those the chosen algo does not use (README)."""
    line = _refused([f"imports=[{MODULE}]", "algo=ippo", "+walk19_algo.lr=-1", *KUHN],
                    monkeypatch, tmp_path, capsys)
    assert line == "walk19_algo.lr=-1.0; expected a number > 0"


def test_psros_auto_settings_keep_an_own_section(own_learner):
    """``resolve_auto`` rebuilds the config (dataclasses.replace): the section stays."""
    import games
    from populations.psro_run import oracle_learner, resolve_auto

    cfg = ExperimentConfig(game=GameConfig("openspiel/kuhn_poker"),
                           population=_psro("walk19_algo"))
    cfg.walk19_algo = {"lr": 0.25}  # as OmegaConf.to_object sets it for +walk19_algo.lr=0.25
    resolved = resolve_auto(cfg, games.make("openspiel/kuhn_poker"), announce=False)
    assert resolved.walk19_algo == {"lr": 0.25}
    build = oracle_learner(resolved)
    assert build(games.make("openspiel/kuhn_poker").spec, "player_0", 0).cfg.lr == 0.25


# ------------------------------------------------------------ 2. population.psro.seed
def test_psro_seed_other_than_the_runs_is_refused_in_one_line(tmp_path, monkeypatch, capsys):
    """It was recorded and never read (psro_run seeds PSRO from the run's seed=), so changing
    it only made a resume count as one with 'other settings'."""
    line = _refused(["population=psro", "population.psro.seed=5", *KUHN], monkeypatch, tmp_path,
                    capsys)
    assert line == ("bad config: population.psro.seed=5 is not read by an experiment: the "
                    "run's seed= seeds PSRO too (give seed=5 instead)"), line


def test_psro_seed_equal_to_the_runs_or_default_is_accepted():
    from populations.experiment import RESUME_MAY_CHANGE

    ExperimentConfig(seed=3, population=PopulationConfig(psro=PSROConfig(seed=3)))
    ExperimentConfig(seed=3, population=PopulationConfig(psro=PSROConfig()))
    with pytest.raises(ValueError, match=r"^population\.psro\.seed=4 is not read"):
        ExperimentConfig(seed=3, population=PopulationConfig(psro=PSROConfig(seed=4)))
    assert "population.psro.seed" in RESUME_MAY_CHANGE  # runs that recorded another resume


# -------------------------------------------------- 3. a league's refusals of the game
@pytest.mark.parametrize(("argv", "words"), [
    (["game=vmas_navigation", "population=fsp"],
     "a self-play league needs two teams; vmas/navigation(n_agents=4) has ('team',); "
     "accepted: a game with two teams (game.kwargs.teams=[[...],[...]] groups its seats)"),
    (["game=mpe_adversary", "population=fsp", "population.nash_conv=true"],
     "population.nash_conv=true needs a small OpenSpiel game; got "
     "game.name='pettingzoo/mpe2.simple_adversary_v3'"),
])
def test_a_leagues_game_refusal_comes_before_the_folder(argv, words, tmp_path, monkeypatch,
                                                        capsys):
    """They came from League.__init__, after Hydra made the folder and league.db was created
    (and the members' learners were built)."""
    line = _refused([*argv, "progress=false"], monkeypatch, tmp_path, capsys)
    assert line.startswith(words), line
    assert list(tmp_path.iterdir()) == []


def test_a_league_with_nash_conv_on_kuhn_passes_the_early_check():
    from populations.experiment import check_experiment

    check_experiment(ExperimentConfig(game=GameConfig("openspiel/kuhn_poker"),
                                      population=PopulationConfig(kind="league",
                                                                  nash_conv=True)))


# ------------------------------------------- 4. payoffs=auto and an oracle without probs
def test_auto_payoffs_are_sampled_for_an_oracle_whose_policy_has_no_probs(own_learner):
    """payoffs=auto chose exact for population.oracle=<an algo whose policy has no
    action_probs>, trained a whole iteration, then failed."""
    import dataclasses

    import games
    from populations.psro_run import resolve_auto

    game = games.make("openspiel/kuhn_poker")
    cfg = ExperimentConfig(game=GameConfig("openspiel/kuhn_poker"),
                           population=_psro("walk19_noprobs"))
    assert resolve_auto(cfg, game, announce=False).population.psro.payoffs == "sampled"
    probs = dataclasses.replace(cfg, population=dataclasses.replace(cfg.population,
                                                                    oracle="walk19_algo"))
    assert resolve_auto(probs, game, announce=False).population.psro.payoffs == "exact"


def test_exact_payoffs_with_an_oracle_without_probs_are_refused_up_front(
        own_learner, tmp_path, monkeypatch, capsys):
    line = _refused([f"imports=[{MODULE}]", "population=psro",
                     "population.oracle=walk19_noprobs", "population.psro.payoffs=exact",
                     *KUHN], monkeypatch, tmp_path, capsys)
    assert line == ("population.psro.payoffs=exact needs every member's action "
                    "probabilities: population.oracle=walk19_noprobs's policies "
                    "(walk19_noprobs) have no action probabilities; use "
                    "population.psro.payoffs=sampled or auto"), line


def test_off_policy_oracles_keep_exact_payoffs():
    """Their members are played greedily (GreedyPolicy has one-hot probabilities)."""
    import games
    from populations.psro_run import resolve_auto

    game = games.make("openspiel/kuhn_poker")
    for oracle in [o for o in ("vdn", "qmix") if registry.compatible(o, game.spec)]:
        cfg = ExperimentConfig(game=GameConfig("openspiel/kuhn_poker"), population=_psro(oracle))
        assert resolve_auto(cfg, game, announce=False).population.psro.payoffs == "exact"


# ------------------------------------------------------------- 5. algo= beside psro
def test_psro_warns_in_one_line_that_it_does_not_read_algo(tmp_path, caplog):
    import logging

    from populations.experiment import run_experiment

    cfg = ExperimentConfig(algo="llm_grpo", game=GameConfig("openspiel/kuhn_poker"),
                           eval_episodes=1, progress=False, population=PopulationConfig(
                               kind="psro", iterations=1))
    with caplog.at_level(logging.WARNING):
        run_experiment(cfg, tmp_path / "run")
    notes = [r.getMessage() for r in caplog.records if "algo=" in r.getMessage()]
    assert notes == ["algo=llm_grpo is not used with population.kind=psro (PSRO trains no algo); "
                     "its best responses come from population.oracle=exact (set "
                     "population.oracle=<algo> for a learner's)"], notes


def test_psro_with_the_default_algo_says_nothing_of_it(tmp_path, caplog):
    import logging

    from populations.experiment import run_experiment

    cfg = ExperimentConfig(game=GameConfig("openspiel/kuhn_poker"), eval_episodes=1,
                           progress=False, population=PopulationConfig(kind="psro",
                                                                       iterations=1))
    with caplog.at_level(logging.WARNING):
        run_experiment(cfg, tmp_path / "run")
    assert not [r for r in caplog.records if "algo=" in r.getMessage()]


def test_run_experiment_imports_the_configs_imports(tmp_path, monkeypatch):
    # ExperimentConfig(imports=[...]) from Python: only the CLIs imported them, so a game of
    # the user's module was 'unknown game' (and Ray workers never heard of the module)
    import games.registry
    from populations.experiment import run_experiment
    from tests.populations.test_single_resume import TINY, _exp

    monkeypatch.setattr(games.registry, "_REGISTRY", dict(games.registry._REGISTRY))  # no leak
    (tmp_path / "w19_api_mod.py").write_text(
        "import games\n\n@games.register('w19_api_game')\ndef make(**kw):\n"
        "    return games.make('openspiel/kuhn_poker', **kw)\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("SELFPLAY_IMPORTS", "")
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    exp = _exp(*TINY, "game.name=w19_api_game",
               "imports=[w19_api_mod]")
    summary = run_experiment(exp, tmp_path / "run")
    assert summary.table and summary.table[0]["frames"] == 64
    assert "w19_api_mod" in os.environ["SELFPLAY_IMPORTS"].split(",")


def test_a_resumed_sweeps_job_that_had_not_started_keeps_an_own_section(own_learner, tmp_path,
                                                                        monkeypatch):
    """A sweep resumed with resume=true whose job had not started yet starts it (resume
    off): ``dataclasses.replace`` built that experiment from the schema's fields only and
    dropped ``+walk19_algo.lr=0.5``, so the job trained at the learner's defaults."""
    import populations.experiment as experiment
    from populations.learner_sections import learner_sections

    sweep = tmp_path / "sweep"
    (sweep / "9_other").mkdir(parents=True)  # another job of the sweep ran: it has started
    (sweep / "9_other" / "settings.json").write_text("{}")
    seen = []

    def stopped(exp, run_dir):
        seen.append(exp)
        raise KeyboardInterrupt  # what it would run is all this test reads

    monkeypatch.setattr(experiment, "run_experiment", stopped)
    with pytest.raises(SystemExit):
        _train(["-m", f"imports=[{MODULE}]", "algo=walk19_algo", "+walk19_algo.lr=0.5", *KUHN,
                "resume=true", f"hydra.sweep.dir={sweep}"], monkeypatch, tmp_path)
    (exp,) = seen
    assert exp.resume is False  # the job starts
    assert learner_sections(exp) == {"walk19_algo": {"lr": 0.5}}
    assert settings(exp, registry.get("walk19_algo")).lr == 0.5
