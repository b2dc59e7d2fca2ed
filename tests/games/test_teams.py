"""Teams and zero-sum come from what each game declares, and ``teams=`` / ``zero_sum=`` override.

Every PettingZoo classic game and every MPE scenario that installs here is listed from its
package, so a game added by a new PettingZoo release fails here until it is classified.
"""

import importlib
import logging
import pkgutil
import re

import pytest

import games
from games.pettingzoo import KNOWN_SIDES


def _modules(package: str) -> list[str]:
    try:
        pkg = importlib.import_module(package)
    except ImportError:
        return []
    names = (m.name for m in pkgutil.iter_modules(pkg.__path__))
    return sorted(n for n in names if re.search(r"_v\d+$", n))


def _make_or_skip(spec: str, **kwargs) -> games.Game:
    """Build a game; skip (naming the missing package) when an optional dependency is absent."""
    try:
        return games.make(spec, **kwargs)
    except games.UnknownGameError as err:
        if any(s in str(err) for s in ("No module named", "needs the package", "requires",
                                       "depends on")):
            pytest.skip(f"{spec}: optional dependency missing ({err})")
        raise


CLASSIC = _modules("pettingzoo.classic")
MPE = _modules("mpe2")
COOPERATIVE_CLASSIC = {"hanabi"}
NOT_ZERO_SUM_CLASSIC = {"hanabi", "gin_rummy"}
# MPE: who is an adversary (a team of their own); scenarios not listed are fully cooperative.
MPE_ADVERSARIES = {
    "simple_adversary": {"adversary_0"},
    "simple_crypto": {"eve_0"},
    "simple_push": {"adversary_0"},
    "simple_tag": {"adversary_0", "adversary_1", "adversary_2"},
    "simple_world_comm": {"leadadversary_0", "adversary_0", "adversary_1", "adversary_2"},
}


def _short(module: str) -> str:
    return module.rsplit("_v", 1)[0]


def test_every_classic_game_and_mpe_scenario_is_listed():
    assert {"rps_v2", "tictactoe_v3", "connect_four_v3", "go_v5"} <= set(CLASSIC)
    assert {"simple_adversary_v3", "simple_crypto_v3", "simple_spread_v3"} <= set(MPE)
    assert set(MPE_ADVERSARIES) <= {_short(m) for m in MPE}


@pytest.mark.parametrize("module", CLASSIC)
def test_classic_games_each_player_is_a_team(module):
    game = _make_or_skip(f"pettingzoo/pettingzoo.classic.{module}")
    spec, short = game.spec, _short(module)
    assert game.sides.source == "table", "every PettingZoo classic game must be classified"
    if short in COOPERATIVE_CLASSIC:
        assert len(spec.teams) == 1
    else:
        assert [a.team for a in spec.agents] == list(spec.agent_ids)  # each seat its own team
        assert spec.roles == spec.agent_ids
    assert spec.zero_sum == (short not in NOT_ZERO_SUM_CLASSIC)


@pytest.mark.parametrize("module", MPE)
def test_mpe_scenarios_adversaries_versus_good_agents(module):
    game = _make_or_skip(f"pettingzoo/mpe2.{module}")
    spec, short = game.spec, _short(module)
    assert not spec.zero_sum
    adversaries = MPE_ADVERSARIES.get(short)
    if adversaries is None:
        assert spec.teams == ("team",), f"{module} is fully cooperative"
        return
    assert game.sides.source == "mpe adversary flags"
    assert {a.id for a in spec.agents if a.team == "adversary"} == adversaries
    assert {a.id for a in spec.agents if a.team == "good"} == set(spec.agent_ids) - adversaries
    assert set(spec.teams) == {"adversary", "good"}


def test_simple_crypto_eve_plays_against_alice_and_bob():
    spec = games.make("pettingzoo/mpe2.simple_crypto_v3").spec
    team = {a.id: a.team for a in spec.agents}
    assert team["alice_0"] == team["bob_0"] != team["eve_0"]
    assert spec.roles == ("eve", "bob", "alice")


def test_rps_players_are_opponents_in_a_zero_sum_game():
    game = games.make("pettingzoo/pettingzoo.classic.rps_v2")
    assert game.spec.teams == ("player_0", "player_1") and game.spec.zero_sum
    report = games.check_game(game, episodes=3)  # checks rewards sum to zero every step
    assert report.mean_returns["player_0"] == -report.mean_returns["player_1"]


@pytest.mark.parametrize(
    ("module", "kwargs"),
    [
        ("rps_v2", {}),
        ("leduc_holdem_v4", {}),
        ("texas_holdem_v4", {}),
        ("texas_holdem_no_limit_v6", {}),
        ("hanabi_v5", {"players": 3}),
    ],
)
def test_classic_games_with_action_masks_pass_check_game(module, kwargs):
    game = _make_or_skip(f"pettingzoo/pettingzoo.classic.{module}", **kwargs)
    games.check_game(game, episodes=3)


def test_known_sides_table_names_only_real_families():
    assert {fam for fam, _ in KNOWN_SIDES} <= {"classic", "mpe", "butterfly", "sisl"}


# ------------------------------------------------------------------------------ overrides
def test_teams_override_as_mapping_and_as_list_of_lists():
    spec = games.make(
        "pettingzoo/mpe2.simple_spread_v3", N=3, teams={"agent_0": "red", "agent_1": "red",
                                                         "agent_2": "blue"}
    ).spec
    assert [a.team for a in spec.agents] == ["red", "red", "blue"]
    spec = games.make("openspiel/kuhn_poker", teams=[["player_0", "player_1"]]).spec
    assert spec.teams == ("team_0",) and spec.zero_sum  # zero_sum untouched
    spec = games.make("openspiel/kuhn_poker", zero_sum=False).spec
    assert not spec.zero_sum and spec.teams == ("player_0", "player_1")
    spec = games.make("matrix/climbing", teams=[["agent_0"], ["agent_1"]], zero_sum=False).spec
    assert spec.teams == ("team_0", "team_1")


def test_teams_override_reaches_vector_games():
    vg = games.VectorGame("openspiel/kuhn_poker", 2, seed=0, teams={"player_0": "a",
                                                                    "player_1": "b"})
    assert vg.spec.teams == ("a", "b")


@pytest.mark.parametrize(
    ("teams", "message"),
    [
        ({"agent_0": "a"}, r"once \(missing \['agent_1'\]\); agents: \['agent_0', 'agent_1'\]"),
        ([["agent_0", "agent_0"], ["agent_1"]], r"repeated \['agent_0'\]"),
        ({"agent_0": "a", "agent_1": "b", "x": "c"}, r"unknown \['x'\]"),
        ("red", "must be a mapping"),
        ({"agent_0": "", "agent_1": "b"}, "non-empty strings"),
        ([["agent_0", "agent_1"], []], "empty team"),
    ],
)
def test_bad_teams_override_is_one_line(teams, message):
    for spec in ("matrix/climbing", "pettingzoo/pettingzoo.classic.rps_v2"):
        if spec.startswith("pettingzoo/"):
            teams = _rename(teams, {"agent_0": "player_0", "agent_1": "player_1"})
            message = message.replace("agent_", "player_")
        with pytest.raises(games.GameError, match=message) as info:
            games.make(spec, teams=teams)
        assert "\n" not in str(info.value)


def _rename(teams, names):
    if isinstance(teams, dict):
        return {names.get(a, a): t for a, t in teams.items()}
    if isinstance(teams, list):
        return [[names.get(a, a) for a in members] for members in teams]
    return teams


def test_bad_zero_sum_override():
    with pytest.raises(games.GameError, match="zero_sum= must be True or False, got 'yes'"):
        games.make("openspiel/kuhn_poker", zero_sum="yes")


def test_openspiel_games_with_a_zero_sum_parameter_get_it():
    game = games.make("openspiel/laser_tag", zero_sum=True)
    assert game.spec.zero_sum and game.pyspiel_game.get_parameters()["zero_sum"]
    assert not games.make("openspiel/laser_tag").spec.zero_sum


def test_registered_game_taking_teams_itself_gets_them():
    @games.register("test_teams/own_teams")
    class OwnTeams(games.MatrixGame):
        def __init__(self, teams="shared"):
            super().__init__("test_teams/own_teams", [[1.0, 0.0], [0.0, 1.0]])
            self.teams_arg = teams

    assert games.make("test_teams/own_teams", teams="mine").teams_arg == "mine"


# ------------------------------------------------------------------------- unknown envs
def _write_module(tmp_path, monkeypatch, name: str, body: str) -> str:
    (tmp_path / f"{name}.py").write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def test_unknown_env_defaults_to_one_team_per_agent_with_a_warning(tmp_path, monkeypatch, caplog):
    mod = _write_module(tmp_path, monkeypatch, "third_party_env_teams", (
        "import games\n"
        "def env():\n"
        "    e = games.to_pettingzoo(games.make('matrix/climbing'))\n"
        "    e.metadata = {'name': 'third_party', 'render_modes': [], 'is_parallelizable': True}\n"
        "    return e\n"
    ))
    with caplog.at_level(logging.WARNING, logger="games.pettingzoo"):
        game = games.make(f"pettingzoo/{mod}:env")
    assert game.sides.source == "default"
    assert game.spec.teams == game.spec.agent_ids and not game.spec.zero_sum
    assert "declares no teams" in caplog.text and "teams=" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="games.pettingzoo"):
        game = games.make(f"pettingzoo/{mod}:env", teams=[["agent_0", "agent_1"]])
    assert game.spec.teams == ("team_0",) and caplog.text == ""


def test_malformed_metadata_teams_name_the_override(tmp_path, monkeypatch):
    mod = _write_module(tmp_path, monkeypatch, "third_party_bad_teams", (
        "import games\n"
        "def env():\n"
        "    e = games.to_pettingzoo(games.make('matrix/climbing'))\n"
        "    e.metadata = {**e.metadata, 'teams': ['red', 'blue']}  # not a declaration we read\n"
        "    return e\n"
    ))
    with pytest.raises(games.GameError, match="metadata: teams= must be.*pass teams="):
        games.make(f"pettingzoo/{mod}:env")
    game = games.make(f"pettingzoo/{mod}:env", teams={"agent_0": "a", "agent_1": "b"})
    assert game.spec.teams == ("a", "b")


def test_openspiel_games_of_identical_utilities_are_one_team():
    # tiny_hanabi was two teams: population=none trained player_0 beside a random partner
    # and a league played partners against each other
    for name in ("tiny_hanabi", "coop_box_pushing", "matrix_coordination"):
        spec = games.make(f"openspiel/{name}").spec
        assert spec.teams == ("team",) and not spec.zero_sum, name
    assert games.make("openspiel/kuhn_poker").spec.teams == ("player_0", "player_1")
    split = games.make("openspiel/tiny_hanabi", teams=[["player_0"], ["player_1"]]).spec
    assert split.teams == ("team_0", "team_1")


def test_openspiel_partnership_games_are_two_teams():
    # seats 0 and 2 against 1 and 3: each seat was its own team, so population=none trained
    # player_0 beside a random partner and a league refused the game (four teams)
    for name in ("tiny_bridge_4p", "euchre", "python_team_dominoes"):
        spec = games.make(f"openspiel/{name}").spec
        assert {a.id: a.team for a in spec.agents} == {
            "player_0": "team_0", "player_1": "team_1", "player_2": "team_0",
            "player_3": "team_1"}, name
    assert len(games.make("openspiel/hearts").spec.teams) == 4  # every player for themself


def test_partnership_table_names_games_where_partners_score_alike():
    import numpy as np

    import games.openspiel as gos

    rng = np.random.default_rng(0)
    fast = {"bridge": {"use_double_dummy_result": False}}  # its solver: ~1 s an episode
    for name in gos.PARTNERSHIPS:
        game = games.make(f"openspiel/{name}", **fast.get(name, {})).pyspiel_game
        for _ in range(3):
            state = game.new_initial_state()
            while not state.is_terminal():
                if state.is_chance_node():
                    outcomes, probs = zip(*state.chance_outcomes(), strict=True)
                    state.apply_action(outcomes[rng.choice(len(outcomes), p=probs)])
                else:
                    state.apply_action(rng.choice(state.legal_actions()))
            r = state.returns()
            assert r[0] == r[2] and r[1] == r[3], (name, r)
