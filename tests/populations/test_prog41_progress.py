"""prog41 (walk41b's M1, M3): what a run says of its seating and of its progress.

* M1: ``algo=llm_grpo`` with ``population=none`` trained every seat in self-play and its log
  said nothing of it (README: "its log says so at the start"), while evaluation plays the
  first team against random seats.
* M3 (b): a league's LLM member bar counted episodes alone, still for minutes inside the
  GRPO update; it shows the update's minibatches now, as the single run's bar does.
* M3 (d): in a log, the single LLM run's bar said nothing through a first iteration of
  minutes: the postfix's own 30 s throttle ran out of step with the lines' (the clock is
  faked here, no sleeps).
"""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

from llm_agents.trainer import StepProgress
from marl.progress import tqdm
from populations.league_progress import step_postfix
from tests.populations.test_walk18_cli_more import _train

FAST = ["algo=llm_grpo", "llm.iterations=1", "llm.grpo.group_size=2",
        "llm.grpo.groups_per_step=2", "llm.grpo.minibatch_turns=4", "eval_episodes=2",
        "llm.tiny.n_layer=1", "llm.tiny.n_embd=16", "llm.corpus_episodes=5",
        "logger=none", "checkpoint_every_s=1000", "progress=false"]


# ----------------------------------------------------------------- M1: an LLM team's seating
def test_an_llm_single_run_logs_that_it_trains_every_seat(tmp_path, monkeypatch):
    _train([*FAST, "game.name=openspiel/matrix_bos", f"hydra.run.dir={tmp_path / 'r'}"],
           monkeypatch, Path(tmp_path))
    log = (tmp_path / "r" / "cli.log").read_text()
    assert "population=none: llm_grpo trains every seat (player_0, player_1) in self-play" \
        in log, log
    assert "its evaluation plays team 'player_0' (player_0) against uniformly random " \
        "players in the other seats" in log, log


def test_a_cooperative_llm_run_logs_its_one_team(tmp_path, monkeypatch):
    _train([*FAST, "game.name=openspiel/tiny_bridge_2p", f"hydra.run.dir={tmp_path / 'r'}"],
           monkeypatch, Path(tmp_path))
    log = (tmp_path / "r" / "cli.log").read_text()
    assert "population=none: llm_grpo trains every seat of the game's one team 'team' " \
        "(player_0, player_1)" in log, log


# ----------------------------------------------------------------- M3 (b): a league member
def test_a_league_llm_members_bar_shows_the_update(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)  # a terminal's bar
    fast = [a for a in FAST if a not in ("algo=llm_grpo", "progress=false")]
    _train([*fast, "game=kuhn", "population=self_play", "population.members=[llm_grpo]",
            "population.generations=1", "progress=true", f"hydra.run.dir={tmp_path / 'r'}"],
           monkeypatch, Path(tmp_path))
    err = capsys.readouterr().err
    assert re.search(r"generation 1/1 llm: [^\r]*update (\d+)/\1 minibatches", err), err


# ----------------------------------------------------------------- M3 (d): lines in a log
class _Clock:
    now = 1_000.0

    def __call__(self) -> float:
        return self.now


def test_a_log_gets_the_iterations_progress_every_interval(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(tqdm, "clock", staticmethod(clock))
    log = io.StringIO()  # not a terminal: lines
    bar = tqdm(total=2, unit="iter", file=log, smoothing=0)
    show = step_postfix(bar)
    for k in range(1, 10):  # a rollout of 10 s an episode, then the update
        clock.now += 10
        show(StepProgress("rollout", k, 64, 20 * k, 100 * k))
    clock.now += 5
    show(StepProgress("update", 0, 8))
    lines = log.getvalue().splitlines()
    assert lines[1:] == ["0% 0/2 [00:30<?, ?iter/s, rollout 3/64 episodes, 60 turns, 300 "
                         "tokens]",
                         "0% 0/2 [01:00<?, ?iter/s, rollout 6/64 episodes, 120 turns, 600 "
                         "tokens]",
                         "0% 0/2 [01:30<?, ?iter/s, rollout 9/64 episodes, 180 turns, 900 "
                         "tokens]"], lines
    bar.close()
