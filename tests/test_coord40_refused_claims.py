"""A command refused before its run folder is locked drops its claim on the folder's name
(review40b L1): ``selfplay-train game.name=openspiel/nope`` run in a process that lives on (a
notebook, a test session) kept a bound socket per refused command, and other processes passed
over those names."""

import json
import subprocess
import sys

CHILD = """
import json, sys
from populations import run_folder
from populations.cli import train_main
for argv in (["game.name=openspiel/nope"], ["frames=800", "resume=true"]):
    sys.argv = ["selfplay-train", *argv]
    try:
        train_main()
    except SystemExit as stop:
        code = stop.code
    print(json.dumps({"code": code, "claims": sorted(run_folder._CLAIMS)}), flush=True)
"""


def test_a_refused_command_leaves_no_claim(tmp_path):
    out = subprocess.run([sys.executable, "-c", CHILD], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    lines = [json.loads(x) for x in out.stdout.splitlines() if x.startswith("{")]
    assert [x["code"] for x in lines] == [2, 2], out.stderr[-2000:]
    assert [x["claims"] for x in lines] == [[], []]
    assert not (tmp_path / "runs").exists()


SWEEP_CHILD = """
import json, pathlib, sys
from populations import run_folder
from populations.cli import train_main
for n, argv in enumerate((["game.name=openspiel/nope"], ["frames=800", "resume=true"],
                          ["experiment=kuhn_psro,main", "resume=true"], ["frames=800"])):
    if n == 3:  # a file where the sweep's folders go: its folder cannot be made
        pathlib.Path("multirun").write_text("")
    sys.argv = ["selfplay-train", "-m", *argv]
    try:
        train_main()
    except SystemExit as stop:
        code = stop.code
    print(json.dumps({"code": code, "claims": sorted(run_folder._CLAIMS)}), flush=True)
"""


def test_a_refused_sweep_leaves_no_claim(tmp_path):
    """A sweep refused after its default folder (``multirun/<experiment>/<stamp>``) was
    claimed drops the claim too: ``-m resume=true`` without ``hydra.sweep.dir``, a folder that
    cannot be made (the jobs' check, before the folder is named, claims none)."""
    out = subprocess.run([sys.executable, "-c", SWEEP_CHILD], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    lines = [json.loads(x) for x in out.stdout.splitlines() if x.startswith("{")]
    assert [x["code"] for x in lines] == [2, 2, 2, 2], out.stderr[-2000:]
    assert [x["claims"] for x in lines] == [[], [], [], []]
    assert (tmp_path / "multirun").is_file()
