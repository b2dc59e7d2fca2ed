"""A league whose members play far more than ``population.frames_per_generation`` a
generation says so as it starts, naming the rounding: an on-policy learner trains whole
rollouts (``num_envs`` × ``rollout_steps`` frames), every step plays all ``num_envs``
copies. ``experiment=vmas_tag_league population.frames_per_generation=3000`` trained 25,600
frames a generation (1,024 copies × 25 steps) without a word, where a single run says it of
``frames`` (walk32 M2)."""

from __future__ import annotations

from tests.populations.user_modules import train_here


def _league(tmp_path, monkeypatch, capfd, *line: str) -> list[str]:
    """The log lines of a one-generation kuhn league run with ``line`` that name a rounding."""
    train_here(["game=kuhn", "population=self_play", "population.generations=1",
                "eval_episodes=1", "logger=none", "progress=false", *line,
                f"hydra.run.dir={tmp_path / 'run'}"], monkeypatch, tmp_path)
    logged = "".join(capfd.readouterr())  # Hydra's log lines, on stdout or stderr
    return [x for x in logged.splitlines() if "rounded up to" in x]


def test_whole_rollouts_past_the_budget_are_said_once_naming_the_members(tmp_path, monkeypatch,
                                                                         capfd):
    """Two MAPPO members (a main and its exploiter) of 16-step rollouts on 4 copies: 64
    frames a generation for 8. One line for both."""
    lines = _league(tmp_path, monkeypatch, capfd, "population.members=[mappo,mappo_exploiter]",
                    "population.frames_per_generation=8", "num_envs=4", "mappo.rollout_steps=16",
                    "mappo.epochs=1")
    assert len(lines) == 1, lines
    assert lines[0].endswith(
        "[INFO] - league members 'mappo', 'exploiter' play 64 frames a generation for "
        "population.frames_per_generation=8: rounded up to one whole rollout of 64 frames "
        "(num_envs=4 × mappo.rollout_steps=16): an on-policy learner trains on every frame it "
        "plays"), lines


def test_whole_steps_of_many_copies_are_said(tmp_path, monkeypatch, capfd):
    """A replay learner steps all its copies: 16 frames a generation for 3."""
    lines = _league(tmp_path, monkeypatch, capfd, "algo=vdn", "population.frames_per_generation=3",
                    "num_envs=16", "vdn.learning_starts=8", "vdn.batch_size=8")
    assert len(lines) == 1 and lines[0].endswith(
        "[INFO] - league member 'main' plays 16 frames a generation for "
        "population.frames_per_generation=3: rounded up to whole steps of the num_envs=16 "
        "game copies"), lines


def test_a_budget_of_whole_rollouts_says_nothing(tmp_path, monkeypatch, capfd):
    assert _league(tmp_path, monkeypatch, capfd, "population.frames_per_generation=64",
                   "num_envs=4", "mappo.rollout_steps=16", "mappo.epochs=1") == []
