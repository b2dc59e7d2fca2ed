"""The errors of ``games``, and a game's own exception told in one line.

Every error a user can cause through ``games`` is a :class:`GameError` (a ``ValueError``), so
the command lines report it in one line. Where the contract (:mod:`games.core`) builds a time
step and the game broke it, the error is a :class:`GameContractError` naming the game and the
step; an exception of the game's own code comes out as a :class:`GameCodeError` that names the
game's method and the user's line that raised it (:func:`raised_text`, :func:`where_raised`,
:func:`method_of`), the exception itself its ``__cause__``.
"""

from __future__ import annotations

import os
import sysconfig
import traceback

__all__ = [
    "EpisodeTooLongError",
    "GameCodeError",
    "GameContractError",
    "GameError",
    "IllegalActionError",
    "InvalidAction",
    "UnknownGameError",
    "method_of",
    "raised_text",
    "where_raised",
]


class GameError(ValueError):
    """Base class of every error a user can cause through ``games``."""


class UnknownGameError(GameError):
    """``games.make`` was given a name that is neither registered nor a known prefix."""


class IllegalActionError(GameError):
    """``Game.step`` was given an action that is not legal for that agent now."""


class InvalidAction(GameError):
    """``Game.parse_action`` could not turn a text into a legal action."""


class EpisodeTooLongError(GameError):
    """An episode ran past its game's ``spec.max_steps`` without ending: VectorGame refuses
    the step (training would go on until evaluation, which waits for whole episodes, stopped
    it), evaluation and match play the step it should have ended at."""


class GameContractError(GameError):
    """The game broke the contract where the base class builds a time step: an observation
    of another shape than ``spec.obs_shapes`` says, an acting agent with no legal action, or
    (:class:`GameCodeError`) an exception of its own.

    Attributes:
        game: the game's ``spec.name``.
        where: ``reset(seed=...)`` or ``step N`` (time step N of the episode).
        detail: what went wrong, without the game and the step.
    """

    def __init__(self, game: str, where: str, detail: str, hint: str = "") -> None:
        self.game, self.where, self.detail = game, where, detail
        super().__init__(f"{game} {where}: {detail}{hint}")

    def __reduce__(self) -> tuple:
        """Pickled as its message and attributes (a Ray worker's error reaches the driver;
        the default ``cls(*args)`` lacks the arguments); a GameCodeError's ``error``, the
        game's own exception, may not pickle and stays behind."""
        state = {k: v for k, v in vars(self).items() if k != "error"}
        return _rebuilt_error, (type(self), str(self), state)


def _rebuilt_error(cls: type, message: str, state: dict) -> BaseException:
    err = cls.__new__(cls, message)
    err.args = (message,)
    err.__dict__.update(state)
    return err


class GameCodeError(GameContractError):
    """A game's own code (``_reset``, ``_step``, ``acting_agents``, ``observe``,
    ``legal_actions``; ``state``, text views and graphs asked through :meth:`Game.guarded`)
    raised an exception that is not a :class:`GameError`: a bug in the game.

    The message names the game, where in the episode, the method, the exception and the line
    that raised it; the exception itself is ``__cause__`` and ``error`` (``HYDRA_FULL_ERROR=1``
    shows its traceback on the command line). ``method`` is the game's method the contract
    called (the outermost frame of the game's code).
    """

    def __init__(self, game: str, where: str, err: Exception, call: str = "") -> None:
        self.error, self.method = err, method_of(err)
        super().__init__(game, where, raised_text(err, call or self.method),
                         "; HYDRA_FULL_ERROR=1 shows the traceback")


def where_raised(err: BaseException, relative: bool = False) -> str:
    """``file:line in function`` of the innermost frame of ``err`` outside the standard
    library and installed packages (the user's own line), else of the innermost frame;
    ``relative``: a file under the working folder as a path from it (the user's project)."""
    frames = traceback.extract_tb(err.__traceback__)
    libs = {sysconfig.get_path(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    own = [f for f in frames if not any(lib and f.filename.startswith(lib) for lib in libs)]
    frame = (own or frames or [None])[-1]
    if frame is None:
        return "unknown place"
    path = frame.filename
    if relative and os.path.isabs(path) and not os.path.relpath(path).startswith(".."):
        path = os.path.relpath(path)
    return f"{path}:{frame.lineno} in {frame.name}"


_CONTRACT = os.path.join(os.path.dirname(__file__), "core.py")
"""The file of :mod:`games.core`, whose ``reset``, ``step``, ``guarded`` and agent-id checks
call the game's code: the game's method is the outermost frame outside it."""


def method_of(err: BaseException, callers: tuple[str, ...] = ()) -> str:
    """The name of the outermost frame of ``err``'s traceback outside :mod:`games.core` and the
    files ``callers``: the game's method that the contract (or a checker) called."""
    frames = list(traceback.walk_tb(err.__traceback__))
    for frame, _ in frames:
        if frame.f_code.co_filename not in (_CONTRACT, *callers):
            return frame.f_code.co_name
    return frames[-1][0].f_code.co_name if frames else "?"


def raised_text(err: BaseException, method: str) -> str:
    """``<method> raised <Type>: <message> (at <file:line in function>)`` in one line."""
    why = " ".join(str(err).split()) or "no message"
    return f"{method} raised {type(err).__name__}: {why} (at {where_raised(err)})"
