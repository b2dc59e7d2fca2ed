"""PSRO with sampled payoffs shows a bar of the episodes it samples while it fills the payoff
table (walk 25: 37-180 s of silence per iteration at the default 1000 episodes an entry), and
a CLI's stop request (Ctrl-C, SIGTERM) is obeyed between payoff entries: before, a SIGTERM in
the last iteration's payoffs sampled the whole table and ended with "the run finished before
it could stop". The resume samples the dropped entries again and equals an uninterrupted
run."""

from __future__ import annotations

import logging
import os
import signal
import sqlite3

import pytest

import populations.cli  # noqa: F401  (registers the schema)
import populations.payoffs as payoffs_module
from marl.train import RandomPolicy
from populations import run_folder
from populations.payoffs import SampledPayoffs, sampling
from populations.psro import PSRO, ExactBestResponse, Member, PSROConfig, new_entry_blocks
from tests.populations import test_psro_resume as psro_resume

KUHN = "openspiel/kuhn_poker"


@pytest.fixture
def bars(recorded_bars):
    return recorded_bars(payoffs_module)


def test_psro_shows_a_bar_of_its_sampled_payoff_episodes(bars):
    cfg = PSROConfig(payoffs="sampled", episodes_per_entry=10, nash_conv=False)
    psro = PSRO(KUHN, ExactBestResponse(KUHN), cfg, progress=True)
    psro.iteration()
    psro.iteration()
    # the initial members' entry, then 3 and 5 new entries (populations 2x2, 3x3)
    assert [(b.desc, b.total, b.n) for b in bars] == [
        ("PSRO initial payoffs", 10, 10), ("PSRO iteration 0 payoffs", 30, 30),
        ("PSRO iteration 1 payoffs", 50, 50)]
    assert {b.unit for b in bars} == {"episode"} and {b.smoothing for b in bars} == {0}
    assert "PSRO iteration 1 payoffs" in bars[-1].text.getvalue()


def test_no_bar_without_progress_nor_for_exact_payoffs(bars):
    PSRO(KUHN, ExactBestResponse(KUHN), PSROConfig(payoffs="sampled", episodes_per_entry=4,
                                                   nash_conv=False)).iteration()
    assert bars and all(b.text.getvalue() == "" for b in bars)
    bars.clear()
    PSRO(KUHN, ExactBestResponse(KUHN), PSROConfig(payoffs="exact"), progress=True).iteration()
    assert bars == []


def test_played_entries_advance_the_bar_one_entry_at_a_time(bars):
    est = SampledPayoffs(KUHN, episodes=4, num_envs=2, lockstep=False)
    for agent in est.players:
        for k in range(2):
            est.add_member(Member(f"psro/{agent}/{k}", agent, RandomPolicy(est.spec, seed=k)))
    blocks = new_entry_blocks((1, 1), (2, 2))
    seen = []
    with sampling(est, blocks, "payoffs", progress=True):
        est.on_entries = (lambda n, tick=est.on_entries: (tick(n), seen.append(bars[0].n)))
        for index in blocks:
            est.block(index)
    assert seen == [4, 8, 12] and bars[0].total == 12


SAMPLED = ("population.psro.payoffs=sampled", "population.psro.episodes_per_entry=20",
           "population.psro.meta_solver=nash", "population.psro.response_target=meta")


def _run(run_dir, resume=False):
    return psro_resume._run(run_dir, 2, resume=resume, extra=SAMPLED)


def _state(db_path):
    """test_psro_resume's records of a run, with its payoff table."""
    db = sqlite3.connect(db_path)
    try:
        payoffs = sorted(db.execute(
            "SELECT mr.name, mc.name, p.value, p.count FROM payoffs p "
            "JOIN snapshots r ON p.row_snapshot = r.id JOIN members mr ON r.member_id = mr.id "
            "JOIN snapshots c ON p.col_snapshot = c.id JOIN members mc ON c.member_id = mc.id"
        ).fetchall())
    finally:
        db.close()
    return {**psro_resume._state(db_path), "payoffs": payoffs}


def test_sigterm_in_the_last_iterations_payoffs_stops_between_entries(tmp_path, monkeypatch,
                                                                       caplog, capsys):
    whole = _state(_run(tmp_path / "whole").database)
    sampled = SampledPayoffs._sampled
    calls = []

    def sigterm_in_iteration_1(self, episodes):  # a real SIGTERM as its first block ends
        calls.append(episodes)
        if len(calls) == 4:  # initial entry, iteration 0's two blocks, iteration 1's first
            os.kill(os.getpid(), signal.SIGTERM)
        sampled(self, episodes)

    monkeypatch.setattr(SampledPayoffs, "_sampled", sigterm_in_iteration_1)
    caplog.set_level(logging.WARNING, "populations.payoffs")
    with run_folder.sigterm_as_interrupt(), pytest.raises(run_folder.Terminated):
        _run(tmp_path / "cut")
    monkeypatch.undo()
    assert len(calls) == 4  # iteration 1's second block was never sampled
    assert "finished before it could stop" not in capsys.readouterr().err
    assert [r.getMessage() for r in caplog.records if "stopped" in r.getMessage()] == [
        "stopped in PSRO iteration 1 payoffs after 2 of 5 entries; those 2 are dropped and "
        "the resume samples all 5 again (from the same seeds: the same values)"]
    assert _state(_run(tmp_path / "cut", resume=True).database) == whole
    assert len(whole["payoffs"]) == 2 * 9
