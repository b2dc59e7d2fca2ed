"""The line an LLM member logs when a stop request comes part-way through its generation says
what a second signal does (walk35b item 2): it raises at once (``deferred_stop``), the
league's checkpoint being the one before this generation, which the resume trains again."""

from __future__ import annotations

import logging
import os
import re
import signal

import pytest

from populations.run_folder import deferred_stop, sigterm_as_interrupt
from tests.populations.test_fix26g_llm_member import PER_ITERATION, _generation, _member

LINE = (r"finishing llm's generation before stopping: 1 of its 3 GRPO iterations done, 2 more "
        r"\(about \d+s\); a second Ctrl-C or SIGTERM stops now \(the resume trains this "
        r"generation again\)")


def test_the_line_says_a_second_signal_stops_now(caplog):
    member = _member(3)
    with (caplog.at_level(logging.WARNING, logger="populations.members"),
          sigterm_as_interrupt(), pytest.raises(KeyboardInterrupt),
          deferred_stop("after the member in training")):
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C before the first iteration ends
        ticks = _generation(member)
    assert ticks[-1] == 3 * PER_ITERATION
    lines = [r.getMessage() for r in caplog.records if r.name == "populations.members"]
    assert len(lines) == 1 and re.fullmatch(LINE, lines[0]), lines


@pytest.mark.parametrize("second", [signal.SIGINT, signal.SIGTERM])
def test_a_second_signal_does_stop_at_once(second):
    """What the line promises: the second signal raises where it arrives, inside the
    generation (the first only asked)."""
    reached = []
    with sigterm_as_interrupt(), pytest.raises(BaseException) as err, \
            deferred_stop("after the member in training"):
        os.kill(os.getpid(), signal.SIGINT)
        reached.append("first only asked")
        os.kill(os.getpid(), second)
        reached.append("not stopped")  # pragma: no cover - the second raised
    assert reached == ["first only asked"]
    assert isinstance(err.value, KeyboardInterrupt) or type(err.value).__name__ == "Terminated"
