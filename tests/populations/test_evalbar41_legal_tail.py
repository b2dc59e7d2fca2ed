"""``selfplay-eval``'s round robin printed "legal rate 1.000 over 16 moves (the rest its
fallback's)" for an LLM policy that named a legal action in every move: there was no rest.
A single run's evaluation line leaves the tail off at 1.0; so does the round robin's
(walk41b L2)."""

import re

import games
from marl import registry
from tests.populations.eval_cli_run import run_eval
from tests.populations.test_fix26f_eval_alone import KUHN, _llm, multi_tok  # noqa: F401


def test_a_legal_rate_of_one_has_no_fallback_tail(tmp_path, capsys, multi_tok):  # noqa: F811
    spec = games.make(KUHN).spec
    (tmp_path / "mappo").mkdir()
    paths = [str(registry.get("mappo").build(spec, seed=0).policy().save(
        tmp_path / "mappo" / "v0000.pt")),
        _llm(tmp_path, KUHN, multi_tok, "score", "llm")]  # scores legal actions: all legal
    code, out, err = run_eval(["--db", str(tmp_path / "r.db"), "--episodes", "4", *paths],
                              capsys)
    assert code == 0, err
    (legal,) = [ln for ln in out.splitlines() if "legal rate" in ln]
    assert re.fullmatch(r"\s*llm_v0000  legal rate 1\.000 over \d+ moves", legal), legal
