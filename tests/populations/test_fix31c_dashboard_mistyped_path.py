"""``selfplay-dashboard runz/main/x`` (meant: ``runs/main/x``) printed 'league database not
found ... (has the run started? ...)' and served forever, its page waiting for a run that
never comes. A run folder not made yet is still served (the dashboard may start before its
run) where the folder it would be made in exists; where that folder does not exist either,
the command refuses in one line, status 2, before it listens on a port."""

from __future__ import annotations

import subprocess
import sys

CLI = [sys.executable, "-m", "populations.dashboard.cli"]
ACCEPTED = ("(a mistyped path?); expected a run folder (a new one's parent folder must "
            "exist), a league.db file, or a folder of runs")


def test_a_path_whose_parent_folder_is_missing_is_refused(tmp_path):
    (tmp_path / "runs").mkdir()
    # a run folder not made yet, in a folder that exists: served, as before
    waiting = subprocess.Popen([*CLI, "runs/x", "--port", "0"], cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        for path in ("runz/main/x", "runz/main/x/league.db"):
            done = subprocess.run([*CLI, path, "--port", "0"], cwd=tmp_path, timeout=60,
                                  capture_output=True, text=True)
            assert done.returncode == 2, (done.stdout, done.stderr)
            assert done.stdout == ""
            assert done.stderr.splitlines() == [
                f"selfplay-dashboard: {path} does not exist, nor does the folder runz/main "
                f"{ACCEPTED}"], done.stderr
        seen = []
        for line in waiting.stdout:
            seen.append(line)
            if "league dashboard on" in line:
                break
        else:
            raise AssertionError(f"the dashboard did not start: {''.join(seen)}")
        assert seen[0].startswith("league database not found: runs/x/league.db"), seen
    finally:
        waiting.kill()
        waiting.wait()
