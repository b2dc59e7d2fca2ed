"""A single run's evaluation bar and ``selfplay-eval``'s round-robin bar kept tqdm's moving
average where every other bar shows the overall rate (``smoothing=0``)."""

from __future__ import annotations

KUHN = "openspiel/kuhn_poker"


def test_a_single_runs_evaluation_bar_shows_the_overall_rate(tmp_path, monkeypatch,
                                                             recorded_bars):
    import marl.progress
    from tests.populations.test_walk18_cli_more import TINY, _train

    bars = recorded_bars(marl.progress)
    _train([*TINY, "frames=16", "eval_episodes=2", "progress=true",
            f"hydra.run.dir={tmp_path / 'r'}"], monkeypatch, tmp_path)
    evaluation = [b for b in bars if b.unit == "episode"]
    assert [(b.desc, b.total, b.n, b.smoothing) for b in evaluation] == [
        ("evaluation", 2, 2, 0)]


def test_selfplay_evals_round_robin_bar_shows_the_overall_rate(tmp_path, monkeypatch, capsys,
                                                               recorded_bars):
    import sys

    import marl.progress
    from tests.populations.eval_cli_run import run_eval
    from tests.populations.test_walk22_eval_scale import _snapshots

    files = _snapshots(tmp_path, KUHN, 3)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)  # a terminal
    bars = recorded_bars(marl.progress)
    code, _, err = run_eval(["--game", KUHN, "--db", str(tmp_path / "r.db"), "--episodes",
                             "1", *files], capsys)
    assert code == 0, err
    assert [(b.desc, b.total, b.smoothing) for b in bars] == [
        ("selfplay-eval round robin", 3, 0)]
