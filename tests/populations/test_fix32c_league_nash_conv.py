"""A league with ``population.nash_conv=true`` (the ``mixed_league`` preset) says each new
snapshot's exact NashConv on the console, one line a generation, as the approximate one's
lines do: it reached metrics.csv and the dashboard only, and the console said
``enumerated openspiel/kuhn_poker: 58 histories ...`` alone (walk32 L6)."""

from __future__ import annotations

import logging

from populations.league import League
from tests.populations.test_league import _kuhn


def test_the_exact_nash_conv_of_each_generation_is_said(tmp_path, caplog):
    league = League(_kuhn(generations=1, frames_per_generation=8, nash_conv=True),
                    tmp_path / "run")
    try:
        with caplog.at_level(logging.INFO, "populations.league"):
            league.run()
        recorded = {r["label"]: r["value"] for r in league.db.exploitability(league.run_id)
                    if r["method"] == "exact"}
    finally:
        league.close()
    said = [r.getMessage() for r in caplog.records if "NashConv" in r.getMessage()]
    assert set(recorded) == {"main@v0", "main@v1"}
    assert said == [f"generation {g}: exact NashConv main@v{g} {recorded[f'main@v{g}']:.4f} "
                    "(nash_conv/<member> in the metrics)" for g in (0, 1)]


def test_a_league_without_it_says_none(tmp_path, caplog):
    league = League(_kuhn(generations=1, frames_per_generation=8), tmp_path / "run")
    try:
        with caplog.at_level(logging.INFO, "populations.league"):
            league.run()
    finally:
        league.close()
    assert not [r for r in caplog.records if "NashConv" in r.getMessage()]
