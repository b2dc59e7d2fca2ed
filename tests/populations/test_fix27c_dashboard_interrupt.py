"""Ctrl-C stops ``selfplay-dashboard`` in one line with status 130 (walk 27a, item 4): uvicorn
shut down on the signal, then raised it again, and the command printed two tracebacks
(CancelledError, then KeyboardInterrupt from ``server.run``)."""

from __future__ import annotations

import signal
import subprocess
import sys


def _sigint_as_at_a_terminal() -> None:
    # a background job of a script starts with SIGINT ignored; a terminal's command does not
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_stops_the_dashboard_in_one_line(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "populations.dashboard.cli", str(tmp_path), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        preexec_fn=_sigint_as_at_a_terminal)
    seen = []
    try:
        for line in proc.stdout:
            seen.append(line)
            if "league dashboard on" in line:
                break
        else:
            raise AssertionError(f"the dashboard did not start: {''.join(seen)}")
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "Traceback" not in rest, rest
    assert rest.strip().splitlines() == ["selfplay-dashboard: stopped (Ctrl-C)"], rest
    assert proc.returncode == 130
