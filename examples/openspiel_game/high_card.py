"""A user's game written as an OpenSpiel Python game, so the exact tools apply to it.

High card: each player is dealt one private card of four (0 < 1 < 2 < 3) and antes 1.
Player 0 checks (showdown for the antes) or bets 1 more; after a bet, player 1 folds
(player 0 takes the antes) or calls (showdown for 2). Zero-sum, chance, imperfect
information: small enough for the exact tools (sequence-form payoffs, NashConv, exact best
responses). Registered with ``pyspiel.register_game``; importing this module makes
``games.make("openspiel/high_card")`` and ``selfplay-train imports=[high_card]
game.name=openspiel/high_card population=psro`` work (run from this folder).
"""

from __future__ import annotations

import numpy as np
import pyspiel

CHECK_OR_FOLD, BET_OR_CALL = 0, 1
DECK = (0, 1, 2, 3)
GAME_TYPE = pyspiel.GameType(
    short_name="high_card",
    long_name="High card (a user's OpenSpiel Python game)",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
    information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.ZERO_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=2,
    min_num_players=2,
    provides_information_state_string=True,
    provides_information_state_tensor=True,
    provides_observation_string=True,
    provides_observation_tensor=True,
)
GAME_INFO = pyspiel.GameInfo(num_distinct_actions=2, max_chance_outcomes=len(DECK),
                             num_players=2, min_utility=-2.0, max_utility=2.0,
                             utility_sum=0.0, max_game_length=4)


class HighCardGame(pyspiel.Game):
    def __init__(self, params: dict | None = None) -> None:
        super().__init__(GAME_TYPE, GAME_INFO, params or {})

    def new_initial_state(self) -> HighCardState:
        return HighCardState(self)

    def make_py_observer(self, iig_obs_type=None, params=None) -> HighCardObserver:
        return HighCardObserver()


class HighCardState(pyspiel.State):
    def __init__(self, game: HighCardGame) -> None:
        super().__init__(game)
        self.cards: list[int] = []
        self.moves: list[int] = []

    def current_player(self) -> int:
        if self.is_terminal():
            return pyspiel.PlayerId.TERMINAL
        if len(self.cards) < 2:
            return pyspiel.PlayerId.CHANCE
        return len(self.moves)  # player 0 moves first, player 1 only after a bet

    def _legal_actions(self, player: int) -> list[int]:
        return [CHECK_OR_FOLD, BET_OR_CALL]

    def chance_outcomes(self) -> list[tuple[int, float]]:
        left = [c for c in DECK if c not in self.cards]
        return [(c, 1.0 / len(left)) for c in left]

    def _apply_action(self, action: int) -> None:
        (self.cards if self.is_chance_node() else self.moves).append(action)

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            return f"Deal:{action}"
        return ("Check", "Bet")[action] if player == 0 else ("Fold", "Call")[action]

    def is_terminal(self) -> bool:
        return self.moves in ([CHECK_OR_FOLD], [BET_OR_CALL, CHECK_OR_FOLD],
                              [BET_OR_CALL, BET_OR_CALL])

    def returns(self) -> list[float]:
        if not self.is_terminal():
            return [0.0, 0.0]
        if self.moves == [BET_OR_CALL, CHECK_OR_FOLD]:  # player 1 folded
            return [1.0, -1.0]
        stake = 2.0 if self.moves == [BET_OR_CALL, BET_OR_CALL] else 1.0
        win = stake if self.cards[0] > self.cards[1] else -stake
        return [win, -win]

    def __str__(self) -> str:
        return " ".join(map(str, self.cards)) + " " + "".join("cb"[m] for m in self.moves)


class HighCardObserver:
    """What a player knows: who it is, its card, the moves so far (perfect recall)."""

    def __init__(self) -> None:
        self.tensor = np.zeros(2 + len(DECK) + 4, np.float32)
        self.dict = {"player": self.tensor[:2], "card": self.tensor[2:6],
                     "moves": self.tensor[6:].reshape(2, 2)}

    def set_from(self, state: HighCardState, player: int) -> None:
        self.tensor.fill(0)
        self.dict["player"][player] = 1
        if len(state.cards) > player:
            self.dict["card"][state.cards[player]] = 1
        for turn, move in enumerate(state.moves):
            self.dict["moves"][turn, move] = 1

    def string_from(self, state: HighCardState, player: int) -> str:
        card = state.cards[player] if len(state.cards) > player else "?"
        return f"p{player} card:{card} moves:{''.join('cb'[m] for m in state.moves)}"


pyspiel.register_game(GAME_TYPE, HighCardGame)
