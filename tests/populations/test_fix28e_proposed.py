"""walk28a's findings in files fix28e does not own (the coordinator's diff
/tmp/fix28e/prop/others.diff): each test fails before that diff.

* ``llm.adv_norm=role`` got "keys of llm: model, tiny, ..., grpo", no ``nearest:``: a key
  not close to any of its section's but found in a section inside it is named there.
* After Ctrl-C the progress bar showed 8/30 under "stopped at iteration 9": the bar counts an
  iteration before the stop line says the run stopped after it.
* ``Game.parse_action(agent, None)`` (or bytes, an int) raised TypeError, not InvalidAction.
"""

from __future__ import annotations

import os
import signal

import pytest

import games
from games.core import InvalidAction
from populations.command_line import CLIError
from populations.db import LeagueDB
from populations.train_overrides import check_command_line
from tests.populations.test_fix26g_llm_runs import FAST
from tests.populations.test_walk18_cli_more import _train


@pytest.mark.parametrize("key, nearest", [
    ("llm.adv_norm=role", "llm.grpo.adv_norm"),
    ("llm.invalid_penalty=-1", "llm.grpo.action.invalid_penalty"),
    ("llm.grpo.temperature=0.5", "llm.grpo.action.sampling.temperature")])
def test_a_key_of_a_section_inside_is_named_as_nearest(key, nearest):
    with pytest.raises(CLIError) as err:
        check_command_line(["algo=llm_grpo", "game=kuhn", key])
    assert str(err.value).endswith(f"; nearest: {nearest}"), err.value


def test_a_key_near_none_still_lists_the_sections_keys():
    with pytest.raises(CLIError) as err:
        check_command_line(["algo=llm_grpo", "game=kuhn", "llm.zzz=1"])
    assert str(err.value).endswith("; keys of llm: model, tiny, corpus_episodes, backend, team, "
                                   "role_prompts, iterations, dtype, gradient_checkpointing, "
                                   "lora, grpo"), err.value


def test_the_bar_counts_the_iteration_a_stop_came_after(monkeypatch, tmp_path, capfd,
                                                        recorded_bars):
    import marl.progress

    bars = recorded_bars(marl.progress)
    record = LeagueDB.log_metrics

    def log_metrics(self, run_id, step, metrics, *args, **kwargs):
        record(self, run_id, step, metrics, *args, **kwargs)
        if step == 1:  # Ctrl-C during the first iteration: it stops after it
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(LeagueDB, "log_metrics", log_metrics)
    with pytest.raises(SystemExit) as stop:
        _train([*FAST, "progress=true", f"hydra.run.dir={tmp_path / 'r'}"], monkeypatch,
               tmp_path)
    err = capfd.readouterr().err
    assert stop.value.code == 130, err
    (bar,) = [b for b in bars if b.total == 2]
    assert bar.n == 1, bar.text.getvalue()  # before: 0 (0/2 under "stopped at iteration 1")


@pytest.mark.parametrize("text", [None, b"<action>send 1</action>", 3])
def test_parse_action_refuses_what_is_not_text_as_invalid(text):
    game = games.make("tool/relay", max_value=2, ops="+")
    ts = game.reset(seed=0)
    agent = ts.acting[0]
    with pytest.raises(InvalidAction) as err:
        game.parse_action(agent, text)
    assert str(err.value) == (f"{agent} in {game.spec.name}: cannot parse {text!r} as an "
                              "action (not a str); legal: ['send 0', 'send 1', 'send 2']")
