"""A learner's preset never replaces a setting the user gave without a word: ``algo=qmix
qmix.mixer=vdn`` trained QMIX (the qmix preset fixes the mixer) while ``settings.json``
recorded ``"mixer": "vdn"``."""

from __future__ import annotations

import pytest

from marl import registry
from marl.mappo import MAPPOConfig, NetConfig
from marl.value_decomp import ValueDecompConfig
from populations.experiment import ExperimentConfig, GameConfig, check_experiment
from populations.experiment_config import PopulationConfig


@pytest.mark.parametrize(("algo", "other"), [("qmix", "vdn"), ("vdn", "qmix")])
def test_a_mixer_the_preset_replaces_is_refused_naming_the_algo_that_trains_it(algo, other):
    cfg = ExperimentConfig(algo=algo, **{algo: ValueDecompConfig(mixer=other)})
    with pytest.raises(ValueError) as err:
        check_experiment(cfg)
    # ValueDecompConfig() defaults to the qmix mixer: for algo=vdn the line says how Python
    # spells vdn's, as the user may never have typed 'qmix'
    python = (" (in Python ValueDecompConfig() defaults to mixer='qmix': give "
              "ValueDecompConfig(mixer='vdn', ...))") if algo == "vdn" else ""
    assert str(err.value) == (f"{algo}.mixer='{other}': algo={algo} fixes it to '{algo}'; "
                              f"use algo={other}{python}")


def test_a_python_section_at_the_class_defaults_says_how_python_spells_the_mixer():
    """``ExperimentConfig(algo="vdn", vdn=ValueDecompConfig(lr=1e-3))``: the user set no mixer
    (the class's default is QMIX's); the refusal said only 'vdn.mixer='qmix': ... use
    algo=qmix'."""
    cfg = ExperimentConfig(algo="vdn", vdn=ValueDecompConfig(lr=1e-3))
    with pytest.raises(ValueError) as err:
        check_experiment(cfg)
    assert str(err.value).endswith("(in Python ValueDecompConfig() defaults to mixer='qmix': "
                                   "give ValueDecompConfig(mixer='vdn', ...))"), str(err.value)


def test_the_section_of_an_algo_the_run_does_not_train_is_not_judged():
    """``algo=mappo qmix.mixer=vdn``: no learner of the run reads ``qmix``; the line said
    'algo=qmix fixes it to 'qmix'; use algo=vdn' as if the run trained it. The command line's
    unread-section warning names it ("qmix.mixer=vdn: not read by this run")."""
    check_experiment(ExperimentConfig(algo="mappo", qmix=ValueDecompConfig(mixer="vdn"),
                                      game=GameConfig(name="matrix/climbing")))


def test_a_psro_oracles_section_is_judged_naming_the_oracle():
    pop = PopulationConfig(kind="psro", oracle="qmix")
    cfg = ExperimentConfig(population=pop, qmix=ValueDecompConfig(mixer="vdn"),
                           game=GameConfig(name="openspiel/kuhn_poker"))
    with pytest.raises(ValueError, match=r"^qmix\.mixer='vdn': population\.oracle=qmix fixes "
                                         r"it to 'qmix'; use population\.oracle=vdn$"):
        check_experiment(cfg)


def test_a_shared_section_is_not_judged():
    """``algo=ippo encoder=gnn``: the encoder group sets the mappo critic to gnn, which IPPO's
    preset replaces by local critics (a GNN actor): not refused."""
    state = MAPPOConfig(net=NetConfig(critic="state"))
    check_experiment(ExperimentConfig(algo="ippo", mappo=state,
                                      game=GameConfig(name="matrix/climbing")))


def test_a_league_member_with_its_own_settings_is_named():
    pop = PopulationConfig(kind="league", members=[{"algo": "qmix", "qmix": {"mixer": "vdn"}}])
    with pytest.raises(ValueError, match=r"^population\.members\[0\]\.qmix\.mixer='vdn': "
                                         r"algo=qmix fixes it to 'qmix'; use algo=vdn$"):
        check_experiment(ExperimentConfig(population=pop,
                                          game=GameConfig(name="openspiel/kuhn_poker")))


def test_values_the_preset_keeps_and_the_defaults_pass():
    assert registry.preset_refusal("qmix", ValueDecompConfig(mixer="qmix")) is None
    assert registry.preset_refusal("vdn", ValueDecompConfig(mixer="vdn")) is None
    assert registry.preset_refusal("ippo", MAPPOConfig()) is None  # critic auto: the default
    assert registry.preset_refusal("mappo", MAPPOConfig(net=NetConfig(critic="state"))) is None
