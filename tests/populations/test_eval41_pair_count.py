"""``selfplay-eval``'s line of a pair played once says ``over 1 pair`` (session 41's walk: it
said ``over 1 pairs``, as the league's ``evaluated 1 pairs`` did before fix 32c)."""

import games
from marl import registry
from tests.populations.eval_cli_run import run_eval

KUHN = "openspiel/kuhn_poker"


def test_a_pair_played_once_is_one_pair(tmp_path, capsys):
    spec = games.make(KUHN).spec
    files = [str(registry.get("ippo").build(spec, seed=k).policy().save(tmp_path / f"{n}.pt"))
             for k, n in enumerate("ab")]
    code, out, err = run_eval(["--db", str(tmp_path / "r.db"), "--episodes", "1", *files],
                              capsys)
    assert code == 0, err
    [line] = [line for line in out.splitlines() if " vs " in line]
    assert " over 1 pair, margin " in line, line
