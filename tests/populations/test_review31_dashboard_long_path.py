"""A path the system cannot look up (a name longer than the file system allows) is refused
in one line by ``selfplay-dashboard``, before anything is served (review31: an OSError
traceback from the path scan), while a run folder not made yet is still taken."""

from __future__ import annotations

import pytest

from populations.dashboard.cli import parse_args


def test_a_name_too_long_is_one_line(capsys):
    name = "a" * 300
    with pytest.raises(SystemExit) as stop:
        parse_args([name])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == ("selfplay-dashboard: " + "a" * 60 + "...(300 characters): File name "
                   "too long; expected a run folder, a league.db file or a folder of runs "
                   "(see --help)"), err


def test_a_run_not_made_yet_is_taken(tmp_path):
    assert parse_args([str(tmp_path / "runs" / "main")]).paths == [str(tmp_path / "runs/main")]
