"""Progress bars in a log (walk 27a, item 6): tqdm redrew its bar with ``\\r`` every 0.1 s into
a redirected stderr (``nohup``, ``> run.out``), one ever-growing line, ~30 MB a day. On a
stream that is not a terminal :class:`marl.progress.tqdm` writes a plain line at most every
30 s and one at the end; the clock is faked (no sleeps)."""

from __future__ import annotations

import io

import pytest

from marl.progress import LINE_INTERVAL_S, tqdm


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(tqdm, "clock", staticmethod(fake))
    return fake


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("leave", [True, False])
def test_a_log_gets_a_line_every_30_s_and_one_at_the_end(clock, leave):
    log = io.StringIO()  # not a terminal: a file, a pipe
    bar = tqdm(total=1000, desc="generation 1/2 m0", unit="frame", file=log, leave=leave,
               dynamic_ncols=True, smoothing=0)
    for _ in range(95):  # 10 frames a second for 95 s, an update each second
        clock.now += 1
        bar.update(10)
    clock.now += 0.5
    bar.close()
    text = log.getvalue()
    assert "\r" not in text and text.endswith("\n")
    assert text.splitlines() == [
        "generation 1/2 m0:   0% 0/1000 [00:00<?, ?frame/s]",
        "generation 1/2 m0:  30% 300/1000 [00:30<01:10, 10.00frame/s]",
        "generation 1/2 m0:  60% 600/1000 [01:00<00:40, 10.00frame/s]",
        "generation 1/2 m0:  90% 900/1000 [01:30<00:10, 10.00frame/s]",
        "generation 1/2 m0:  95% 950/1000 [01:35<00:05,  9.95frame/s]"]


def test_lines_never_come_closer_than_the_interval(clock):
    """Updates at uneven times, postfixes and writes between them: each line comes at least
    LINE_INTERVAL_S after the one before, except the closing one."""
    log = io.StringIO()
    bar = tqdm(total=None, desc="evaluation", unit="episode", file=log, smoothing=0)
    times = [clock.now]
    written = 1
    for step in range(400):
        clock.now += 0.25 if step % 7 else 3.0
        bar.update(1)
        bar.set_postfix_str(f"return {step}")
        if step % 50 == 0:
            tqdm.write("a log line", file=log)
        lines = log.getvalue().count("\n") - (step // 50 + 1)
        if lines > written:
            times.append(clock.now)
            written = lines
    bar.close()
    assert all(b - a >= LINE_INTERVAL_S for a, b in zip(times, times[1:], strict=False))
    out = [line for line in log.getvalue().splitlines() if line != "a log line"]
    assert len(out) == len(times) + 1 and "\r" not in log.getvalue()
    assert out[-1].startswith("evaluation: 400episode [") and "return 399" in out[-1]


def test_a_bar_without_a_description(clock):
    log = io.StringIO()
    bar = tqdm(total=60000, unit="frame", file=log, smoothing=0)
    clock.now += 30
    bar.update(5800)
    bar.close()
    assert log.getvalue().splitlines() == ["0% 0/60000 [00:00<?, ?frame/s]",
                                           "10% 5800/60000 [00:30<04:40, 193.33frame/s]"]


def test_a_terminal_keeps_tqdms_bar(clock):
    screen = Terminal()
    bar = tqdm(total=10, desc="x", file=screen, mininterval=0)
    for _ in range(10):
        clock.now += 1
        bar.update(1)
    bar.close()
    assert "\r" in screen.getvalue() and "|" in screen.getvalue()  # redrawn in place, a bar


def test_a_disabled_bar_writes_nothing(clock):
    log = io.StringIO()
    bar = tqdm(total=10, file=log, disable=True)
    bar.update(5)
    bar.close()
    assert log.getvalue() == ""


def test_the_default_stream_is_stderr_and_the_clock_tqdms(monkeypatch, capsys):
    """Unfaked, the lines' clock is tqdm's own (a test faking ``tqdm.std.time`` fakes both)."""
    from tqdm import std as tqdm_std

    fake = FakeClock()
    monkeypatch.setattr(tqdm_std, "time", fake)
    bar = tqdm(total=2, desc="d")
    fake.now += 1
    bar.update(2)
    bar.close()
    assert capsys.readouterr().err.splitlines() == ["d:   0% 0/2 [00:00<?, ?it/s]",
                                                    "d: 100% 2/2 [00:01<00:00,  2.00it/s]"]


def test_a_notebook_without_widgets_keeps_the_redrawn_bar(clock, monkeypatch):
    """Under Jupyter without ipywidgets tqdm.auto gives the plain bar, whose ``\\r`` redraws
    the notebook draws in place; its stderr is no terminal, and the bar had become a line
    every 30 s (review 27)."""
    import sys
    import types

    monkeypatch.setitem(sys.modules, "ipykernel", types.ModuleType("ipykernel"))
    out = io.StringIO()
    bar = tqdm(total=10, file=out, mininterval=0)
    for _ in range(3):
        clock.now += 1
        bar.update(1)
    bar.close()
    assert out.getvalue().count("\r") >= 3
