"""The switch that lifts the games' upper size limits, for a researcher who needs a bigger game.

The upper limits on counts and sizes (an OpenSpiel game's ``num_cards``, a VMAS or MPE
scenario's agents and entities) stop a game name read from a file (a snapshot, a league
database) from hanging ``games.make`` or allocating far beyond the file. They are lifted only
by the environment of the process that builds the game, ``SELFPLAY_GAME_LIMITS=off``, read
each time a game is checked: never from a snapshot, a config or a database, so a crafted file
cannot lift them. Lower limits and kinds are checked all the same (below them a game crashes
or hangs whatever its size), as are limits the game's own code cannot go past (universal
poker's four rounds).
"""

from __future__ import annotations

import logging
import os

ENV = "SELFPLAY_GAME_LIMITS"
HINT = f"{ENV}=off in the environment lifts this limit"
"""The words a refusal for a size above its limit ends with, in parentheses."""
LIFTED_LINE = f"game size limits lifted ({ENV}=off)"
"""The warning logged once per process the first time the switch lets a value past its limit."""

_log = logging.getLogger(__name__)
_said = False


def switch_on() -> bool:
    """Whether ``SELFPLAY_GAME_LIMITS=off`` is set in this process, saying nothing: for a text
    (an accepted range, a refusal) or for handing the switch on to a worker, where no limit is
    lifted yet."""
    return os.environ.get(ENV, "").strip().lower() == "off"


def lifted() -> bool:
    """Whether the upper size limits are off in this process (``SELFPLAY_GAME_LIMITS=off``),
    asked where a value is past its limit: the first time it finds them off, it says so once
    (:data:`LIFTED_LINE`, a warning of this module's logger), so a run that built a game past
    a limit says why. Anywhere else (a text, a value within its limits), ask
    :func:`switch_on`: a refusal's "accepted:" text with the switch on said the limits were
    lifted though nothing was built past one."""
    global _said
    off = switch_on()
    if off and not _said:
        _said = True
        _log.warning(LIFTED_LINE)
    return off


def integer_range(low: int, high: int | None) -> str:
    """What a count accepts: ``an integer in [low, high]``, or ``an integer >= low`` where it
    has no upper limit (``high`` None, or the limits lifted)."""
    if high is None or switch_on():  # a text: no value is past its limit here
        return f"an integer >= {low}"
    return f"an integer in [{low}, {high}]"


def too_large(where: str, name: str, value: object, low: int, high: int) -> str:
    """The refusal of ``name=value`` above its limit ``high``, naming the switch that lifts
    it: ``vmas/simple_spread: n_agents=1000 is too large; accepted: an integer in [1, 256]
    (SELFPLAY_GAME_LIMITS=off ...)``."""
    return (f"{where}: {name}={value!r} is too large; accepted: an integer in [{low}, {high}] "
            f"({HINT})")
