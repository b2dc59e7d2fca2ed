"""games38 (walk38a M2): an installed ``selfplay.games`` entry point that fails to import is
one line from ``python -m games`` (exit 2), as from selfplay-train, naming the distribution
that installed it and what to do.

Before: ``python -m games registered`` printed a 41-line traceback (exit 1); selfplay-train's
one line named the entry point but not the package that installed it.
"""

from __future__ import annotations

import os
import sys

from tests import subprocs


def _site(tmp_path):
    site = tmp_path / "site"
    info = site / "badgames38-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: badgames38\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[selfplay.games]\nbad = badgames38\n")
    (site / "badgames38.py").write_text("import games\nraise RuntimeError('plugin broken')\n")
    return site


def test_python_m_games_says_a_broken_entry_point_in_one_line(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(_site(tmp_path)), os.environ.get("PYTHONPATH", "")])}
    out = subprocs.run([sys.executable, "-m", "games", "registered"], capture_output=True,
                       text=True, cwd=tmp_path, env=env)
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines() == [
        "python -m games: entry point bad = 'badgames38' (selfplay.games) failed to load: "
        "RuntimeError: plugin broken (installed by badgames38 0.1: fix or uninstall that "
        "package, pip uninstall badgames38)"]
    assert out.stdout == ""


def test_the_families_that_need_no_entry_point_still_list(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(_site(tmp_path)), os.environ.get("PYTHONPATH", "")])}
    out = subprocs.run([sys.executable, "-m", "games", "vmas"], capture_output=True,
                       text=True, cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
