"""``python -m populations.league`` that fails in a folder it made, where another program
wrote meanwhile: the folder stays with that program's file (run_guard.discard_run_dir), and
now its line says so as ``selfplay-train``'s does (``run_guard.kept_note``); it said nothing,
so the folder left behind looked like the command's own.

The other program is the user's game (``--import``): built once the league holds its folder,
it writes ``other.txt`` there; its one team is refused ("a self-play league needs two teams")
before any checkpoint. A real ``python -m populations.league`` command.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests import subprocs

REPO = Path(__file__).resolve().parents[2]

GAME = f'''
import dataclasses
import os
import sys
from pathlib import Path

sys.path.insert(0, {str(REPO / "examples")!r})
import games
from nim import Nim


@games.register("fix30a_lnim")
class OneTeamNim(Nim):
    """Nim with both seats on one team, which writes in TOOL_DIR once the league holds it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        where = Path(os.environ["TOOL_DIR"])
        if (where / ".lock").exists():
            (where / "other.txt").write_text("another program's\\n")
        self.spec = dataclasses.replace(self.spec, name="fix30a_lnim", agents=tuple(
            dataclasses.replace(a, team="all") for a in self.spec.agents))
'''


def _league(tmp_path: Path, run: Path, tool_dir: Path) -> str:
    (tmp_path / "fix30aleague.py").write_text(GAME)
    env = {**os.environ, "TOOL_DIR": str(tool_dir), "PYTHONPATH": os.pathsep.join(
        [str(tmp_path), str(REPO), os.environ.get("PYTHONPATH", "")])}
    res = subprocs.run([sys.executable, "-m", "populations.league", "--run-dir", str(run),
                          "--import", "fix30aleague", "--game", "fix30a_lnim",
                          "--generations", "1", "--frames-per-generation", "200",
                          "--num-envs", "2", "--eval-episodes", "2", "--no-progress"],
                        cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 2, res.stderr
    said = [line for line in res.stderr.splitlines()
            if line.startswith("python -m populations.league:")]
    assert len(said) == 1, res.stderr
    assert "a self-play league needs two teams" in said[0]
    return said[0]


def test_the_league_cli_says_its_folder_stays_for_another_programs_file(tmp_path):
    run = tmp_path / "runs" / "league"
    line = _league(tmp_path, run, run)
    assert sorted(p.name for p in run.iterdir()) == ["other.txt"]  # .lock, league.db went
    assert line.endswith(f"; {run} stays: it holds files this command did not write "
                         "('other.txt'), its own went")


def test_the_league_cli_says_nothing_of_a_folder_it_removed(tmp_path):
    run, elsewhere = tmp_path / "runs" / "league", tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / ".lock").touch()  # the game writes there
    line = _league(tmp_path, run, elsewhere)
    assert "stays" not in line
    assert not (tmp_path / "runs").exists()
