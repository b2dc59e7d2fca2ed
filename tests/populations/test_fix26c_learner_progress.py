"""Ray learner actors say what is still training while a generation runs (fix26c).

``LearnerPool.wait`` blocked until a member finished, and the league logs a line only then:
with generations of many minutes the operator saw nothing. It now logs a line every
``progress_every_s`` seconds naming the members training (generation, seconds so far) and
those queued for a free actor. Here a real Ray actor trains a member whose generation ends
only once that line has been logged (a gate file the test's log handler writes), so the
member's frames say whether the line came while it trained.
"""

from __future__ import annotations

import logging
import re
import textwrap

import pytest

from games.registry import IMPORTS_ENV
from populations.learner_actors import LearnerJob, LearnerPool, state_bytes
from populations.members import OpponentDraw, TrainPlan

MODULE = "fix26c_gated_member"
SOURCE = '''
import os
import time


class GatedMember:
    """A member whose generation ends when the file ``gate`` exists (7 frames), or after a
    minute without it (-1 frames: nobody opened it)."""

    kind = "mappo"
    opponents = None
    latest_only = False

    def __init__(self, name, gate):
        self.name, self.gate = name, gate

    def train_generation(self, mm):
        end = time.monotonic() + 60.0
        while not os.path.exists(self.gate):
            if time.monotonic() > end:
                return -1
            time.sleep(0.01)
        return 7

    def inputs(self):
        return {}

    def state_dict(self):
        return {}

    def load_state_dict(self, state):
        pass
'''


class _OpenOnLine(logging.Handler):
    """Writes ``gate`` at the first progress line, and keeps every line."""

    def __init__(self, gate) -> None:
        super().__init__(logging.INFO)
        self.gate, self.lines = gate, []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if text.startswith("learner actors: training"):
            self.lines.append(text)
            self.gate.write_text("open")


def _job(name: str, generation: int = 3) -> LearnerJob:
    plan = TrainPlan(game="openspiel/kuhn_poker", game_kwargs={}, num_envs=1, frames=1,
                     seed=0, generation=generation, team_of=(0, 1))
    return LearnerJob(name, plan, OpponentDraw((), (), 0.0, 0), state_bytes({}))


@pytest.mark.timeout(300)
def test_a_line_names_the_members_training_and_queued(ray_local, tmp_path, monkeypatch):
    (tmp_path / f"{MODULE}.py").write_text(textwrap.dedent(SOURCE))
    monkeypatch.syspath_prepend(str(tmp_path))  # the driver pickles the members by reference
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # and the actor imports their module
    monkeypatch.setenv(IMPORTS_ENV, MODULE)
    gated = __import__(MODULE).GatedMember
    gate = tmp_path / "gate"
    handler = _OpenOnLine(gate)
    logger = logging.getLogger("populations.learner_actors")
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    members = [gated("main", str(gate)), gated("exploiter", str(gate))]
    pool = LearnerPool(members, 1, progress_every_s=0.05)  # one actor: one job waits
    try:
        for m in members:
            pool.submit(_job(m.name))
        first = pool.wait()
        second = pool.wait()
        gate.unlink()  # main's next generation: its line estimates from the last one
        seen = len(handler.lines)
        pool.submit(_job("main", generation=4))
        third = pool.wait()
    finally:
        pool.close()
        logger.removeHandler(handler)
        logger.setLevel(level)
    # before: no line came, the gate stayed shut and the members gave up after a minute
    assert (first.name, first.frames) == ("main", 7), first
    assert (second.name, second.frames) == ("exploiter", 7), second
    assert re.fullmatch(r"learner actors: training main \(generation 3, \d+s\); queued: "
                        r"exploiter \(generation 3\)", handler.lines[0]), handler.lines
    assert third.frames == 7, third
    assert re.fullmatch(r"learner actors: training main \(generation 4, \d+s(, about \d+s left|; "
                        r"its last took \d+s)\)", handler.lines[seen]), handler.lines

