"""``selfplay-eval`` on a game of one team prints each file's success rate where the game
reports whether an episode succeeded (a tool task's ``info["success"]``, read from
``VecStep.info``: marl27), and says nothing of success where it does not (mpe2)."""

import re
import sqlite3

import games
from marl import registry
from tests.populations.eval_cli_run import run_eval
from tests.populations.test_fix26f_eval_alone import multi_tok, relay_llms  # noqa: F401

SPREAD = "pettingzoo/mpe2.simple_spread_v3"


def _metrics(path, like):
    with sqlite3.connect(path) as conn:
        return dict(conn.execute("SELECT key, value FROM metrics WHERE key LIKE ?", (like,)))


def test_a_tool_tasks_success_rate_is_printed_and_recorded(relay_llms, tmp_path,  # noqa: F811
                                                           capsys):
    code, out, err = run_eval(["--db", str(tmp_path / "r.db"), "--episodes", "4",
                               *relay_llms], capsys)
    assert code == 0, err
    lines = {ln.split()[0]: ln for ln in out.splitlines() if "  return " in ln}
    assert set(lines) == {"generate_v0000", "score_v0000"}, out
    rates = _metrics(tmp_path / "r.db", "%success_rate")
    returns = _metrics(tmp_path / "r.db", "%/return")
    for name, line in lines.items():
        m = re.search(r"  success rate (\d\.\d{3}) over 4 episodes  legal rate", line)
        assert m, line
        # relay pays each seat 1 exactly when the task succeeds: the rate is the mean return
        rate = rates[f"alone/{name}/success_rate"]
        assert rate == returns[f"alone/{name}/return"] and m[1] == f"{rate:.3f}"


def test_a_game_that_reports_no_success_prints_none(tmp_path, capsys):
    spec = games.make(SPREAD, max_cycles=5).spec
    path = str(registry.get("mappo").build(spec, seed=0).policy().save(
        tmp_path / "m" / "v0000.pt"))
    code, out, err = run_eval(["--game", SPREAD, "--game-kwargs", '{"max_cycles": 5}',
                               "--db", str(tmp_path / "r.db"), "--episodes", "3", path],
                              capsys)
    assert code == 0, err
    assert len([ln for ln in out.splitlines() if "  return " in ln]) == 1, out
    assert "success" not in out + err
    assert _metrics(tmp_path / "r.db", "%success%") == {}
