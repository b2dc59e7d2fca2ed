"""``selfplay-eval`` prints which file each name is for the first files only (session 23).

Before: one ``name <- file`` line per file on stderr, 400 lines before the table at 400 files
(as the pairs' lines were bounded by ``--pairs``, 87a7ac5); now the first
``NAMES_SHOWN`` and one line for the rest, which the database records all the same."""

import json
import sqlite3

from populations.eval_report import NAMES_SHOWN
from tests.populations.eval_cli_run import run_eval
from tests.populations.test_eval_names import KUHN
from tests.populations.test_walk22_eval_scale import _snapshots


def test_the_name_lines_stop_after_the_first_files(tmp_path, capsys):
    count = NAMES_SHOWN + 3
    paths = _snapshots(tmp_path, KUHN, count)
    db = tmp_path / "r.db"
    code, out, err = run_eval(["--game", KUHN, "--db", str(db), "--episodes", "1",
                               "--pairs", "0", *paths], capsys)
    assert code == 0, err
    lines = err.splitlines()
    assert lines == [*(f"selfplay-eval: m{k}_v0000 <- {paths[k]}" for k in range(NAMES_SHOWN)),
                     f"selfplay-eval: ... and 3 more name <- file lines, each recorded in {db} "
                     "(the eval run's config: policies)"], err
    with sqlite3.connect(db) as conn:
        (config,) = conn.execute("SELECT config FROM runs").fetchone()
    assert json.loads(config)["policies"] == {f"m{k}_v0000": paths[k] for k in range(count)}
    assert sum("  elo " in line for line in out.splitlines()) == count  # the table: every one


def test_up_to_the_bound_every_name_is_printed(tmp_path, capsys):
    paths = _snapshots(tmp_path, KUHN, 3)
    code, _, err = run_eval(["--game", KUHN, "--db", str(tmp_path / "r.db"), "--episodes",
                             "1", *paths], capsys)
    assert code == 0, err
    assert err.splitlines() == [f"selfplay-eval: m{k}_v0000 <- {paths[k]}" for k in range(3)]
