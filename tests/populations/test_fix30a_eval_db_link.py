"""``selfplay-eval --db link.db`` where ``link.db`` is a link (to a run's ``league.db``, or to
nothing): refused, as SQLite would write through it, but in the words of a run folder's
files ("league database file ... is a link ...; a run folder's files must be its own"), while
``--db`` names no run folder. Now the line names ``--db`` and the link, and what is accepted
(the file itself, by its real path, or a new file); the same for SQLite's ``-wal``/``-shm``/
``-journal`` beside it. The file the link points to is left as it was."""

from __future__ import annotations

import os

import pytest

import games
from marl import registry
from tests.populations.eval_cli_run import run_eval

KUHN = "openspiel/kuhn_poker"


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    path = tmp_path_factory.mktemp("fix30a_eval") / "v0000.pt"
    registry.get("mappo").build(games.make(KUHN).spec).policy().save(path)
    return path


def _line(args, capsys) -> str:
    code, _, err = run_eval(args, capsys)
    lines = [line for line in err.strip().splitlines() if not line.startswith(
        "selfplay-eval: note:")]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("dangling", [False, True])
def test_a_linked_db_is_refused_naming_the_link(tmp_path, capsys, policy, dangling):
    target = tmp_path / "run" / "league.db"
    target.parent.mkdir()
    if not dangling:
        target.write_bytes(b"a run's database\n")
    link = tmp_path / "link.db"
    link.symlink_to(target)
    line = _line([str(policy), str(policy), "--game", KUHN, "--db", str(link),
                  "--episodes", "2"], capsys)
    assert line == (f"selfplay-eval: --db {link} is a link (to {target}); SQLite would write "
                    f"through it: give the database file itself, --db {target}, or a new file")
    assert (target.read_bytes() == b"a run's database\n") if not dangling else \
        not target.exists()


def test_a_link_beside_the_db_is_refused_naming_it(tmp_path, capsys, policy):
    db, target = tmp_path / "eval.db", tmp_path / "elsewhere"
    target.write_text("not SQLite's\n")
    wal = tmp_path / "eval.db-wal"
    wal.symlink_to(target)
    line = _line([str(policy), str(policy), "--game", KUHN, "--db", str(db),
                  "--episodes", "2"], capsys)
    assert line == (f"selfplay-eval: --db {db}: SQLite's file {wal} beside it is a link (to "
                    f"{target}); SQLite would write through it: remove the link")
    assert target.read_text() == "not SQLite's\n" and not db.exists()
    assert os.path.islink(wal)
