"""A ``selfplay-eval`` console script from an install made before ``eval_main`` moved to
``populations.eval_cli`` (52c444e) imports it from ``populations.cli``: an editable install
keeps that script until it is reinstalled, and it failed with ImportError at every call."""

import sys

from tests import subprocs


def test_an_old_selfplay_eval_script_still_runs():
    old_script = "import sys\nfrom populations.cli import eval_main\nsys.exit(eval_main())\n"
    res = subprocs.run([sys.executable, "-c", old_script, "--help"], capture_output=True,
                        text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "usage: selfplay-eval" in res.stdout


def test_other_missing_names_still_fail():
    import pytest

    import populations.cli as cli

    with pytest.raises(AttributeError, match="no attribute 'job_folder'"):
        cli.job_folder  # noqa: B018 - moved to populations.sweeps; only eval_main is kept
