"""``python -m populations.league``'s progress: its bars were on only when stderr was a
terminal (``progress=sys.stderr.isatty()``), so a redirected log (``nohup``, a batch
system's) showed no progress at all, where selfplay-train's bars become plain lines there
(``marl.progress``). The league CLI does as selfplay-train does; ``--no-progress`` turns its
bars off, as ``progress=false``."""

import sys

from tests import subprocs

ARGS = ["--game", "openspiel/kuhn_poker", "--generations", "1", "--frames-per-generation", "64",
        "--num-envs", "4", "--eval-episodes", "2"]


def _league(tmp_path, *extra):
    res = subprocs.run([sys.executable, "-m", "populations.league", "--run-dir",
                          str(tmp_path / "run"), *ARGS, *extra], cwd=tmp_path,
                        capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    return res.stderr


def test_a_redirected_league_log_gets_plain_progress_lines(tmp_path):
    log = _league(tmp_path)
    assert "\r" not in log  # lines, not a terminal's redraws
    lines = log.splitlines()
    ends = [line for line in lines if line.startswith("generation 1/1 main: 100% 100/100 [")]
    assert len(ends) == 1, log  # the training bar's last line (frames: 25 steps x 4 copies)
    assert any(line.startswith("generation 1/1 evaluation: 100% 1/1 [") for line in lines), log


def test_no_progress_turns_the_bars_off(tmp_path):
    log = _league(tmp_path, "--no-progress")
    assert not [line for line in log.splitlines() if "%" in line and "[" in line], log
