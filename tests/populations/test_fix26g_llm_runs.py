"""An LLM run through ``selfplay-train`` as the walker met it (fix26g).

* ``+llm.role_prompts.scuot=hi`` ran without the prompt and without a word: refused in one
  line naming the game's roles, before the run folder (single runs and league members).
* The bar sat at ``0/1`` for the whole of a GRPO iteration (a minute with a real model): its
  postfix now says how far the iteration's rollout and update are.
* Ctrl-C said ``stopping with a checkpoint at the next update (a replay learner: the next
  step)``: an LLM run stops after the current GRPO iteration, and says so.
"""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import sys

import pytest

from populations.db import LeagueDB
from tests.populations.test_walk18_cli_more import _train

FAST = ["algo=llm_grpo", "game=kuhn", "llm.iterations=2", "llm.grpo.group_size=2",
        "llm.grpo.groups_per_step=2", "llm.grpo.minibatch_turns=4", "eval_episodes=2",
        "llm.tiny.n_layer=1", "llm.tiny.n_embd=16", "llm.corpus_episodes=5",
        "logger=none", "checkpoint_every_s=1000"]


def _refused(argv: list[str], monkeypatch, tmp_path, capsys) -> str:
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        _train([*argv, f"hydra.run.dir={tmp_path / 'r'}"], monkeypatch, tmp_path)
    err = capsys.readouterr().err
    lines = [x for x in err.strip().splitlines() if x.startswith("selfplay-train: ")]
    assert stop.value.code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert not (tmp_path / "r").exists()  # before the run folder
    return lines[0]


@pytest.mark.parametrize("argv, line", [
    (["experiment=tool_team_llm", "+llm.role_prompts.scuot=hi"],
     "llm.role_prompts has role 'scuot' (did you mean 'scout'?); tool/relay's roles are scout, "
     "solver"),
    ([*FAST, "progress=false", "+llm.role_prompts.plyer_1=hi"],
     "llm.role_prompts has role 'plyer_1' (did you mean 'player_1'?); openspiel/kuhn_poker's "
     "roles are player_0, player_1"),
    ([*FAST, "progress=false", "population=fsp", "+llm.role_prompts.plyer_1=hi"],
     "llm.role_prompts has role 'plyer_1' (did you mean 'player_1'?); openspiel/kuhn_poker's "
     "roles are player_0, player_1"),
], ids=["tool_team_llm", "single", "league"])
def test_a_misspelled_role_prompt_is_refused_before_the_run(argv, line, monkeypatch, tmp_path,
                                                            capsys):
    assert _refused(argv, monkeypatch, tmp_path, capsys) == f"selfplay-train: {line}"


def test_the_bar_says_where_the_iteration_is(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)  # a terminal's bar
    _train([*FAST, "progress=true", f"hydra.run.dir={tmp_path / 'r'}"], monkeypatch, tmp_path)
    err = capsys.readouterr().err
    assert "rollout 4/4 episodes, " in err and " turns, " in err and " tokens" in err, err
    assert re.search(r"update (\d+)/\1 minibatches", err), err  # each phase's end is drawn


def test_ctrl_c_in_an_llm_run_stops_after_the_grpo_iteration(monkeypatch, tmp_path, capfd):
    record = LeagueDB.log_metrics

    def log_metrics(self, run_id, step, metrics, *args, **kwargs):
        record(self, run_id, step, metrics, *args, **kwargs)
        if step == 1:  # the first iteration's metrics: Ctrl-C before its checkpoint
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(LeagueDB, "log_metrics", log_metrics)
    with pytest.raises(SystemExit) as stop:
        _train([*FAST, "progress=false", f"hydra.run.dir={tmp_path / 'r'}"], monkeypatch,
               tmp_path)
    err = capfd.readouterr().err  # the signal's note is written to fd 2 (os.write)
    assert stop.value.code == 130, err
    assert ("Ctrl-C: stopping with a checkpoint after the current GRPO iteration, which the "
            "run resumes from; Ctrl-C again stops at once") in err, err
    assert [p.name for p in (tmp_path / "r" / "checkpoints").glob("ckpt_*.pt")] == [
        "ckpt_000001.pt"]


@pytest.mark.parametrize("kind", ["none", "league"])
def test_check_experiment_refuses_it_before_any_model_is_built(kind):
    """The early check (selfplay-train runs it before the run folder and torch's model load),
    for the single run's team and each LLM member of a league."""
    from llm_agents.settings import LLMConfig
    from populations.experiment import ExperimentConfig, GameConfig, check_experiment
    from populations.experiment_config import PopulationConfig

    cfg = ExperimentConfig(algo="llm_grpo", game=GameConfig(name="openspiel/kuhn_poker"),
                           llm=LLMConfig(role_prompts={"plyer_1": "hi"}),
                           population=PopulationConfig(kind=kind))
    with pytest.raises(ValueError, match=r"^llm.role_prompts has role 'plyer_1' \(did you mean "
                                         r"'player_1'\?\); openspiel/kuhn_poker's roles are "
                                         r"player_0, player_1$"):
        check_experiment(cfg)
    check_experiment(dataclasses.replace(cfg, llm=LLMConfig(role_prompts={"scout": "x"})))
