"""A frame budget typed for a run whose learners are all LLM teams is named as not read:
they train ``llm.iterations`` GRPO iterations (a league's, per member and generation), not
frames. ``selfplay-train game=rps algo=llm_grpo frames=2000``, meant as a smoke test, trained
the default 100 iterations (about 4.5 minutes) without a word, while ``llm.iterations=1``
beside ``algo=qmix`` was named as unread (walk32 M3)."""

from __future__ import annotations

import pytest

from tests.populations.test_walk19_experiment import _composed


@pytest.mark.parametrize(("line", "notes"), [
    (["game=rps", "algo=llm_grpo", "frames=2000"],
     ["frames=2000: not read by this run (algo=llm_grpo trains llm.iterations=100 GRPO "
      "iterations, not frames)"]),
    (["game=kuhn", "algo=llm_grpo", "population=self_play", "llm.iterations=2",
      "population.frames_per_generation=3000"],
     ["population.frames_per_generation=3000: not read by this run (algo=llm_grpo trains "
      "llm.iterations=2 GRPO iterations per member and generation, not frames)"]),
    # read: a learner of frames (alone, or beside an LLM team) counts them; no note
    (["game=rps", "algo=qmix", "frames=2000"], []),
    (["game=kuhn", "population=pfsp", "population.members=[mappo,llm_grpo]",
      "population.frames_per_generation=3000"], []),
    (["game=rps", "algo=llm_grpo", "llm.iterations=3"], []),
])
def test_a_frame_budget_llm_teams_do_not_read_is_named(line, notes, tmp_path, monkeypatch):
    from populations.train_overrides import unused_overrides

    exp = _composed([*line, "progress=false"], monkeypatch, tmp_path)
    assert unused_overrides(exp, line) == notes
