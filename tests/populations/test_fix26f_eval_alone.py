"""``selfplay-eval`` on what a researcher evaluates (fix 26f): snapshots of a cooperative (one
team) game were refused ('give one policy file with --exploit', then 'a round robin needs two
or more policy files'); an LLM policy's fallback moves were rated as its own, with nothing
saying so; the elo column was not padded and a pair's win rate had no interval."""

import json
import re
import sqlite3

import numpy as np
import pytest

import games
from llm_agents.actions import ActionConfig
from llm_agents.backends import SamplingConfig
from llm_agents.policy import LLMPolicy
from llm_agents.team import Team
from llm_agents.tiny import TinyModelConfig, build_model
from marl import registry
from populations.crossplay import wilson
from tests.llm_agents.conftest import COMPACT
from tests.populations.eval_cli_run import run_eval
from tests.populations.test_walk22_eval_scale import COORDINATION, _snapshots

RELAY = "tool/relay"
KUHN = "openspiel/kuhn_poker"


def _llm(root, game, tok, mode, name):
    """An untrained tiny LLM team's snapshot; in generate mode with one token a move, no
    relay action can be named (each is several words): every move is the fallback's."""
    action = ActionConfig(mode=mode, sampling=SamplingConfig(max_new_tokens=1))
    model = build_model(tok, TinyModelConfig(n_layer=1, n_embd=16, n_head=2))
    pol = LLMPolicy.from_team(Team.shared(model, tok), games.make(game).spec, action=action,
                              prompt=COMPACT)
    return str(pol.save(root / name / "v0000.pt"))


@pytest.fixture(scope="module")
def relay_llms(tmp_path_factory, multi_tok):
    root = tmp_path_factory.mktemp("relay")
    return [_llm(root, RELAY, multi_tok, mode, mode) for mode in ("generate", "score")]


@pytest.fixture(scope="module")
def multi_tok():
    from llm_agents.tiny import build_tokenizer
    from tests.llm_agents.conftest import corpus

    return build_tokenizer(corpus("openspiel/kuhn_poker", ("tool/relay", {})))


def _db(path, sql, *args):
    with sqlite3.connect(path) as conn:
        return conn.execute(sql, args).fetchall()


def test_one_team_snapshots_are_each_played_alone(tmp_path, capsys):
    paths = _snapshots(tmp_path, COORDINATION, 2)
    code, out, err = run_eval(["--db", str(tmp_path / "r.db"), "--episodes", "5", *paths],
                              capsys)
    assert code == 0, err
    lines = {ln.split()[0]: ln for ln in out.splitlines() if "  return " in ln}
    assert set(lines) == {"m0_v0000", "m1_v0000"}, out
    for name, line in lines.items():
        rows = _db(tmp_path / "r.db", "SELECT m.returns FROM matches m WHERE m.key LIKE ?",
                   f"alone/{1 if name == 'm0_v0000' else 2}/e%")
        assert len(rows) == 5
        team = [np.mean(list(json.loads(r).values())) for (r,) in rows]
        mean = float(np.mean(team))
        shown = re.escape(f"{mean:+.3f}")
        assert re.fullmatch(rf"\s*{name}  return {shown} ± \d+\.\d{{3}}", line), line
        (metric,) = _db(tmp_path / "r.db", "SELECT value FROM metrics WHERE key = ?",
                        f"alone/{name}/return")
        assert metric[0] == pytest.approx(mean)
    assert "legal rate" not in out and "warning" not in err  # classic learners: no fallback


def test_one_file_of_a_one_team_game_needs_no_second(tmp_path, capsys):
    paths = _snapshots(tmp_path, COORDINATION, 1)
    code, out, err = run_eval(["--game", COORDINATION, "--db", str(tmp_path / "r.db"),
                               "--episodes", "3", *paths], capsys)
    assert code == 0, err
    assert len([ln for ln in out.splitlines() if "  return " in ln]) == 1, out


def test_an_llm_policys_legal_rate_is_printed_and_a_low_one_warned(relay_llms, tmp_path,
                                                                  capsys):
    code, out, err = run_eval(["--db", str(tmp_path / "r.db"), "--episodes", "4",
                               *relay_llms], capsys)
    assert code == 0, err
    lines = {ln.split()[0]: ln for ln in out.splitlines() if "  return " in ln}
    assert re.search(r"legal rate 0\.000 over \d+ moves$", lines["generate_v0000"]), out
    assert re.search(r"legal rate 1\.000 over \d+ moves$", lines["score_v0000"]), out
    warnings = [ln for ln in err.splitlines() if "warning" in ln]
    assert warnings == [
        "selfplay-eval: warning: generate_v0000 named a legal action in 0% of its "
        f"{lines['generate_v0000'].split()[-2]} evaluated moves: its return measures mostly "
        "the fallback moves it played for the rest (llm.grpo.action.fallback=random), not the "
        "model"], err
    rates = dict(_db(tmp_path / "r.db", "SELECT key, value FROM metrics WHERE key LIKE "
                                        "'%legal_rate'"))
    assert rates == {"alone/generate_v0000/legal_rate": 0.0,
                     "alone/score_v0000/legal_rate": 1.0}


def test_round_robin_pads_elo_gives_intervals_and_legal_rates(tmp_path, capsys, multi_tok):
    spec = games.make(KUHN).spec
    (tmp_path / "mappo").mkdir()
    paths = [str(registry.get("mappo").build(spec, seed=0).policy().save(
        tmp_path / "mappo" / "v0000.pt")),
        _llm(tmp_path, KUHN, multi_tok, "generate", "llm")]
    code, out, err = run_eval(["--db", str(tmp_path / "r.db"), "--episodes", "8", *paths],
                              capsys)
    assert code == 0, err
    ratings = [ln for ln in out.splitlines() if "  elo " in ln]
    assert len(ratings) == 2 and len({ln.index("  mu ") for ln in ratings}) == 1, out
    assert len({ln.index("  pairs ") for ln in ratings}) == 1, out
    (pair,) = [ln for ln in out.splitlines() if " vs " in ln]
    ((win, count),) = _db(tmp_path / "r.db", "SELECT p.win_rate, p.count FROM payoffs p JOIN "
                          "snapshots s ON p.row_snapshot = s.id JOIN members m ON "
                          "s.member_id = m.id WHERE m.name = 'mappo_v0000'")
    lo, hi = wilson(win * count, count)
    assert f"win rate {win:.2f} (95% Wilson [{lo:.2f}, {hi:.2f}]) over {count} pairs" in pair, \
        pair
    (legal,) = [ln for ln in out.splitlines() if "legal rate" in ln]
    assert re.fullmatch(r"\s*llm_v0000  legal rate (1\.000 over \d+ moves|[01]\.\d{3} over "
                        r"\d+ moves \(the rest its fallback's\))", legal), legal  # none at 1.0
