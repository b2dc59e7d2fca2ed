"""``selfplay-eval`` in this process, for tests: its exit code and what it printed."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

BAR = "selfplay-eval round robin:"
"""How the round robin's plain progress lines start (stderr is no terminal under capsys)."""


def run_eval(args: Sequence[str], capsys: pytest.CaptureFixture[str],
             bars: bool = False) -> tuple[int, str, str]:
    """``eval_main(args)``: ``(exit code, stdout, stderr)``; 0 when it returns. The round
    robin's plain progress lines (:data:`BAR`, stderr being no terminal) are left out of
    stderr unless ``bars``: the tests of its other lines pin them whole."""
    from populations.eval_cli import eval_main

    try:
        eval_main(list(args))
        code = 0
    except SystemExit as stop:
        code = stop.code
    out = capsys.readouterr()
    # a terminal's bar (monkeypatched isatty) redraws with '\r' on one line: kept
    err = out.err if bars else "\n".join(
        line for line in out.err.split("\n") if not line.startswith(BAR))
    return code, out.out, err
