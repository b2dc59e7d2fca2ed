"""``selfplay-demo --help`` shows plain text, not its docstring's reST markup (as
selfplay-eval's, be35f1b)."""

import pytest

from populations import demo


def test_selfplay_demo_help_shows_no_markup(capsys):
    # before: "``selfplay-demo``: a round-robin of simple scripted policies on three games."
    with pytest.raises(SystemExit) as stop:
        demo.main(["--help"])
    out = capsys.readouterr().out
    assert stop.value.code == 0 and "selfplay-demo: a round-robin of simple scripted" in out
    assert "``" not in out
