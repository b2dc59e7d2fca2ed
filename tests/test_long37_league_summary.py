"""A league's closing summary lists the league's own members, not those of a ``selfplay-eval
--db <run>/league.db`` that added a newer run to its database (walk 37c, M1)."""

from __future__ import annotations

from tests.populations.eval_cli_run import run_eval
from tests.populations.user_modules import train_here

TINY = ["game=kuhn", "population=self_play", "population.frames_per_generation=64",
        "num_envs=4", "eval_episodes=2", "progress=false"]
HEADER = "each member's newest rated snapshot"


def test_the_closing_members_are_the_leagues_after_an_eval_into_its_database(
        tmp_path, monkeypatch, capsys):
    """Before: the block under the table read the newest run of league.db, the eval's, and
    listed its files' names (``main_v0000``, ``main_v0001``) as the league's members."""
    run = tmp_path / "run"
    train_here([*TINY, "population.generations=1", f"hydra.run.dir={run}"], monkeypatch,
               tmp_path)
    capsys.readouterr()
    snaps = run / "snapshots" / "main"
    code, out, err = run_eval(["--db", str(run / "league.db"), "--episodes", "2",
                               str(snaps / "v0000.pt"), str(snaps / "v0001.pt")], capsys)
    assert code == 0, err
    assert "main_v0000" in out, out  # the eval run's names for the two files
    train_here([*TINY, "population.generations=2", "resume=true", f"hydra.run.dir={run}"],
               monkeypatch, tmp_path)
    out = capsys.readouterr().out
    block = out[out.index(HEADER):].split("\n\n")[0].splitlines()
    assert block[1].split() == ["member", "version", "mu", "win_rate", "95", "%", "interval",
                                "pairs"], block
    assert [line.split()[:2] for line in block[2:]] == [["main", "2"]], block
    assert "main_v000" not in out, out
