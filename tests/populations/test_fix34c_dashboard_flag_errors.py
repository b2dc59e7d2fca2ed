"""``selfplay-dashboard``'s refusals read alike (walk 34b, item 5): ``--port 99999`` said
``--port 99999: expected ...`` while ``--port abc`` said argparse's ``argument --port:
'abc': ...``, and a busy port's line had no ``selfplay-dashboard:`` before it."""

from __future__ import annotations

import pytest

from populations.dashboard import cli
from populations.dashboard.app import BackgroundServer, create_app


@pytest.mark.parametrize("flag, value, accepted", [
    ("--port", "99999", "0-65535"), ("--port", "-1", "0-65535"),
    ("--max-points", "1", "an integer >= 2")])
def test_a_number_out_of_range_is_refused_as_a_number_that_is_none(flag, value, accepted,
                                                                   tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        cli.parse_args([str(tmp_path), flag, value])
    assert stop.value.code == 2
    # before: selfplay-dashboard: --port 99999: expected 0-65535 (see --help)
    assert capsys.readouterr().err.strip() == (
        f"selfplay-dashboard: argument {flag}: {value}: expected {accepted} (see --help)")


def test_a_busy_port_is_refused_in_the_commands_name(tmp_path, capsys):
    with BackgroundServer(create_app([])) as busy:
        assert cli.main([str(tmp_path), "--port", str(busy.port)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    # before: cannot listen on 127.0.0.1:<port> (Address already in use); ...
    assert err.startswith(f"selfplay-dashboard: cannot listen on 127.0.0.1:{busy.port} "), err
    assert "pass another --port (0 picks a free one)" in err
