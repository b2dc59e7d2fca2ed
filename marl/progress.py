"""Progress bars for every command line: tqdm's bar on a terminal, plain lines in a log.

A tqdm bar redraws itself with ``\\r`` up to ten times a second. Written to a file (``nohup``,
``> run.out``, a batch system's log) that is one ever-growing line: about 16 KB a minute, 30 MB
a day, unreadable with ``less`` or ``tail``. :class:`tqdm` here is a drop-in ``tqdm.auto.tqdm``
(every call site imports it instead): on a terminal (and in a notebook, whose bar is a widget)
it is tqdm's own bar; on any other stream it writes one newline-terminated line at most every
:data:`LINE_INTERVAL_S` seconds and one when the bar closes, each with the bar's description,
count/total (percentage), elapsed<ETA and rate, as tqdm prints them without the bar::

    generation 2/5 mappo_0:  30% 3072/10240 [00:30<01:10, 102.40frame/s]
"""

from __future__ import annotations

import sys
from typing import Any

from tqdm import std as _std
from tqdm.auto import tqdm as _auto_tqdm

LINE_INTERVAL_S = 30.0  # seconds between two lines of one bar in a log

# tqdm.auto picks the notebook's widget bar under Jupyter: it draws no text to a stream
_NOTEBOOK = any(c.__module__ == "tqdm.notebook" for c in _auto_tqdm.__mro__)


def _tqdm_time() -> float:
    return _std.time()  # looked up at each call: a test that fakes tqdm's clock fakes this


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a stream without isatty, or a closed one
        return False


class tqdm(_auto_tqdm):  # noqa: N801 - a drop-in for tqdm.auto.tqdm, named as it is
    """``tqdm.auto.tqdm`` that writes lines, not ``\\r`` redraws, to a stream that is not a
    terminal (see the module docstring); arguments as tqdm's (``file`` by keyword)."""

    clock = staticmethod(_tqdm_time)  # the lines' (in a log, the rate's too) clock; tests fake it

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        stream = kwargs.get("file") or sys.stderr
        # Jupyter without ipywidgets: tqdm.auto's plain bar, whose \r redraws the notebook
        # draws in place (its stderr is no terminal)
        self._lines = not (_NOTEBOOK or "ipykernel" in sys.modules or _is_terminal(stream))
        self._line_at: float | None = None  # when the last line was written
        self._line_n: float | None = None  # the count it showed
        if self._lines:
            # update() formats nothing between lines; no dynamic miniters, whose monitor thread
            # refreshes on its own clock (a bar that slows down still gets its next line)
            kwargs.update(mininterval=LINE_INTERVAL_S, maxinterval=float("inf"), miniters=1)
        super().__init__(*args, **kwargs)
        if self._lines and not self.disable:
            self._time = self.clock  # elapsed, rate and ETA on the lines' clock
            self.start_t = self.last_print_t = self.clock()

    def display(self, msg: str | None = None, pos: int | None = None) -> bool | None:
        if not self._lines:
            return super().display(msg, pos)
        if msg is not None:  # '' clears the bar (close, write): nothing to take back in a log
            return False
        now = self.clock()
        if self._line_at is not None and now - self._line_at < LINE_INTERVAL_S:
            return False
        self._write_line(now)
        return True

    def _write_line(self, now: float) -> None:
        meter = self.format_dict
        meter["ncols"] = 0  # tqdm's text without the bar: desc: 30% 3072/10240 [...]
        line = self.format_meter(**meter)  # without a description: 30% 3072/10240 [...]
        self.fp.write((line if self.desc else line.lstrip()) + "\n")
        self.fp.flush()
        self._line_at, self._line_n = now, self.n

    def note(self, text: str, now: bool = False) -> None:
        """Show ``text`` as the bar's postfix (where a long item is: ``412 steps``,
        ``update 3/8 minibatches``) while its count stands still: on a terminal redrawn at
        most every ``mininterval`` (and at once with ``now``); in a log the postfix goes on
        the next of the bar's lines, which come every :data:`LINE_INTERVAL_S` as ever (a
        caller's own throttle out of step with them skipped lines)."""
        if self.disable:
            return
        self.set_postfix_str(text, refresh=False)
        if self._lines:
            self.refresh()  # display() writes a line only when one is due
            return
        t = _std.time()
        if now or t - self._noted >= self.mininterval:
            self._noted = t
            self.refresh()

    _noted = 0.0  # when note() last redrew a terminal's bar

    def clear(self, nolock: bool = False) -> None:
        if not self._lines:
            super().clear(nolock)

    def close(self) -> None:
        if self._lines and not getattr(self, "disable", True):
            if self._line_n != self.n:  # the last count (and the overall rate) once more
                self._write_line(self.clock())
            self.leave = False  # a kept bar ends with a newline tqdm would add alone
        super().close()
