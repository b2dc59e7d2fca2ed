"""A finished ``selfplay-train`` run (and a sweep) whose folder a second command was refused
while the first held it: the fixtures ``contested_run`` and ``contested_sweep`` of
``tests/populations/conftest.py``.

Several modules check what a refused command leaves behind (test_fix27b_folder_in_use,
test_fix27b_refused_commands, test_fix27g_other_logs); each used to train its own tiny run
first (a process of ~5-7 CPU seconds, most of it imports). They now share these two: the
barrier scenario of walk27a item 1 runs once per session, and what it recorded (the hashes
of the folder before and after the refused command, both processes' output) is asserted by
test_fix27b_folder_in_use; its finished folder then serves the other modules' refusals.

Both commands are real processes. The winner waits, holding the lock, inside its game's
factory until the second command has ended (a barrier file, no timing)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests import subprocs

WAITING_GAME = '''
import os
import time
from pathlib import Path

import games


@games.register("waiting_rps")
def waiting_rps(**kwargs):
    from populations.run_folder import _held

    if _held:  # the run's own game (its folder locked), not the config check's
        Path(os.environ["FIX27B_STARTED"]).touch()
        go = Path(os.environ["FIX27B_GO"])
        for _ in range(6000):  # a guard against a hang only: the test makes the file
            if go.exists():
                break
            time.sleep(0.1)
    return games.make("openspiel/matrix_rps", **kwargs)
'''

ARGS = ["imports=[waitgame]", "game.name=waiting_rps", "frames=64", "num_envs=2",
        "eval_episodes=2", "progress=false", "seed=0"]
"""The winner's settings (with ``hydra.run.dir`` or ``-m ... hydra.sweep.dir``)."""


def hashes(folder: Path, lock: bool = True) -> dict[str, str]:
    """Every file's hash (the lock's too unless ``lock`` is false: each command that takes
    the lock writes its PID there)."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*"))
            if p.is_file() and (lock or p.name != ".lock")}


@dataclass
class Contest:
    """What the barrier scenario recorded; ``folder`` is the run (sweep) folder."""

    cwd: Path  # where the commands run: waitgame.py lies there
    folder: Path
    args: list[str]  # the winner's command line (the loser's too)
    winner_pid: int = 0
    locked_elsewhere: bool = False  # the folder's lock held by the winner while it waited
    before: dict[str, str] = field(default_factory=dict)  # hashes when the loser started
    after: dict[str, str] = field(default_factory=dict)  # and when it had ended
    loser: subprocess.CompletedProcess | None = None
    winner_status: int | None = None
    winner_out: str = ""
    winner_err: str = ""
    _once: dict[tuple[str, ...], subprocess.CompletedProcess] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        return {**os.environ, "FIX27B_STARTED": str(self.cwd / "started"),
                "FIX27B_GO": str(self.cwd / "go"), "HYDRA_FULL_ERROR": "0"}

    def cli(self, args: list[str]) -> subprocess.CompletedProcess:
        """``selfplay-train args`` run to its end beside the winner's folder (its game
        passes straight through now: the barrier is open)."""
        return subprocs.run([sys.executable, "-m", "populations.cli", *args], cwd=self.cwd,
                             env=self.env(), capture_output=True, text=True, timeout=600)

    def cli_once(self, args: list[str]) -> subprocess.CompletedProcess:
        """:meth:`cli`, run once per session for a given command line: a resume of the
        finished run, which two tests ask of it with the same words (the command a refusal
        names, and the winner's own command plus resume=true)."""
        key = tuple(args)
        if key not in self._once:
            self._once[key] = self.cli(args)
        return self._once[key]


def contest(cwd: Path, folder: Path, args: list[str]) -> Contest:
    """Start the winner with ``args``, wait until it holds ``folder`` inside its game, run
    the same command again (the loser) to its end, then let the winner finish."""
    (cwd / "waitgame.py").write_text(WAITING_GAME)
    rec = Contest(cwd, folder, args)
    winner = subprocess.Popen([sys.executable, "-m", "populations.cli", *args], cwd=cwd,
                              env=rec.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    rec.winner_pid = winner.pid
    try:
        while not (cwd / "started").exists():  # or it ended: a failure
            assert winner.poll() is None, winner.communicate()
            time.sleep(0.1)
        from populations.run_folder import locked_elsewhere

        rec.locked_elsewhere = locked_elsewhere(folder)
        rec.before = hashes(folder)
        rec.loser = rec.cli(args)
        rec.after = hashes(folder)
    finally:
        (cwd / "go").touch()
        rec.winner_out, rec.winner_err = winner.communicate(timeout=600)
    rec.winner_status = winner.returncode
    return rec
