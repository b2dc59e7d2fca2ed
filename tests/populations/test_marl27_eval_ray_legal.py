"""``selfplay-eval --runner ray`` prints an LLM policy's legal rate, as ``--runner local``
does (marl27): the moves come back from the workers with each match (``MatchResult.moves``,
fix 26i), where it said only that legal rates are counted with ``--runner local``. Uses the
session's Ray instance (``ray_local``)."""

import re

import games
from marl import registry
from tests.populations.eval_cli_run import run_eval
from tests.populations.test_fix26f_eval_alone import KUHN, _llm, multi_tok  # noqa: F401


def test_ray_round_robin_prints_the_legal_rates_local_prints(tmp_path, capsys, multi_tok,  # noqa: F811
                                                             ray_local):
    spec = games.make(KUHN).spec
    (tmp_path / "mappo").mkdir()
    paths = [str(registry.get("mappo").build(spec, seed=0).policy().save(
        tmp_path / "mappo" / "v0000.pt")),
        _llm(tmp_path, KUHN, multi_tok, "generate", "llm")]
    lines = {}
    for runner in ("local", "ray"):
        code, out, err = run_eval(["--db", str(tmp_path / f"{runner}.db"), "--episodes", "6",
                                   "--runner", runner, *paths], capsys)
        assert code == 0, err
        assert "counted with --runner local" not in err, err
        lines[runner] = [ln for ln in out.splitlines() if "legal rate" in ln]
    (legal,) = lines["ray"]
    assert re.fullmatch(r"\s*llm_v0000  legal rate (1\.000 over \d+ moves|[01]\.\d{3} over "
                        r"\d+ moves \(the rest its fallback's\))", legal), legal  # none at 1.0
    assert lines["ray"] == lines["local"]  # the same seeds: the same moves, wherever played
