"""``selfplay-eval`` in this process, for tests: its exit code and what it printed."""

from __future__ import annotations

from collections.abc import Sequence

import pytest


def run_eval(args: Sequence[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``eval_main(args)``: ``(exit code, stdout, stderr)``; 0 when it returns."""
    from populations.eval_cli import eval_main

    try:
        eval_main(list(args))
        code = 0
    except SystemExit as stop:
        code = stop.code
    out = capsys.readouterr()
    return code, out.out, out.err
