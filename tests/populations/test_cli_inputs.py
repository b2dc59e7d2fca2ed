"""Bad values on the command lines of ``selfplay-demo`` and ``selfplay-eval``: one line naming
the value and what is accepted, exit 2, no traceback; text read from a file is printed escaped."""

import subprocess
import sys
from pathlib import Path

import pytest

from populations import demo

BIN = Path(sys.executable).parent


def _demo(args, capsys):
    with pytest.raises(SystemExit) as stop:
        demo.main(args)
    out = capsys.readouterr()
    return stop.value.code, out.out, out.err


@pytest.mark.parametrize("args, said", [
    # before: a GameError traceback (num_envs 0, -1), +nan returns (episodes 0, -3),
    # numpy's "expected non-negative integer" traceback (seed -1)
    (["--num-envs", "0"], "--num-envs: 0: expected an integer from 1 to 1024"),
    (["--num-envs", "-1"], "--num-envs: -1: expected an integer from 1 to 1024"),
    (["--num-envs", "1025"], "--num-envs: 1025: expected an integer from 1 to 1024"),
    (["--num-envs", "1.5"], "--num-envs: '1.5': expected an integer from 1 to 1024"),
    (["--episodes", "0"], "--episodes: 0: expected an integer >= 1"),
    (["--episodes", "-3"], "--episodes: -3: expected an integer >= 1"),
    (["--episodes", "x"], "--episodes: 'x': expected an integer >= 1"),
    (["--seed", "-1"], "--seed: -1: expected an integer >= 0"),
    (["--seed", "1e3"], "--seed: '1e3': expected an integer >= 0"),
])
def test_demo_bad_values_are_one_line(args, said, capsys):
    code, out, err = _demo(args, capsys)
    assert code == 2 and out == ""
    assert err.splitlines() == [f"selfplay-demo: argument {said} (see --help)"]


def test_demo_ctrl_c_is_one_line(monkeypatch, capsys):
    def stop(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(demo, "_round_robin", stop)
    code, _, err = _demo(["--episodes", "1"], capsys)
    assert code == 130 and err == "selfplay-demo: interrupted\n"


def test_demo_console_script_num_envs_0():
    # the walk of the review (RA-13), from the installed script
    run = subprocess.run([BIN / "selfplay-demo", "--num-envs", "0"], capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 2 and run.stdout == "", run.stderr
    assert run.stderr == ("selfplay-demo: argument --num-envs: 0: expected an integer from 1 "
                          "to 1024 (see --help)\n")
