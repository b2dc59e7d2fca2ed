"""What an existing run folder held before a command is recorded once the command holds its
lock (review27 item 6): recorded before the config check (seconds, a game's build), files
another program made in the folder meanwhile were taken for the command's own and removed
when it was refused."""

import os
import sys

from tests import subprocs

# A game whose every build (the config check builds it, before the folder's lock is taken)
# stands for another program writing in the folder meanwhile.
GAME = '''
import os
from pathlib import Path

import games


@games.register("fix27g_maker")
def maker():
    where = os.environ.get("TOOL_DIR")
    if where:
        with open(Path(where) / "made_meanwhile.txt", "a") as fh:
            fh.write("another program's file\\n")
    return games.make("openspiel/matrix_rps")
'''


def test_files_another_program_made_during_the_check_are_kept(tmp_path):
    (tmp_path / "makergame.py").write_text(GAME)
    run = tmp_path / "work"
    run.mkdir()
    (run / "notes.txt").write_text("the user's\n")
    res = subprocs.run(
        [sys.executable, "-m", "populations.cli", "imports=[makergame]",
         "game.name=fix27g_maker", "frames=64", "num_envs=2", "eval_episodes=2",
         "progress=false", "logger=none", "resume=true", f"hydra.run.dir={run}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
        env={**os.environ, "HYDRA_FULL_ERROR": "0", "TOOL_DIR": str(run)})
    assert res.returncode == 2 and "holds no run" in res.stderr, res.stderr
    # the refused command's own files went; the user's and the other program's stayed
    assert sorted(p.name for p in run.iterdir()) == ["made_meanwhile.txt", "notes.txt"]
    assert (run / "made_meanwhile.txt").read_text().startswith("another program's file\n")
