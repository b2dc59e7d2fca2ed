"""``runner=ray`` with ``imports=``: what the user's modules register by name (a policy kind, a
learner, an adv_norm) reaches the Ray actors as it reached the driver (walk 19).

Before, only games did (``games.make`` imports the modules on a name it does not know): the
learner actor training ``mappo`` could not load a custom learner's snapshot ("unknown policy
kind"), the match workers could not evaluate it, PSRO's sampled payoffs failed alike, and a
``mappo.adv_norm`` of the user's was unknown on the actor though the driver accepted it.
The user's package lives in a folder of its own, as a user's would, and the league joins a
two-node cluster by address, whose workers do not inherit the driver's variables."""

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from games.registry import IMPORTS_ENV
from populations.learner_actors import LearnerJob, LearnerPool
from populations.runners import RANDOM, MatchJob, RayRunner, WorkerImportError

LEARNER = '''
import dataclasses

from marl.actor_critic import PPOPolicy
from marl.configs import MAPPOConfig
from marl.core import register_policy
from marl.mappo import MAPPO, MAPPO_CAPABILITIES
from marl.registry import register_learner


@register_policy("w19_kind")
class W19Policy(PPOPolicy):
    """MAPPO's frozen actors, saved and loaded as a kind of their own."""


@register_learner("w19_algo", config=MAPPOConfig, policy="w19_kind",
                  capabilities=MAPPO_CAPABILITIES)
class W19Learner(MAPPO):
    def policy(self) -> W19Policy:
        p = super().policy()
        p.__class__, p.meta = W19Policy, dataclasses.replace(p.meta, kind="w19_kind")
        return p
'''

NORM = '''
from marl.advantages import register_adv_norm


@register_adv_norm("w19_centered")
def centered(x, keys, mask, weights, cfg, state):
    return x - (x if mask is None else x[mask]).mean()
'''


def _user_package(folder: Path) -> Path:
    pkg = folder / "w19pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "learner.py").write_text(textwrap.dedent(LEARNER))
    (pkg / "norm.py").write_text(textwrap.dedent(NORM))
    return folder


@pytest.mark.slow
def test_custom_policy_kind_and_adv_norm_reach_a_clusters_actors(tmp_path, loopback_cluster):
    """``mappo`` (with the user's ``adv_norm``) and the user's ``w19_algo`` in one league on
    Ray actors: ``mappo``'s learner actor draws ``w19_algo``'s snapshots, the match workers
    evaluate them, ``mappo``'s update normalizes with ``w19_centered``. The driver runs in
    the user's folder (``imports=`` finds the package there, as from a shell)."""
    user = _user_package(tmp_path / "user")
    run = tmp_path / "run"
    train = subprocess.run(
        [sys.executable, "-m", "populations.cli", "game.name=openspiel/kuhn_poker",
         "imports=[w19pkg.learner,w19pkg.norm]", "mappo.adv_norm=w19_centered",
         "population=fsp", "population.members=[mappo,w19_algo]",
         "population.generations=1", "population.frames_per_generation=256",  # 1 update
         "num_envs=8", "eval_episodes=2", "progress=false", "logger=none",
         "runner=ray", "runner.workers=1", f"runner.address={loopback_cluster.address}",
         f"hydra.run.dir={run}"], cwd=user, env=loopback_cluster.env, capture_output=True,
        timeout=300)
    assert train.returncode == 0, train.stderr.decode()[-3000:]
    db = sqlite3.connect(run / "league.db")
    trained = sorted(m for (m,) in db.execute("SELECT member FROM generations"))
    status = db.execute("SELECT status FROM runs").fetchone()
    db.close()
    assert status == ("finished",) and trained == ["mappo", "w19_algo"]
    meta = json.loads((run / "snapshots" / "w19_algo" / "v0001.json").read_text())
    assert meta["kind"] == "w19_kind"  # saved as the custom kind, and loaded so by the actors


def test_a_module_missing_on_the_workers_is_one_line_naming_it(tmp_path, monkeypatch,
                                                                  ray_local):
    """A module of ``imports=`` that an actor cannot import (a node without the package) is
    a :class:`WorkerImportError` (a ``ValueError``: the CLI prints it in one line) naming
    the module, from a match worker and from a learner actor alike, not a dead actor."""
    monkeypatch.setenv(IMPORTS_ENV, "w19_not_on_this_node")  # what imports= records
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    runner = RayRunner(num_workers=1)
    try:
        with pytest.raises(WorkerImportError) as err:
            runner.play([MatchJob("m", "openspiel/kuhn_poker",
                                  {"player_0": RANDOM, "player_1": RANDOM}, 1, 0)])
    finally:
        runner.close()
    pool = LearnerPool([SimpleNamespace(name="x")], 1)  # the import fails before the member
    try:
        pool.submit(LearnerJob("x", None, None, b""))  # type: ignore[arg-type]
        with pytest.raises(WorkerImportError) as err2:
            pool.wait()
    finally:
        pool.close()
    for e in (err.value, err2.value):
        text = str(e)
        assert "'w19_not_on_this_node'" in text and "ModuleNotFoundError" in text, text
        assert "\n" not in text and str(tmp_path) in text, text
    assert isinstance(err.value, ValueError)
