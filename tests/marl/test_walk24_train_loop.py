"""Walk 24: what the training loop tells about its budget and its speed.

1. A budget below a replay learner's warm-up trained nothing without a warning:
   ``selfplay-train algo=maddpg game=vmas_spread num_envs=16 frames=800`` logged ``trained 800
   frames ... (0 updates)`` at INFO and tabled the untrained snapshot as trained;
   ``population=psro ... population.oracle_frames=800`` with MADDPG best responses added
   untrained networks to PSRO. Now one warning names the budget's setting and
   ``<algo>.learning_starts`` (up front), and a loop that ends without any update for another
   reason says so after it.
2. The progress bar showed the collection rate (tqdm's moving average of the fast steps between
   updates): 35,000 frame/s and ETA 00:03 on 4,096 VMAS copies whose real rate, with a 25 s
   PPO update, was 3,833 frame/s; ``metrics.csv`` had no rate at all; ``frames=1000`` with
   4,096 copies played 102,400 frames and said so only in its closing line. Now the bar's rate
   is frames over the wall time so far (updates included), every update logs
   ``charts/frames_per_second`` alike, and a plan more than twice the budget is told at start.
"""

from __future__ import annotations

import csv
import logging
import re
import types
from pathlib import Path

import numpy as np
import pytest
import tqdm.std
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

import games
import marl.train
from marl import registry
from marl.core import Learner
from marl.maddpg import MADDPG, MADDPGConfig
from marl.mappo import MAPPO, MAPPOConfig
from marl.train import RandomPolicy, planned_frames, short_budget, train, warmup_frames
from populations.experiment import run_experiment
from populations.learner_sections import settings
from populations.psro_run import short_oracle_budget

CLIMB = "matrix/climbing"
QUIET = ["progress=false", "logger=csv", "eval_episodes=2", "checkpoint_every_s=0"]


def _cfg(*overrides: str):
    with initialize_config_module(config_module="configs", version_base=None):
        return OmegaConf.to_object(compose(config_name="config", overrides=list(overrides)))


def _warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


# ------------------------------------------------------------------ 1. a short budget
def test_train_warns_up_front_when_the_budget_ends_before_the_first_update(caplog):
    vg = games.VectorGame("openspiel/matrix_brps", 4, seed=0, with_state=True)
    learner = MADDPG(vg.spec, MADDPGConfig(learning_starts=100, batch_size=8), seed=0)
    with caplog.at_level(logging.INFO, logger="marl.train"):
        res = train(learner, vg, 50, progress=False)
    assert res.updates == 0
    (line,) = _warnings(caplog)  # one line, before the loop's closing line
    assert line.startswith("frames=50 ends before the first update: the learner collects "
                           "maddpg.learning_starts=100 frames first"), line
    assert "give it at least 100 frames or lower maddpg.learning_starts" in line
    assert caplog.messages.index(line) < next(
        i for i, m in enumerate(caplog.messages) if m.startswith("trained 52 frames"))


def test_a_batch_above_learning_starts_is_the_warm_up_it_names():
    cfg = MADDPGConfig(learning_starts=10, batch_size=64)
    assert warmup_frames(cfg) == 64
    why = short_budget(40, 40, cfg, "maddpg")
    assert "maddpg.batch_size=64 (above maddpg.learning_starts=10)" in why
    assert short_budget(40, 64, cfg, "maddpg") == ""  # rounded up to whole steps: enough
    assert "its replay holds 30" in short_budget(20, 20, cfg, "maddpg", held=30)
    assert short_budget(40, 40, cfg, "maddpg", held=30) == ""  # a resumed replay: enough
    assert warmup_frames(MAPPOConfig()) == 0 and short_budget(1, 1, MAPPOConfig(), "mappo") == ""


def test_a_single_run_below_learning_starts_warns_once(tmp_path, caplog):
    """``selfplay-train algo=vdn ... frames=40``: the warning names ``frames`` and
    ``vdn.learning_starts``; the run still finishes (a warning, not a refusal)."""
    cfg = _cfg("algo=vdn", "game=climbing", "frames=40", "num_envs=4", *QUIET)
    caplog.set_level(logging.INFO)
    summary = run_experiment(cfg, tmp_path / "run")
    assert summary.table[0]["frames"] == 40
    lines = [m for m in _warnings(caplog) if "first update" in m or "no update" in m]
    assert lines == ["frames=40 ends before the first update: the learner collects "
                     "vdn.learning_starts=1000 frames first, so it makes no update and plays "
                     "as initialized; give it at least 1000 frames or lower "
                     "vdn.learning_starts"]


def test_a_psro_oracle_below_learning_starts_warns_once_for_every_response(tmp_path, caplog):
    """The walker's PSRO run, on the shipped MADDPG-oracle preset: one warning naming
    ``population.oracle_frames``, not one more per best response."""
    cfg = _cfg("experiment=psro_maddpg_oracle", "population.iterations=2",
               "population.oracle_frames=40", "maddpg.learning_starts=1000", "num_envs=4",
               *QUIET)
    caplog.set_level(logging.INFO)
    run_experiment(cfg, tmp_path / "run")
    lines = [m for m in _warnings(caplog) if "first update" in m or "no update" in m]
    assert lines == ["PSRO's best responses (population.oracle=maddpg): "
                     "population.oracle_frames=40 ends before the first update: the learner "
                     "collects maddpg.learning_starts=1000 frames first, so it makes no update "
                     "and plays as initialized; give it at least 1000 frames or lower "
                     "maddpg.learning_starts"]
    trained = [m for m in caplog.messages if m.startswith("RL oracle:") and "trained" in m]
    assert len(trained) == 4 and all("(0 updates)" in m for m in trained)  # 2 x 2 responses
    # out of the run, the oracle's own loop warns again (nothing told it up front)
    caplog.clear()
    vg = games.VectorGame("openspiel/matrix_brps", 4, seed=0, with_state=True)
    train(MADDPG(vg.spec, MADDPGConfig(learning_starts=1000), agents=("player_0",)), vg, 40,
          opponents={"player_1": RandomPolicy(vg.spec)}, progress=False, log_as="RL oracle: x")
    assert [m for m in _warnings(caplog) if "first update" in m] == [
        "RL oracle: x: frames=40 ends before the first update: the learner collects "
        "maddpg.learning_starts=1000 frames first, so it makes no update and plays as "
        "initialized; give it at least 1000 frames or lower maddpg.learning_starts"]


@pytest.mark.parametrize("algo", ["vdn", "qmix", "maddpg"])
def test_no_warning_for_the_default_presets(algo, caplog):
    """A replay learner's default settings and budget, and the shipped MADDPG-oracle PSRO
    preset, train (no warning)."""
    cfg = _cfg(f"algo={algo}")
    entry = registry.get(algo)
    config = entry.resolve(settings(cfg, entry))
    assert short_budget(cfg.frames, planned_frames(cfg.frames, cfg.num_envs), config,
                        entry.section) == ""
    psro = _cfg("experiment=psro_maddpg_oracle")
    with caplog.at_level(logging.WARNING), short_oracle_budget(psro, psro.population.iterations):
        pass
    assert _warnings(caplog) == []


class Clocked(Learner):
    """Plays action 0, ready after every ``every`` steps (0: never); each step costs
    ``step_s`` and each update ``update_s`` seconds of a fake clock."""

    def __init__(self, spec, clock, every: int, step_s: float, update_s: float) -> None:
        self.spec, self.agents, self.clock = spec, tuple(spec.agent_ids), clock
        self.every, self.step_s, self.update_s, self.steps = every, step_s, update_s, 0

    def act(self, vs):
        return {a: np.zeros(len(vs.done), dtype=np.int64) for a in self.agents}

    def observe(self, vs):
        self.steps += 1
        self.clock.now += self.step_s

    def ready(self):
        return bool(self.every) and self.steps % self.every == 0

    def update(self):
        self.clock.now += self.update_s
        return {}

    def policy(self):
        return RandomPolicy(self.spec)

    def state_dict(self):
        return {}

    def load_state_dict(self, state):
        pass


def test_a_loop_that_never_updated_says_so_after_it(caplog):
    """No warm-up a check foresees (a learner of its own, never ready): a warning after the
    loop, as the closing INFO line alone said ``(0 updates)``."""
    vg = games.VectorGame(CLIMB, 4, seed=0)
    learner = Clocked(vg.spec, types.SimpleNamespace(now=0.0), 0, 0.0, 0.0)
    with caplog.at_level(logging.INFO, logger="marl.train"):
        res = train(learner, vg, 16, progress=False, log_as="mine")
    assert res.updates == 0
    (line,) = _warnings(caplog)
    assert line.startswith("mine: made no update in 16 frames (frames=16), so it plays as "
                           "initialized"), line


# ------------------------------------------------------------------ 2. the loop's speed
@pytest.fixture
def fake_clock(monkeypatch):
    """One fake clock for marl.train and tqdm (its monitor thread off: it reads real time)."""
    clock = types.SimpleNamespace(now=1000.0)
    monkeypatch.setattr(marl.train, "time", types.SimpleNamespace(perf_counter=lambda: clock.now))
    monkeypatch.setattr(tqdm.std, "time", lambda: clock.now)
    monkeypatch.setattr(tqdm.std.tqdm, "monitor_interval", 0)
    return clock


def test_the_rate_counts_the_update_time(fake_clock, capsys):
    """20 fast steps of 4 copies (0.1 s each: 40 frame/s) then a 10 s update, twice: 160
    frames in 24 s. The bar drawn after the first update and ``charts/frames_per_second``
    read 6.67 frame/s (80 frames in 12 s); before, the bar read the steps' rate (40 frame/s,
    tqdm's moving average) until its closing line, and no metric said any."""
    vg = games.VectorGame(CLIMB, 4, seed=0)
    learner = Clocked(vg.spec, fake_clock, 20, 0.1, 10.0)
    res = train(learner, vg, 160, progress=True)
    assert res.updates == 2 and res.frames == 160
    assert [m["charts/frames_per_second"] for m in res.metrics] == pytest.approx(
        [80 / 12, 160 / 24])
    lines = capsys.readouterr().err.split("\r")
    drawn = [float(re.search(r"([\d.]+)frame/s", line).group(1)) for line in lines
             if "ret=" in line]  # drawn after an update (its postfix), the first at 80 frames
    assert drawn[0] == pytest.approx(80 / 12, abs=0.01)  # before: 40.00 (the steps alone)
    assert drawn[-1] == pytest.approx(160 / 24, abs=0.01)


def test_metrics_csv_holds_the_rate_and_a_large_rounding_is_told_at_start(tmp_path, caplog):
    """``frames=1000 num_envs=4096``-like: rollouts of 4 copies x 8 steps, ``frames=4`` plays
    32 frames: one INFO line at start says so (before the loop's first update)."""
    cfg = _cfg("game=climbing", "frames=4", "num_envs=4", "mappo.rollout_steps=8", *QUIET)
    caplog.set_level(logging.INFO)
    summary = run_experiment(cfg, tmp_path / "run")
    assert summary.table[0]["frames"] == 32
    told = [m for m in caplog.messages if m.startswith("will play")]
    assert told == ["will play 32 frames for frames=4: rounded up to whole rollouts of 32 "
                    "frames"]
    with open(Path(tmp_path / "run" / "metrics.csv"), newline="") as fh:
        keys = [r["key"] for r in csv.DictReader(fh) if r["step"] == "32"]
    assert "charts/frames_per_second" in keys
    # within twice the budget: nothing more than the closing line says
    caplog.clear()
    vg = games.VectorGame(CLIMB, 4, seed=0, with_state=True)
    train(MAPPO(vg.spec, MAPPOConfig(rollout_steps=4)), vg, 10, progress=False)
    assert not [m for m in caplog.messages if m.startswith("will play")]
