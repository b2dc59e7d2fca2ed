"""Games: the contract, the registry, adapters for PettingZoo and OpenSpiel, and tools.

    >>> import games
    >>> g = games.make("openspiel/kuhn_poker")
    >>> ts = g.reset(seed=0)
    >>> ts.acting, g.legal_action_texts(ts.acting[0])
    (('player_0',), ['Pass', 'Bet'])
"""

from typing import TYPE_CHECKING, Any

from games import graphs
from games.check import CheckReport, GameCheckError, check_game
from games.core import (
    Action,
    ActionSpace,
    AgentSpec,
    EntityGraph,
    EpisodeTooLongError,
    Game,
    GameCodeError,
    GameContractError,
    GameError,
    GameSpec,
    IllegalActionError,
    InvalidAction,
    TimeStep,
    Transition,
    UnknownGameError,
)
from games.matrix import MatrixGame
from games.registry import make, register, registered
from games.vector import VecStep, VectorGame

if TYPE_CHECKING:
    from games.export import to_pettingzoo


def __getattr__(name: str) -> Any:
    """``to_pettingzoo`` on first use: it imports PettingZoo and gymnasium (~0.07 s CPU), which
    a run of an OpenSpiel or built-in game and a refused command line never need."""
    if name == "to_pettingzoo":
        from games.export import to_pettingzoo

        globals()[name] = to_pettingzoo
        return to_pettingzoo
    raise AttributeError(f"module 'games' has no attribute {name!r}")


def __dir__() -> list[str]:  # help(games) and tab completion list the lazy name too
    return sorted({*globals(), "to_pettingzoo"})

__all__ = [
    "Action",
    "ActionSpace",
    "AgentSpec",
    "CheckReport",
    "EntityGraph",
    "EpisodeTooLongError",
    "Game",
    "GameCheckError",
    "GameCodeError",
    "GameContractError",
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
