"""With ``runner=ray`` a league's evaluation matches are played in Ray workers: an LLM
snapshot's move counts (``MatchResult.moves``, fix 26i) come back with each job's result,
the same as the in-process runner counts them, so ``eval_legal_rate/<member>`` is logged
whichever runner played. Uses the session's Ray instance (``ray_local``)."""

import sqlite3

from populations.experiment import run_experiment
from populations.runners import LocalRunner, MatchJob, RayRunner
from tests.populations.test_fix26i_league_legal_rate import INVALID, LEAGUE
from tests.populations.test_llm_experiments import _experiment


def test_ray_workers_return_the_llm_moves_the_local_runner_counts(tmp_path, ray_local):
    summary = run_experiment(_experiment([*LEAGUE, *INVALID]), tmp_path)
    db = sqlite3.connect(summary.database)
    try:
        rows = db.execute("SELECT m.name, s.path FROM snapshots s JOIN members m "
                          "ON s.member_id = m.id WHERE s.version = 1").fetchall()
    finally:
        db.close()
    paths = {m: str(summary.run_dir / p) for m, p in rows}  # recorded relative to the run
    jobs = [MatchJob(f"k{i}", "openspiel/tic_tac_toe", seats, episodes=3, seed=i)
            for i, seats in enumerate([{"player_0": paths["llm"], "player_1": paths["mappo"]},
                                       {"player_0": paths["mappo"], "player_1": paths["llm"]},
                                       {"player_0": paths["llm"], "player_1": paths["llm"]}])]
    local = LocalRunner()
    ray = RayRunner(num_workers=1)
    try:
        here, there = local.play(jobs), ray.play(jobs)
    finally:
        local.close()
        ray.close()
    assert [r.moves for r in there] == [r.moves for r in here]
    for r in there:
        assert list(r.moves) == [paths["llm"]]  # the MAPPO snapshot counts no moves
        moves, fallbacks = r.moves[paths["llm"]]
        assert moves >= 3 and fallbacks == moves  # one token never names x(1,2)
