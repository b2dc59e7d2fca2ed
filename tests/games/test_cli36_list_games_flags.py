"""``python -m games``'s bad flags in one line, exit 2, as the other CLIs' (walk36c): an
empty ``--import`` ended in a 14-line traceback (``ValueError: Empty module name``), an
unknown flag printed argparse's two-line usage."""

import sys

import pytest

from games.__main__ import main
from tests import subprocs


def _err(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1, err
    return err.strip()


def test_an_empty_import_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert _err(["--import", ""], capsys) == (
        f"python -m games: --import: '' is empty (an unset shell variable?); give a module "
        f"name importable from {tmp_path}")


@pytest.mark.parametrize("module", ["../x", "x.py", ".x"])
def test_a_path_as_import_is_one_line(module, tmp_path, monkeypatch, capsys):
    # before: '../x' and '.x' ended in TypeError tracebacks (a relative import)
    monkeypatch.chdir(tmp_path)
    assert _err(["--import", module], capsys) == (
        f"python -m games: --import: {module!r} is a path; give a module name importable from "
        f"{tmp_path} (mypkg.games for mypkg/games.py)")


def test_a_module_that_raises_is_one_line(tmp_path, monkeypatch, capsys):
    # before: only ImportError was caught; a module's own error was a traceback
    (tmp_path / "broken_cli36.py").write_text("raise RuntimeError('boom\\nsecond line')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _err(["--import", "broken_cli36"], capsys) == (
        f"python -m games: --import: cannot import 'broken_cli36' from {tmp_path}: "
        "RuntimeError: boom second line")


def test_an_unknown_flag_is_one_line(capsys):
    assert _err(["--bogus"], capsys) == ("python -m games: unrecognized arguments: --bogus "
                                         "(see --help)")


def test_the_module_as_run_refuses_an_empty_import(tmp_path):
    proc = subprocs.run([sys.executable, "-m", "games", "--import", ""], capture_output=True,
                        text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("python -m games: --import: '' is empty"), proc.stderr
