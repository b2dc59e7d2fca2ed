"""The exact tools key a pyspiel game's information states by ``information_state_string``,
which a user's Python game computes in its own observer: a bug there is one line naming the
game, the call, the history and the user's line (``games.GameCodeError``), as the views asked
right after it (``observe``, ``text_observation``) already were through ``Game.guarded``.

Before: the walk asked it unguarded, and the user's KeyError came out as a traceback through
``game_tree`` (``selfplay-train population=psro`` ended in it, exit 1)."""

from __future__ import annotations

import re
import sys

import pytest

import games
from tests.populations.user_modules import train_here

# Kuhn poker whose code breaks in one call (``BREAKS``: the pyspiel call, as the error names
# it) at the nodes where ``broken`` holds; ``source(...)`` writes the module of one such game.
TEMPLATE = '''
import pyspiel
from open_spiel.python.games import kuhn_poker as kp

_TYPE = pyspiel.GameType(
    short_name="python_w24_kuhn_{tag}", long_name="w24 kuhn {tag}",
    dynamics=kp._GAME_TYPE.dynamics, chance_mode=kp._GAME_TYPE.chance_mode,
    information=kp._GAME_TYPE.information, utility=kp._GAME_TYPE.utility,
    reward_model=kp._GAME_TYPE.reward_model, max_num_players=2, min_num_players=2,
    provides_information_state_string=True, provides_information_state_tensor=True,
    provides_observation_string=True, provides_observation_tensor=True,
    parameter_specification={{}})
BREAKS = "{call}"


def broken(state, call):
    return call == BREAKS and ({when})


class State(kp.KuhnPokerState):
    def current_player(self):
        if broken(self, "current_player"):
            raise KeyError("{message}")  # the user's line
        return super().current_player()

    def is_terminal(self):
        if broken(self, "is_terminal"):
            raise KeyError("{message}")  # the user's line
        return super().is_terminal()

    def _legal_actions(self, player):
        if broken(self, "legal_actions"):
            raise KeyError("{message}")  # the user's line
        return super()._legal_actions(player)

    def chance_outcomes(self):
        if broken(self, "chance_outcomes"):
            raise KeyError("{message}")  # the user's line
        return super().chance_outcomes()

    def _apply_action(self, action):
        if broken(self, "apply_action"):
            raise KeyError("{message}")  # the user's line
        return super()._apply_action(action)

    def returns(self):
        if broken(self, "returns"):
            raise KeyError("{message}")  # the user's line
        return super().returns()


class Observer(kp.KuhnPokerObserver):
    def set_from(self, state, player):
        if broken(state, "information_state_tensor"):
            raise KeyError("{message}")  # the user's line
        return super().set_from(state, player)

    def string_from(self, state, player):
        if broken(state, "information_state_string"):
            raise KeyError("{message}")  # the user's line
        return super().string_from(state, player)


class Game(kp.KuhnPokerGame):
    def __init__(self, params=None):
        pyspiel.Game.__init__(self, _TYPE, kp._GAME_INFO, params or dict())

    def new_initial_state(self):
        return State(self)

    def make_py_observer(self, iig_obs_type=None, params=None):
        return Observer(iig_obs_type or pyspiel.IIGObservationType(perfect_recall=False), params)


if "python_w24_kuhn_{tag}" not in pyspiel.registered_names():
    pyspiel.register_game(_TYPE, Game)
'''


def source(tag: str, call: str, when: str, message: str = "the user's bug") -> str:
    """The module of game ``openspiel/python_w24_kuhn_<tag>``, whose ``call`` raises a
    KeyError where ``when`` (Python over ``state``) holds."""
    return TEMPLATE.format(tag=tag, call=call, when=when, message=message)


# Kuhn poker whose observer's string breaks once a bet is made (its tensors are fine).
SOURCE = source("str", "information_state_string", "state.bets", "no words after a bet")
MODULE = "w24_kuhn_str"
LINE = (r"^openspiel/python_w24_kuhn_str step 0: information_state_string\(1\) at history "
        r"\[0, 1, 0\] raised KeyError: 'no words after a bet' \(at .*w24_kuhn_str\.py:\d+ in "
        r"string_from\); HYDRA_FULL_ERROR=1 shows the traceback$")


def install(tmp_path, monkeypatch, module: str, text: str) -> None:
    """Module ``module`` of source ``text``, importable from ``tmp_path`` and imported
    (pyspiel keeps its registration)."""
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / f"{module}.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop(module, None)
    __import__(module)


@pytest.fixture()
def user_kuhn(tmp_path, monkeypatch):
    """The game above, importable from ``tmp_path`` (pyspiel keeps its registration)."""
    install(tmp_path, monkeypatch, MODULE, SOURCE)
    yield "openspiel/python_w24_kuhn_str"
    sys.modules.pop(MODULE, None)


def test_a_raising_information_state_string_is_one_line(user_kuhn):
    from populations.exploitability import game_tree

    with pytest.raises(games.GameCodeError, match=LINE) as err:
        game_tree(user_kuhn)  # deal 0, deal 1, player_0 passes: player_1's key
    assert isinstance(err.value.__cause__, KeyError)
    assert "\n" not in str(err.value)


def test_kuhn_poker_is_keyed_as_before():
    """The guard changes nothing for a game whose strings work: Kuhn's 12 information
    states, by their strings."""
    from populations.exploitability import game_tree

    tree = game_tree("openspiel/kuhn_poker")
    assert [len(s.keys) for s in tree.players] == [6, 6]
    assert {"0", "1pb"} <= set(tree.players[0].keys)


# The calls the exact tools (and the size checks before their walk) make on a user's game,
# each broken at nodes no earlier check visits; the line names the call as it was asked
# again at the node it raised at, the history and the user's method. The games stay
# registered: tests that make every pyspiel game (reset(seed=0), then a pass) miss their bugs.
CASES = {  # tag: (call broken, where, the call named, history, the user's method)
    "legal": ("legal_actions", "state.cards == [1, 2] and state.bets == [1]",
              r"legal_actions\(\)", "1, 2, 1", "_legal_actions"),
    "chance": ("chance_outcomes", "state.cards == [2]", r"chance_outcomes\(\)", "2",
               "chance_outcomes"),
    "apply": ("apply_action", "state.cards == [1, 2] and state.bets == [1]", r"child\(0\)",
              "1, 2, 1", "_apply_action"),
    "returns": ("returns", "state.cards == [2, 0] and state.bets == [1, 1]", r"returns\(\)",
                "2, 0, 1, 1", "returns"),
    "terminal": ("is_terminal", "state.cards == [2, 0] and state.bets == [0, 1]",
                 r"is_terminal\(\)", "2, 0, 0, 1", "is_terminal"),
    "player": ("current_player", "state.cards == [2, 0] and state.bets == [0, 1]",
               r"current_player\(\)", "2, 0, 0, 1", "current_player"),
    "tensor": ("information_state_tensor", "state.cards == [1, 0] and state.bets == [1]",
               r"observe\('player_1'\)", "1, 0, 1", "set_from"),  # its views are asked at
    # the first history of each information state: player_1's card 0 after a bet is [1, 0, 1]
    "string": ("information_state_string", "state.cards == [2, 0] and state.bets == [1]",
               r"information_state_string\(1\)", "2, 0, 1", "string_from"),
}


def _case_game(tag, tmp_path, monkeypatch) -> str:
    """The module of ``CASES[tag]``'s game, installed under ``tmp_path / "code"``."""
    call, when = CASES[tag][:2]
    module = f"w24_kuhn_{tag}"
    install(tmp_path / "code", monkeypatch, module, source(tag, call, when))
    return module


def _one_line_exit(argv, monkeypatch, work, capfd) -> str:
    """``selfplay-train argv`` run in ``work``: exit 2, no traceback; its one line."""
    with pytest.raises(SystemExit) as err:
        train_here(argv, monkeypatch, work)
    assert err.value.code == 2
    out, errs = capfd.readouterr()  # the log lines too (Hydra writes them to fd 2)
    assert "Traceback" not in out + errs
    lines = errs.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def _line(module: str, named: str, history: str, method: str) -> str:
    """The pattern of the line naming ``module``'s game, the call, the history, the method."""
    return (rf"^selfplay-train: openspiel/python_{module} step "
            rf"0: {named} at history \[{history}\] raised KeyError: \"the user's bug\" \(at "
            rf".*{module}\.py:\d+ in {method}\); HYDRA_FULL_ERROR=1 shows the traceback")


@pytest.mark.parametrize("population", ["population=psro", "population=self_play "
                                        "population.nash_conv=true"])
@pytest.mark.parametrize("tag", list(CASES))
def test_a_user_games_bug_in_the_exact_walk_stops_the_cli_in_one_line(
        tag, population, tmp_path, monkeypatch, capfd):
    """``selfplay-train population=psro`` (payoffs=auto, oracle=auto: ``why_not_exact`` asks
    the exact tools) and a league logging exact NashConv: exit 2, one line naming the game,
    the call, the history and the user's line, no run folder. Before: legal_actions,
    chance_outcomes, child, returns, is_terminal and current_player raised through the walk
    as tracebacks (exit 1); with payoffs=auto a GameCodeError of the views was a reason to
    sample payoffs instead (see the next test), and the run went on to meet the string's bug
    again in play, named as text_observation."""
    named, history, method = CASES[tag][2:]
    module = _case_game(tag, tmp_path, monkeypatch)
    work = tmp_path / "work"
    work.mkdir()
    line = _one_line_exit([f"imports=[{module}]", f"game.name=openspiel/python_{module}",
                           *population.split(), "logger=none", "progress=false"],
                          monkeypatch, work, capfd)
    assert re.match(_line(module, named, history, method), line), line
    assert "exploit.every" not in line  # no advice to leave NashConv out for a code bug
    assert list(work.iterdir()) == []  # stopped before any run folder


def test_why_not_exact_raises_a_games_bug_each_time_it_is_asked(tmp_path, monkeypatch):
    """payoffs=auto asks ``why_not_exact`` twice (the CLI's resolve_auto, then PSRO): the bug
    is raised both times, never a reason to fall back to sampled payoffs (before: the first
    time a GameCodeError turned into a reason; game_tree then kept its text as a refusal)."""
    from populations.psro_config import why_not_exact

    install(tmp_path, monkeypatch, "w24_kuhn_returns2",
            source("returns2", "returns", "state.bets == [1, 1]"))
    game = games.make("openspiel/python_w24_kuhn_returns2")
    for _ in range(2):
        with pytest.raises(games.GameCodeError, match=r"returns\(\) at history"):
            why_not_exact(game, {"player_0": ("player_0",), "player_1": ("player_1",)})


@pytest.mark.parametrize("call, method", [("legal_actions", "_legal_actions"),
                                          ("chance_outcomes", "chance_outcomes"),
                                          ("information_state_tensor", "set_from")])
def test_a_user_games_bug_when_it_is_made_is_one_line(call, method, tmp_path, monkeypatch):
    """``games.make`` asks a game written in Python for its first decision state, its legal
    actions and its tensor's size: a bug there is one line naming the game, the user's
    method and line. Before: the KeyError's traceback from any command line."""
    tag = f"made_{method.strip('_')}"
    install(tmp_path, monkeypatch, f"w24_kuhn_{tag}", source(tag, call, "not state.bets"))
    with pytest.raises(games.GameCodeError) as err:
        games.make(f"openspiel/python_w24_kuhn_{tag}")
    assert re.match(rf"^openspiel/python_w24_kuhn_{tag} when made: {method} raised KeyError: "
                    rf"\"the user's bug\" \(at .*w24_kuhn_{tag}\.py:\d+ in {method}\); "
                    "HYDRA_FULL_ERROR=1 shows the traceback$", str(err.value)), str(err.value)
    assert isinstance(err.value.__cause__, KeyError)


SAMPLED = ["population=psro", "population.psro.payoffs=sampled", "population.oracle=rl",
           "population.iterations=1", "population.oracle_frames=256", "logger=none",
           "progress=false"]


@pytest.mark.parametrize("tag", ["returns", "apply", "tensor"])
def test_sampled_payoffs_with_nash_conv_stop_on_a_games_bug_in_one_line(
        tag, tmp_path, monkeypatch, capfd):
    """``population.psro.payoffs=sampled`` with exact NashConv on (its default): the walk's
    GameCodeError stops the run in one line, as with payoffs=auto. Before: PSRO logged it as
    "no exact NashConv" and went on, to meet the bug again in the sampled payoffs' memo
    (returns, child: a traceback, exit 1; a view: one line, after the warning)."""
    named, history, method = CASES[tag][2:]
    module = _case_game(tag, tmp_path, monkeypatch)
    line = _one_line_exit([f"imports=[{module}]", f"game.name=openspiel/python_{module}",
                           *SAMPLED], monkeypatch, tmp_path, capfd)
    assert re.match(_line(module, named, history, method), line), line


# The calls the sampled payoffs' memo (populations.lockstep.HistoryMemo) makes on the game
# unguarded, each at a history that 1,000 episodes of each entry reach.
LOCKSTEP = {"returns": CASES["returns"][2:], "terminal": CASES["terminal"][2:],
            "player": CASES["player"][2:], "chance": CASES["chance"][2:],
            "apply": (r"child\(0\)", "1, 2, 1", "_apply_action")}


@pytest.mark.parametrize("tag", list(LOCKSTEP))
def test_the_sampled_payoffs_memo_stops_on_a_games_bug_in_one_line(
        tag, tmp_path, monkeypatch, capfd):
    """``population.psro.payoffs=sampled population.psro.nash_conv=false``: the memo of the
    histories episodes reach asks the game's child, is_terminal, returns, chance_outcomes
    and current_player; a bug there is one line naming the call, the history and the user's
    line, exit 2. Before: the user's KeyError as a traceback, exit 1."""
    named, history, method = LOCKSTEP[tag]
    module = _case_game(tag, tmp_path, monkeypatch)
    line = _one_line_exit([f"imports=[{module}]", f"game.name=openspiel/python_{module}",
                           *SAMPLED, "population.psro.nash_conv=false"], monkeypatch,
                          tmp_path, capfd)
    assert re.match(_line(module, named, history, method), line), line


def test_a_league_raises_a_games_bug_without_the_nash_conv_hint(tmp_path, monkeypatch):
    """A league (the library's ``League``) logging exact NashConv raises the game's bug as
    it is: a GameCodeError naming the call, with no advice to turn NashConv off (before: a
    ValueError ending "set it false, or exploit.every=N ... for an approximate NashConv")."""
    from populations.league import League, LeagueConfig

    named, history, method = CASES["returns"][2:]
    module = _case_game("returns", tmp_path, monkeypatch)
    cfg = LeagueConfig(game=f"openspiel/python_{module}", game_kwargs={}, generations=1,
                       frames_per_generation=64, num_envs=4, eval_episodes=1, nash_conv=True)
    with pytest.raises(games.GameCodeError) as err:
        League(cfg, tmp_path / "run")
    assert re.match(_line(module, named, history, method).replace("selfplay-train: ", ""),
                    str(err.value)), str(err.value)
    assert "nash_conv" not in str(err.value) and "exploit" not in str(err.value)


def _choiceless(tag: str, call: str, when: str) -> str:
    """``source(tag, call, when)`` whose ``call`` (legal_actions or chance_outcomes) gives an
    empty list where ``when`` holds, instead of raising (the node is not terminal)."""
    method = {"legal_actions": "_legal_actions(self, player)",
              "chance_outcomes": "chance_outcomes(self)"}[call]
    text = source(tag, call, when)
    head = f"    def {method}:\n        if broken(self, \"{call}\"):\n"
    raising = head + "            raise KeyError(\"the user's bug\")  # the user's line\n"
    assert raising in text
    return text.replace(raising, head + "            return []\n")


# Games whose node, not terminal, gives no choice (tag: call, where, the words, histories)
CHOICELESS = {
    "noleg": ("legal_actions", "len(state.bets) == 1",
              r"no legal actions at a decision node \(legal_actions\(\) of player 1 is empty",
              r"\[\d, \d, \d\]"),
    "nochance": ("chance_outcomes", "state.cards == [2]",
                 r"no outcomes at a chance node \(chance_outcomes\(\) is empty", r"\[2\]"),
}


def _choiceless_game(tag, tmp_path, monkeypatch) -> str:
    call, when = CHOICELESS[tag][:2]
    module = f"w24_kuhn_{tag}"
    install(tmp_path / "code", monkeypatch, module, _choiceless(tag, call, when))
    return module


def _choiceless_line(module: str, tag: str) -> str:
    words, history = CHOICELESS[tag][2:]
    return (rf"openspiel/python_{module} at history {history}: {words} and is_terminal\(\) "
            r"is False\); accepted: a node that is terminal or has a choice$")


@pytest.mark.parametrize("tag", list(CHOICELESS))
def test_a_node_without_choices_is_the_games_contract_broken(tag, tmp_path, monkeypatch):
    """``why_not_exact`` (payoffs=auto, oracle=auto) and the bounded count raise a
    GameContractError naming the game and the history. Before: the estimate drew from an
    empty range and why_not_exact returned ``'high <= 0'`` as its reason (oracle=auto chose
    rl silently), and count_tree counted the node as a leaf."""
    from games.openspiel import count_tree
    from populations.psro_config import why_not_exact

    module = _choiceless_game(tag, tmp_path, monkeypatch)
    game = games.make(f"openspiel/python_{module}")
    with pytest.raises(games.GameContractError, match=_choiceless_line(module, tag)):
        why_not_exact(game, {"player_0": ("player_0",), "player_1": ("player_1",)})
    with pytest.raises(games.GameContractError, match=_choiceless_line(module, tag)):
        count_tree(game.pyspiel_game, 10_000, guard=game)


@pytest.mark.parametrize("payoffs", ["exact", "auto"])
def test_a_node_without_legal_actions_stops_psro_in_one_line(
        payoffs, tmp_path, monkeypatch, capfd):
    """``selfplay-train population=psro``: exit 2, one line naming the game and the history.
    Before: with payoffs=exact, ``selfplay-train: high <= 0``, naming nothing."""
    module = _choiceless_game("noleg", tmp_path, monkeypatch)
    work = tmp_path / "work"
    work.mkdir()
    line = _one_line_exit([f"imports=[{module}]", f"game.name=openspiel/python_{module}",
                           "population=psro", f"population.psro.payoffs={payoffs}",
                           "logger=none", "progress=false"], monkeypatch, work, capfd)
    assert re.match("^selfplay-train: " + _choiceless_line(module, "noleg"), line), line
    assert list(work.iterdir()) == []
