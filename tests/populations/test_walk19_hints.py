"""One-line hints of walk 19 on the command lines (``populations/cli.py``): a learner's setting
under ``algo.``, an adv_norm of one's own, a registered learner without an ``algo`` preset,
and a snapshot of a policy kind whose module ``selfplay-eval`` was not told to import."""

from __future__ import annotations

import os
import sys

import pytest
import torch

import games
import marl.advantages as adv_mod
import populations.cli as cli
from games.registry import IMPORTS_ENV
from marl import registry
from marl.mappo import MAPPO, MAPPOConfig
from tests.populations.test_walk18_cli_more import _train

NORMS = '''
from marl.advantages import register_adv_norm

@register_adv_norm("w19_hint_median")
def median(x, keys, mask, weights, cfg, state):
    return x - x.median()
'''
LEARNER = '''
from dataclasses import dataclass

from marl.core import Capabilities, Learner
from marl.registry import register_learner


@dataclass(frozen=True)
class W19HintConfig:
    lr: float = 0.1


@register_learner("w19_hint_algo", config=W19HintConfig, policy="w19_hint_kind",
                  section="w19_hint_sec",
                  capabilities=Capabilities(discrete=True, continuous=False, on_policy=True,
                                            turn_based=True, centralized_critic=False))
class W19HintLearner(Learner):
    pass
'''


@pytest.fixture
def user_code(tmp_path, monkeypatch):
    """``w19_hint_norms.py`` and ``w19_hint_learner.py`` in the working folder; what importing them
    registers, and the variables the CLI sets for workers, are undone after the test."""
    (tmp_path / "w19_hint_norms.py").write_text(NORMS)
    (tmp_path / "w19_hint_learner.py").write_text(LEARNER)
    monkeypatch.setattr(adv_mod, "_REGISTRY", dict(adv_mod._REGISTRY))
    registry.entries()  # the built-ins first: they stay registered after the test
    monkeypatch.setattr(registry, "_LEARNERS", dict(registry._LEARNERS))
    monkeypatch.setattr(registry, "_POLICY_MODULES", dict(registry._POLICY_MODULES))
    for name in (IMPORTS_ENV, "PYTHONPATH"):
        monkeypatch.setenv(name, os.environ.get(name, ""))
    yield tmp_path
    for module in ("w19_hint_norms", "w19_hint_learner"):
        sys.modules.pop(module, None)


def _refused(argv, monkeypatch, cwd, capsys) -> str:
    started = []  # Hydra's task: a missed refusal would train
    monkeypatch.setattr(cli, "_train_task", started.append)
    with pytest.raises(SystemExit) as stop:
        _train([*argv, f"hydra.run.dir={cwd / 'run'}"], monkeypatch, cwd)
    assert stop.value.code == 2 and started == []
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert not (cwd / "run").exists()
    return err[0]


# ------------------------------------------------------ 2. algo.adv_norm, an unknown adv_norm
@pytest.mark.parametrize("searchpath", [[], ["hydra.searchpath=[file://elsewhere]"]])
def test_a_setting_under_algo_names_the_section_it_goes_in(searchpath, tmp_path, monkeypatch,
                                                           capsys):  # fmt: skip
    # before: "Error merging override algo.adv_norm=median; Cannot convert 'dict' to string"
    err = _refused(["algo.adv_norm=median", *searchpath], monkeypatch, tmp_path, capsys)
    assert err == ("selfplay-train: algo.adv_norm=median: 'algo' is a config group "
                   "(algo=<option> picks one of ippo, llm_grpo, maddpg, mappo, qmix, vdn), not a "
                   "section with keys; it goes in a section: mappo.adv_norm=median (or "
                   "llm.grpo.adv_norm=median)")


def test_a_key_no_section_holds_lists_the_sections(tmp_path, monkeypatch, capsys):
    err = _refused(["experiment.zzz=1"], monkeypatch, tmp_path, capsys)
    assert "'experiment' is a config group" in err
    assert err.endswith("settings go in the sections (mappo.*, vdn.*, qmix.*, maddpg.*, llm.*, "
                        "population.*, runner.*, logger.*)")
    assert "mappo.net.gnn_hidden=8" in _refused(["encoder.gnn_hidden=8"], monkeypatch,
                                                tmp_path, capsys)  # fmt: skip


def test_an_unknown_adv_norm_says_how_to_bring_ones_own(tmp_path, monkeypatch, capsys):
    err = _refused(["mappo.adv_norm=w19_hint_median"], monkeypatch, tmp_path, capsys)
    assert err.startswith("selfplay-train: bad config: mappo.adv_norm='w19_hint_median' unknown; "
                          "choose one of ['agent', 'global', 'none', 'role']")
    assert err.endswith("an adv_norm of your own is registered by @register_adv_norm when its "
                        "module is imported (selfplay-train imports=[module])")


def test_an_adv_norm_of_ones_own_is_accepted_through_imports(user_code, monkeypatch):
    started = []
    monkeypatch.setattr(cli, "_train_task", started.append)
    _train(["imports=[w19_hint_norms]", "mappo.adv_norm=w19_hint_median",
            f"hydra.run.dir={user_code / 'run'}"], monkeypatch, user_code)
    assert len(started) == 1 and started[0].mappo.adv_norm == "w19_hint_median"


# ------------------------------------------------- 3. a registered learner without a preset
@pytest.mark.parametrize("searchpath", [[], ["hydra.searchpath=[file://elsewhere]"]])
def test_a_registered_learner_without_preset_says_how_to_add_one(searchpath, user_code,
                                                                 monkeypatch, capsys):  # fmt: skip
    err = _refused(["imports=[w19_hint_learner]", "algo=w19_hint_algo", *searchpath], monkeypatch,
                   user_code, capsys)
    assert err.startswith("selfplay-train: In 'config': Could not find 'algo/w19_hint_algo'; "
                          "Available options in 'algo': ")
    assert err.count("w19_hint_algo is a learner") == 1
    assert ("; w19_hint_algo is a learner registered by w19_hint_learner with no algo preset: "
            "add one, myconfigs/algo/w19_hint_algo.yaml holding '# @package _global_' and "
            "'algo: w19_hint_algo', with hydra.searchpath=[file://myconfigs]") in err
    assert ('ConfigStore.instance().store(group="algo", name="w19_hint_algo", node={"algo": '
            '"w19_hint_algo"}, package="_global_")') in err


def test_a_learners_section_given_as_algo_names_the_learner(user_code, monkeypatch, capsys):
    err = _refused(["imports=[w19_hint_learner]", "algo=w19_hint_sec"], monkeypatch, user_code,
                   capsys)
    assert err.endswith("; w19_hint_sec is the settings section of the learner w19_hint_algo: "
                        "algo=w19_hint_algo picks it, w19_hint_sec.KEY=VALUE sets its settings")


def test_an_unknown_algo_that_is_no_learner_gets_no_hint(tmp_path, monkeypatch, capsys):
    err = _refused(["algo=alphazero"], monkeypatch, tmp_path, capsys)
    assert err.endswith("Available options in 'algo': ippo, llm_grpo, maddpg, mappo, qmix, vdn")


# ----------------------------------------------------- 4. selfplay-eval, an unknown policy kind
def test_eval_of_an_unknown_policy_kind_names_the_import_flag(tmp_path, monkeypatch, capsys):
    spec = games.make("openspiel/kuhn_poker").spec
    files = []
    for k in range(2):
        path = tmp_path / f"w{k}.pt"
        MAPPO(spec, MAPPOConfig(), seed=k).policy().save(path)
        data = torch.load(path, weights_only=True)
        data["meta"]["kind"] = "w19_hint_kind"  # a kind only a user's module registers
        torch.save(data, path)
        files.append(str(path))
    monkeypatch.chdir(tmp_path)
    from populations.eval_cli import eval_main

    with pytest.raises(SystemExit) as stop:
        eval_main(["--game", "openspiel/kuhn_poker", "--db", str(tmp_path / "e.db"), *files])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown policy kind 'w19_hint_kind'" in err[0]
    assert err[0].endswith("; import the module that registers 'w19_hint_kind' with --import "
                           "MODULE (importable from this folder; repeatable)")
    assert not (tmp_path / "e.db").exists()
