"""``selfplay-eval`` refusals that need only the command line (one policy file, ``--episodes
0``, a missing file) came after torch and the policy files loaded (~2.3 s CPU each); they
now come before, with the same words and exit code."""

import subprocess
import sys

CHECK = """
import sys
from populations.eval_cli import eval_main
for args in (["p.pt"], ["--episodes", "0", "p.pt", "p.pt"], ["p.pt", "nope.pt"]):
    try:
        eval_main(["--game", "openspiel/kuhn_poker", "--db", "r.db", *args])
    except SystemExit as stop:
        print(stop.code)
print("torch" in sys.modules)
"""


def test_argument_refusals_come_before_torch(tmp_path):
    (tmp_path / "p.pt").write_bytes(b"")  # exists; never read
    run = subprocess.run([sys.executable, "-c", CHECK], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert run.stdout.split() == ["2", "2", "2", "False"], run.stdout + run.stderr
    assert run.stderr.splitlines() == [
        "selfplay-eval: a round robin needs two or more policy files, got ['p.pt']; or add "
        "--exploit for one policy's approximate NashConv",
        "selfplay-eval: --episodes 0: expected "
        "an integer from 1 to 1000000 (10**6: each match is a row of the database)",
        "selfplay-eval: policy file not found: nope.pt"], run.stderr
    assert not (tmp_path / "r.db").exists()
