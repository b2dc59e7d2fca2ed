"""prog41 (walk41b's M1, M3): what a run says of its seating and of its progress.

* M1: ``algo=llm_grpo`` with ``population=none`` trained every seat in self-play and its log
  said nothing of it (README: "its log says so at the start"), while evaluation plays the
  first team against random seats.
"""

from __future__ import annotations

from pathlib import Path

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
