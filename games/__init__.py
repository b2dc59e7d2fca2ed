"""Games: the contract, the registry, adapters for PettingZoo and OpenSpiel, and tools.

    >>> import games
    >>> g = games.make("openspiel/kuhn_poker")
    >>> ts = g.reset(seed=0)
    >>> ts.acting, g.legal_action_texts(ts.acting[0])
    (('player_0',), ['Pass', 'Bet'])
"""

from games import graphs
from games.check import CheckReport, GameCheckError, check_game
from games.core import (
    Action,
    ActionSpace,
    AgentSpec,
    EntityGraph,
    Game,
    GameError,
    GameSpec,
    IllegalActionError,
    InvalidAction,
    TimeStep,
    Transition,
    UnknownGameError,
)
from games.export import to_pettingzoo
from games.matrix import MatrixGame
from games.registry import make, register, registered
from games.vector import VecStep, VectorGame

__all__ = [
    "Action",
    "ActionSpace",
    "AgentSpec",
    "CheckReport",
    "EntityGraph",
    "Game",
    "GameCheckError",
    "GameError",
    "GameSpec",
    "IllegalActionError",
    "InvalidAction",
    "MatrixGame",
    "TimeStep",
    "Transition",
    "UnknownGameError",
    "VecStep",
    "VectorGame",
    "check_game",
    "graphs",
    "make",
    "register",
    "registered",
    "to_pettingzoo",
]
