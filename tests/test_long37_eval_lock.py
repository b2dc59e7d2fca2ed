"""``selfplay-eval --db <run>/league.db`` while the run trains (another process holds the
run folder's ``.lock``) says so in one line: the evaluation is recorded beside the run's own
rows (walk 37c, L5: said nowhere)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import games
from marl import registry
from tests.populations.eval_cli_run import run_eval

ROOT = Path(__file__).resolve().parents[1]
HOLD = ("import sys; from populations.run_folder import RunLock; RunLock(sys.argv[1]).acquire();"
        " print('locked', flush=True); sys.stdin.read()")


def _policies(folder: Path) -> list[str]:
    spec = games.make("openspiel/kuhn_poker").spec
    return [str(registry.get("mappo").build(spec, seed=s).policy().save(folder / f"p{s}.pt"))
            for s in range(2)]


def test_an_eval_into_a_running_runs_database_is_warned(tmp_path, capsys):
    """Before: nothing on stderr but the round robin's lines."""
    run = tmp_path / "run"
    run.mkdir()
    files = _policies(tmp_path)
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(run)],
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "locked"  # type: ignore[union-attr]
        code, out, err = run_eval(["--db", str(run / "league.db"), "--episodes", "2", *files],
                                  capsys)
    finally:
        proc.stdin.close()  # type: ignore[union-attr]
        proc.wait(timeout=60)
    assert code == 0, err
    warned = [line for line in err.splitlines() if "warning" in line]
    assert warned == [
        f"selfplay-eval: warning: --db {run / 'league.db'} is the database of the run that "
        f"process {proc.pid} is running (it holds {run / '.lock'}): this evaluation is "
        "recorded there beside the run's own rows, as a run of its own; a --db outside the "
        "run's folder (--db eval.db) keeps the two apart"], err
    # the lock released: no word
    code, out, err = run_eval(["--db", str(run / "league.db"), "--episodes", "2", *files],
                              capsys)
    assert code == 0 and "warning" not in err, err
