"""A refused ``selfplay-train`` puts back only Hydra's job log (``cli.log``), never other
``*.log`` files of the folder (review27 item 2): with ``hydra.run.dir`` a folder that also
holds a user's ``nohup ... > train.log`` or another tool's ``eval.log``, the refusal truncated
``train.log`` to its size before the command and deleted an ``eval.log`` made meanwhile."""

import hashlib
import os
import shutil
import sys

from tests import subprocs

# A game whose every build (the command builds it while checking, after Hydra wrote its
# files) stands for another program writing beside the run: it appends a line to train.log
# and eval.log in $TOOL_LOG_DIR, and to a tally outside it.
GAME = '''
import os
from pathlib import Path

import games


@games.register("fix27g_writer")
def writer():
    where = os.environ.get("TOOL_LOG_DIR")
    if where:
        for name in ("train.log", "eval.log", "../tally.txt"):
            with open(Path(where) / name, "a") as fh:
                fh.write("another program's line\\n")
    return games.make("openspiel/matrix_rps")
'''

ARGS = ["imports=[writergame]", "game.name=fix27g_writer", "frames=64", "num_envs=2",
        "eval_episodes=2", "progress=false", "logger=none"]


def _cli(args, cwd, tool_dir=None):
    env = {**os.environ, "HYDRA_FULL_ERROR": "0"}
    env.pop("TOOL_LOG_DIR", None)
    if tool_dir is not None:
        env["TOOL_LOG_DIR"] = str(tool_dir)
    return subprocs.run([sys.executable, "-m", "populations.cli", *args], cwd=cwd,
                         capture_output=True, text=True, timeout=600, env=env)


def test_a_refused_command_leaves_the_folders_other_logs_alone(tmp_path, contested_run):
    (tmp_path / "writergame.py").write_text(GAME)
    # a finished run (the session's: no need to train one here), copied with a user's logs
    assert contested_run.winner_status == 0, contested_run.winner_err
    run = tmp_path / "work"
    shutil.copytree(contested_run.folder, run)
    (run / "train.log").write_text("my nohup log, started earlier\n")
    (run / "notes.log").write_text("a log nobody writes now\n")
    train, notes = (run / "train.log").read_text(), (run / "notes.log").read_bytes()
    cli_log = (run / "cli.log").read_bytes()
    assert cli_log and not (run / "eval.log").exists()

    # a new run (no resume=true) into it is refused: the folder holds a run; meanwhile the
    # other program appends to train.log and makes eval.log
    second = _cli([*ARGS, "seed=9", f"hydra.run.dir={run}"], tmp_path, tool_dir=run)
    assert second.returncode == 2 and "already holds a run" in second.stderr, second.stderr
    tally = (tmp_path / "tally.txt").read_text()
    assert tally  # the other program wrote while the command ran
    assert (run / "train.log").read_text() == train + tally  # nothing of it cut
    assert (run / "eval.log").read_text() == tally  # made meanwhile: kept
    assert hashlib.sha256((run / "notes.log").read_bytes()).digest() == \
        hashlib.sha256(notes).digest()
    assert (run / "cli.log").read_bytes() == cli_log  # Hydra's job log: put back
