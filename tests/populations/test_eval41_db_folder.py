"""``selfplay-eval --db <a folder>`` is refused in one line saying so, before the files load
(session 41's walk: each file's ``name <- file`` line came first, then 'cannot open league
database runs/x: unable to open database file', SQLite's words for a folder)."""

import games
from marl import registry
from tests.populations.eval_cli_run import run_eval

KUHN = "openspiel/kuhn_poker"


def test_a_folder_given_as_db_is_refused_first(tmp_path, capsys):
    spec = games.make(KUHN).spec
    files = [str(registry.get("ippo").build(spec, seed=k).policy().save(tmp_path / f"{n}.pt"))
             for k, n in enumerate("ab")]
    folder = tmp_path / "runs"
    folder.mkdir()
    code, out, err = run_eval(["--db", str(folder), "--episodes", "1", *files], capsys)
    assert code == 2 and out == "", err
    assert err.splitlines() == [
        f"selfplay-eval: --db {folder} is a folder; give the league database file to write, "
        f"e.g. --db {folder / 'eval.db'}"], err
    assert list(folder.iterdir()) == []
