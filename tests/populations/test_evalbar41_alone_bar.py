"""``selfplay-eval`` on a game of one team plays each file's episodes alone with no bar: 64
episodes of a VMAS or tool game ran for minutes with no word, where the round robin of a
game of several teams has a bar of pairs (walk41b M1). Each file's episodes get a bar of
episodes, through the same :mod:`marl.progress` bar as the round robin's, fed by the match
as its episodes end (``play_job``'s ``tick``)."""

from __future__ import annotations

import sys

from populations.runners import MatchJob, play_job
from tests.populations.test_walk22_eval_scale import COORDINATION, _snapshots

KUHN = "openspiel/kuhn_poker"


def test_each_file_alone_has_a_bar_of_its_episodes(tmp_path, monkeypatch, capsys,
                                                   recorded_bars):
    import marl.progress
    from tests.populations.eval_cli_run import run_eval

    files = _snapshots(tmp_path, COORDINATION, 2)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)  # a terminal
    bars = recorded_bars(marl.progress)
    code, out, err = run_eval(["--db", str(tmp_path / "r.db"), "--episodes", "5", *files],
                              capsys)
    assert code == 0, err
    assert "each policy alone" in out, out
    assert [(b.desc, b.unit, b.total, b.n, b.smoothing) for b in bars] == [
        (f"selfplay-eval m{k}_v0000 alone", "episode", 5, 5, 0) for k in range(2)]


def test_a_match_ticks_as_its_episodes_end_and_plays_the_same(tmp_path):
    (path,) = _snapshots(tmp_path, KUHN, 1)
    job = MatchJob(key="k", game=KUHN, seats={"player_0": path, "player_1": "random"},
                   episodes=20, seed=3, num_envs=4)
    ticks: list[int] = []
    ticked = play_job(job, tick=ticks.append)
    assert len(ticks) > 1 and ticks == sorted(ticks) and ticks[-1] == 20, ticks
    assert ticked.returns == play_job(job).returns  # the bar changes nothing played
