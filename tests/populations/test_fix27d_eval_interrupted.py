"""Ctrl-C in ``selfplay-eval`` says what the league database kept and what running the same
command again does: it said only ``selfplay-eval: interrupted``, though the database keeps
the round robin's matches so far (the run marked ``interrupted``), and a rerun starts a new
evaluation (a new run) rather than resuming that one."""

from __future__ import annotations

import re
import sqlite3
import sys
from pathlib import Path

import pytest

from tests.populations.eval_cli_run import interrupted_after_first_match

FILES = 5  # 10 pairings
EPISODES = 32  # role-swapped pairs per pairing: 64 matches each


@pytest.fixture(scope="module")
def policy_files(tmp_path_factory):
    import games
    from marl import registry

    spec = games.make("openspiel/kuhn_poker").spec
    folder = tmp_path_factory.mktemp("policies")
    return [registry.get("mappo").build(spec, seed=i).policy().save(folder / f"p{i}.pt")
            for i in range(FILES)]


def test_ctrl_c_says_what_the_database_kept_and_what_a_rerun_does(policy_files, tmp_path):
    db = tmp_path / "eval.db"
    evaluate = Path(sys.executable).with_name("selfplay-eval")
    command = [str(evaluate), *map(str, policy_files), "--db", "eval.db",
               "--episodes", str(EPISODES)]
    done = interrupted_after_first_match(command, db, tmp_path, run=1)
    code, err = done.returncode, done.stderr
    last = err.strip().splitlines()[-1]
    assert code == 130, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    found = re.fullmatch(
        r"selfplay-eval: interrupted after (\d+) of 10 pairings \((\d+) of 640 matches\); they "
        r"are kept in eval\.db \(run 1, status interrupted; no ratings: they are computed once "
        r"every pairing has played\); running the same command again starts a new evaluation "
        r"\(a new run that plays all 10 pairings again; this one is not resumed\)", last)
    assert found, last
    pairings, matches = map(int, found.groups())
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT status FROM runs WHERE id = 1").fetchone()[0] == \
            "interrupted"
        kept = conn.execute("SELECT COUNT(*) FROM matches WHERE run_id = 1").fetchone()[0]
        keys = {k.rsplit("/", 2)[0] for (k,) in conn.execute(
            "SELECT key FROM matches WHERE run_id = 1")}
        rated = conn.execute("SELECT COUNT(*) FROM ratings WHERE run_id = 1").fetchone()[0]
    assert 1 <= pairings < 10 and matches == kept == 2 * EPISODES * pairings == \
        2 * EPISODES * len(keys)
    assert rated == 0  # as the line says

    # the same command again: a new run from the first pairing; run 1 is left as it was
    done = interrupted_after_first_match(command, db, tmp_path, run=2)
    code, err = done.returncode, done.stderr
    assert code == 130, err[-3000:]
    assert "(run 2, status interrupted;" in err.strip().splitlines()[-1], err[-3000:]
    with sqlite3.connect(db) as conn:
        runs = conn.execute("SELECT id, status FROM runs ORDER BY id").fetchall()
        again = conn.execute("SELECT COUNT(*) FROM matches WHERE run_id = 1").fetchone()[0]
        first = conn.execute("SELECT key FROM matches WHERE run_id = 2 ORDER BY id LIMIT 1"
                             ).fetchone()[0]
        snaps = [i for (i,) in conn.execute(
            "SELECT s.id FROM snapshots s JOIN members m ON s.member_id = m.id "
            "WHERE m.run_id = 2 ORDER BY s.id")]
    assert runs == [(1, "interrupted"), (2, "interrupted")]
    assert again == kept
    # the new run's own snapshots of the files, from its first pairing (p0 against p1)
    assert len(snaps) == FILES and first.startswith(f"rr/{snaps[0]}-{snaps[1]}/"), first
