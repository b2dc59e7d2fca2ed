"""``selfplay-eval``: Ctrl-C before any match ended said "they are kept" (there was nothing to
keep); ``--exploit-frames 100000000000000000000`` was refused only after torch and the policy
files loaded; and the round robin's bar was off when stderr was no terminal (a redirected log
said nothing for minutes), where every selfplay-train bar writes plain lines
(``marl.progress``)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest

from populations.config_checks import EXPLOIT_SIZES
from tests.populations.eval_cli_run import run_eval
from tests.populations.test_walk22_eval_scale import _snapshots

KUHN = "openspiel/kuhn_poker"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return _snapshots(tmp_path_factory.mktemp("snaps"), KUHN, 3)


def _ctrl_c_after(monkeypatch, pairs: int) -> None:
    """A real SIGINT (Ctrl-C) once the round robin has played ``pairs`` pairs (0: before the
    first match)."""
    import populations.evaluation as evaluation

    play = evaluation.evaluate_pairs

    def interrupted(*args, tick, **kwargs):
        def ticked(done):
            tick(done)
            if done >= pairs:
                os.kill(os.getpid(), signal.SIGINT)

        if pairs == 0:
            os.kill(os.getpid(), signal.SIGINT)
        return play(*args, tick=ticked, **kwargs)

    monkeypatch.setattr(evaluation, "evaluate_pairs", interrupted)


def test_ctrl_c_before_any_match_does_not_say_they_are_kept(files, tmp_path, capsys,
                                                            monkeypatch):
    _ctrl_c_after(monkeypatch, 0)
    code, _, err = run_eval(["--game", KUHN, "--db", str(tmp_path / "r.db"), "--episodes", "2",
                             *files], capsys)
    assert code == 130, err
    assert err.strip().splitlines()[-1] == (
        f"selfplay-eval: interrupted after 0 of 3 pairings (0 of 12 matches): no match had "
        f"ended; the run is kept in {tmp_path / 'r.db'} (run 1, status interrupted); running "
        "the same command again starts a new evaluation (a new run that plays all 3 pairings "
        "again; this one is not resumed)")


def test_ctrl_c_after_a_pairing_still_says_they_are_kept(files, tmp_path, capsys, monkeypatch):
    _ctrl_c_after(monkeypatch, 1)
    code, _, err = run_eval(["--game", KUHN, "--db", str(tmp_path / "r.db"), "--episodes", "2",
                             *files], capsys)
    assert code == 130, err
    assert err.strip().splitlines()[-1].startswith(
        "selfplay-eval: interrupted after 1 of 3 pairings (4 of 12 matches); they are kept "
        "in "), err


@pytest.mark.parametrize(("flag", "name"), [
    ("--exploit-frames", "frames"), ("--exploit-seeds", "seeds"),
    ("--exploit-episodes", "eval_episodes")])
def test_an_exploit_budget_past_its_bound_is_refused_before_the_files_load(tmp_path, capsys,
                                                                          flag, name):
    top, why = EXPLOIT_SIZES[name]
    low = 2 if name == "eval_episodes" else 1
    code, _, err = run_eval(["--db", str(tmp_path / "r.db"), "--exploit", flag, str(top + 1),
                             str(tmp_path / "missing_a.pt"), str(tmp_path / "missing_b.pt")],
                            capsys)
    assert code == 2
    assert err.strip().splitlines() == [
        f"selfplay-eval: approx exploitability: {name} must be an integer from {low} to {top} "
        f"({why}), got {top + 1} ({flag})"]


EARLY = """
import sys
from populations.eval_cli import eval_main
try:
    eval_main(["--db", "r.db", "--exploit", "--exploit-frames", str(10**20), "a.pt", "b.pt"])
except SystemExit as stop:
    print(stop.code)
print("torch" in sys.modules)
"""


def test_the_bound_is_checked_before_torch(tmp_path):
    run = subprocess.run([sys.executable, "-c", EARLY], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert run.stdout.split() == ["2", "False"], run.stdout + run.stderr
    assert "(--exploit-frames)" in run.stderr and not (tmp_path / "r.db").exists()


def test_a_redirected_stderr_gets_the_round_robins_plain_line(files, tmp_path, capsys):
    code, _, err = run_eval(["--game", KUHN, "--db", str(tmp_path / "r.db"), "--episodes", "1",
                             *files], capsys, bars=True)  # capsys: no terminal, as a log
    assert code == 0, err
    assert "\r" not in err, err
    assert re.search(r"^selfplay-eval round robin: 100% 3/3 \[[^\]]*pair/s\]$", err, re.M), err


def test_a_terminal_gets_the_round_robins_bar(files, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    code, _, err = run_eval(["--game", KUHN, "--db", str(tmp_path / "r.db"), "--episodes", "1",
                             *files], capsys, bars=True)
    assert code == 0, err
    assert "\rselfplay-eval round robin: " in err and "| 0/3 [" in err, err  # tqdm's bar
    assert not re.search(r"^selfplay-eval round robin: 100%", err, re.M), err
