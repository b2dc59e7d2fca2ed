"""prog41 (walk41b's M3 a, c): an evaluation's bar moves within its long items.

* a league's evaluation bar counted whole pairs: "0/1 pair" for 648 s of one pair of an LLM
  member's episodes; its postfix now counts the pair's episodes as each ends (in process).
* a single run's evaluation bar counted finished episodes: 0/32 for minutes on a game whose
  episodes all run 1000 steps; its postfix now says the step the running episodes are at.
"""

from __future__ import annotations

import sys
from pathlib import Path

from marl.progress import tqdm
from tests.populations.test_walk18_cli_more import _train

LLM = ["llm.iterations=1", "llm.grpo.group_size=2", "llm.grpo.groups_per_step=2",
       "llm.grpo.minibatch_turns=4", "llm.tiny.n_layer=1", "llm.tiny.n_embd=16",
       "llm.corpus_episodes=5", "logger=none", "checkpoint_every_s=1000", "progress=true"]


def _notes(monkeypatch) -> list[tuple[str, str]]:
    """Every (bar description, postfix) a bar's note() is given (the real bar draws them)."""
    seen: list[tuple[str, str]] = []
    note = tqdm.note

    def spy(self, text, now=False):
        seen.append((self.desc, text))
        note(self, text, now)

    monkeypatch.setattr(tqdm, "note", spy)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)  # a terminal's bar
    return seen


def test_a_league_evaluation_counts_the_pairs_episodes(tmp_path, monkeypatch, capsys):
    seen = _notes(monkeypatch)
    _train([*LLM, "game=kuhn", "population=self_play", "population.members=[llm_grpo]",
            "population.generations=1", "eval_episodes=3", f"hydra.run.dir={tmp_path / 'r'}"],
           monkeypatch, Path(tmp_path))
    evals = [t for d, t in seen if d == "generation 1/1 evaluation"]
    # one pair: v1 against v0, 3 episodes a side, told as they end (those ending at one step
    # of the game copies together): 0/6, 3/6, 6/6
    counts = [int(t.removesuffix("/6 episodes")) for t in evals]
    assert counts[0] == 0 and counts[-1] == 6 and len(counts) > 2, seen
    assert counts == sorted(set(counts)), seen
    assert "6/6 episodes" in capsys.readouterr().err


def test_a_single_runs_evaluation_says_the_step_of_its_episodes(tmp_path, monkeypatch):
    seen = _notes(monkeypatch)
    _train(["game.name=openspiel/tiny_bridge_2p", "frames=64", "num_envs=4",
            "mappo.rollout_steps=4", "mappo.epochs=1", "mappo.minibatches=1",
            "eval_episodes=2", "progress=true", "logger=none",
            f"hydra.run.dir={tmp_path / 'r'}"], monkeypatch, Path(tmp_path))
    evals = [t for d, t in seen if d == "evaluation"]
    assert evals[:2] == ["running episodes at step 1 of up to 8",
                         "running episodes at step 2 of up to 8"], seen
