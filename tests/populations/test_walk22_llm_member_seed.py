"""An LLM league member records the seed it trains with (session 22).

Each league member is seeded from the run's seed tree (``learner/<name>``), as VDN/QMIX/MADDPG
members record it in their settings. Before: an LLM team member's recorded settings
(``league.db`` ``members.settings``, shown by the dashboard) were its ``llm`` section as
written, ``grpo.seed = 0``, a value nothing read."""

from __future__ import annotations

import json
import sqlite3

from populations.seeds import RunSeeds
from tests.populations.test_walk18_cli_more import _train


def _settings(run, name: str) -> dict:
    with sqlite3.connect(run / "league.db") as db:
        (text,) = db.execute("SELECT settings FROM members WHERE name = ?", (name,)).fetchone()
    return json.loads(text)


def test_an_llm_member_records_the_seed_it_was_built_with(tmp_path, monkeypatch):
    run = tmp_path / "run"
    _train(["game=kuhn", "population=pfsp", "population.members=[vdn,llm_grpo]",
            "population.generations=1", "population.frames_per_generation=64",
            "llm.iterations=1", "num_envs=2", "eval_episodes=2", "progress=false", "seed=7",
            f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    seeds = RunSeeds(7)
    llm = _settings(run, "llm")
    assert llm["grpo"]["seed"] == seeds.learner("llm") != 0
    assert _settings(run, "vdn")["seed"] == seeds.learner("vdn")  # recorded alike
    assert llm["tiny"]["seed"] == 0  # the tiny model's own seed, read as given
