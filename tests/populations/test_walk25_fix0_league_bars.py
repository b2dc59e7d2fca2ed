"""A league's bars (each member's generation, each generation's evaluation) show the overall
rate, the count over the wall time so far (tqdm ``smoothing=0``), as a single learner's bar
has since session 24 (``marl.train.train``). Before: tqdm's moving average, which swung
between the fast steps and the pauses of each update."""

from __future__ import annotations

import populations.league as league_module
from populations.league import League
from tests.populations.test_league import _kuhn


def test_league_bars_show_the_overall_rate(tmp_path, recorded_bars):
    made = recorded_bars(league_module)
    league = League(_kuhn(generations=1, frames_per_generation=8, num_envs=1),
                    tmp_path / "run", progress=True)
    try:
        league.run()
    finally:
        league.close()
    assert sorted(b.unit for b in made) == ["frame", "pair"]
    assert [b.smoothing for b in made] == [0, 0]
