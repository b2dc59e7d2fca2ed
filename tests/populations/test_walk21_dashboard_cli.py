"""``selfplay-dashboard``'s options met with bad input (walk 21):

* ``--export d.pt`` with ``d.pt`` a folder: a traceback (``IsADirectoryError: 'd.pt.tmp' ->
  'd.pt'``), exit 1, ``d.pt.tmp`` left behind. Now one line, exit 2, nothing written; a
  file that cannot be written (under a file, a folder at its temporary name) alike.
* ``--export /nonexist/r.html`` made the missing folders without a word: now a one-line
  note names the folder it made, as selfplay-train's does for a run folder.
* ``--refresh nan`` / ``inf``: accepted, /api/config said ``"refresh_seconds": null`` and
  the page polled with ``setTimeout(tick, 0)``, as it would past a browser's longest timer.
* ``--host ''``: listened on every interface (0.0.0.0) while printing ``http://:8071/``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from populations.dashboard import cli
from populations.db import LeagueDB


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    """A run folder whose league.db holds one (empty) league run."""
    run = tmp_path / "runs" / "x"
    run.mkdir(parents=True)
    db = LeagueDB(run / "league.db")
    db.create_run("league", experiment="league", game="openspiel/kuhn_poker")
    db.close()
    return run


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err.strip()


def test_export_onto_a_folder_is_one_line(runs, tmp_path, capsys):
    target = tmp_path / "d.pt"
    (target / "inside").mkdir(parents=True)
    assert cli.main([str(runs), "--export", str(target)]) == 2
    err = _one_line(capsys)
    assert err.startswith("selfplay-dashboard: ") and str(target) in err and "folder" in err
    assert "report.html" in err  # what to give instead
    assert not (tmp_path / "d.pt.tmp").exists()
    assert [p.name for p in target.iterdir()] == ["inside"]


@pytest.mark.parametrize("below", ["r.html", "a/b/r.html"])
def test_export_under_a_file_is_one_line(below, runs, tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    target = tmp_path / "notes.txt" / below
    assert cli.main([str(runs), "--export", str(target)]) == 2
    err = _one_line(capsys)
    assert err == (f"selfplay-dashboard: cannot export to {target}: {tmp_path / 'notes.txt'} "
                   "is a file, not a folder"), err
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_a_folder_at_the_temporary_name_is_left_alone(runs, tmp_path, capsys):
    (tmp_path / "r.html.tmp").mkdir()
    assert cli.main([str(runs), "--export", str(tmp_path / "r.html")]) == 2
    assert "cannot write" in _one_line(capsys)
    assert (tmp_path / "r.html.tmp").is_dir() and not (tmp_path / "r.html").exists()


def test_export_onto_a_fifo_is_refused(runs, tmp_path, capsys):
    """Replaced by the page before (/dev/null too, for root)."""
    import os

    os.mkfifo(tmp_path / "pipe")
    assert cli.main([str(runs), "--export", str(tmp_path / "pipe")]) == 2
    assert "not a regular file" in _one_line(capsys)
    assert (tmp_path / "pipe").is_fifo()


def test_export_names_the_folders_it_makes(runs, tmp_path, capsys):
    target = tmp_path / "new" / "sub" / "r.html"
    assert cli.main([str(runs), "--export", str(target)]) == 0
    out = capsys.readouterr()
    assert target.is_file() and f"wrote {target}" in out.out
    assert out.err.count("\n") == 1, out.err
    assert out.err == (f"selfplay-dashboard: note: --export {target} made the new folder "
                       f"{tmp_path / 'new'}\n")
    assert cli.main([str(runs), "--export", str(target)]) == 0  # there now: no note
    assert capsys.readouterr().err == ""


def test_export_over_a_file_replaces_it(runs, tmp_path, capsys):
    target = tmp_path / "r.html"
    target.write_text("old")
    assert cli.main([str(runs), "--export", str(target)]) == 0
    assert target.read_text().startswith("<!") and not (tmp_path / "r.html.tmp").exists()
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("value", ["nan", "inf", "NaN", "1e10"])
def test_refresh_must_be_a_finite_timer(value, runs, capsys):
    with pytest.raises(SystemExit) as stop:
        cli.parse_args([str(runs), "--refresh", value])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"argument --refresh: {value}: expected a number of seconds" in err, err


@pytest.mark.parametrize("flag, value, accepted", [
    ("--port", "abc", "0-65535"), ("--max-points", "many", "an integer >= 2")])
def test_a_numeric_flag_given_no_number_says_what_it_accepts(flag, value, accepted, runs,
                                                             capsys):
    # argparse's own "invalid int value: 'abc'" named no range (selfplay-eval's flags: fix33b)
    with pytest.raises(SystemExit) as stop:
        cli.parse_args([str(runs), flag, value])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"selfplay-dashboard: argument {flag}: {value!r}: expected {accepted} "
                   "(see --help)"), err


def test_the_longest_refresh_is_accepted(runs):
    assert cli.parse_args([str(runs), "--refresh", "2147483"]).refresh == 2147483


@pytest.mark.parametrize("host", ["", "  "])
def test_an_empty_host_is_refused(host, runs, capsys):
    with pytest.raises(SystemExit) as stop:
        cli.parse_args([str(runs), "--host", host, "--port", "8071"])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--host" in err and "0.0.0.0" in err and "127.0.0.1" in err, err
