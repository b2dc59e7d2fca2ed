"""``selfplay-eval --db x.db <one snapshot>`` without ``--game`` refuses a round robin of one
before torch loads, reading the game from the snapshot's ``.json`` sidecar (walk31 L6: 4.4 s,
the file was loaded for its game name; README says such refusals come before torch). A
sidecar that does not match the file is not read: the file is loaded, as before."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import games
from marl import registry
from populations.db import LeagueDB
from populations.store import PolicyStore

REPO = Path(__file__).resolve().parents[2]
KUHN = "openspiel/kuhn_poker"
ROUND_ROBIN = "a round robin needs two or more policy files"
EVAL = """
import sys
from populations.eval_cli import eval_main
try:
    eval_main(sys.argv[1:])
except SystemExit as stop:
    print("exit", stop.code, "torch" in sys.modules)
"""


def _snapshot(tmp_path: Path) -> Path:
    db = LeagueDB(tmp_path / "league.db")
    try:
        store = PolicyStore(tmp_path / "snapshots", db, db.create_run("league", game=KUHN))
        pol = registry.get("mappo").build(games.make(KUHN).spec).policy()
        return Path(store.publish("main", pol).path)
    finally:
        db.close()


def _eval(tmp_path: Path, *args: str) -> tuple[str, str]:
    res = subprocess.run([sys.executable, "-c", EVAL, *args, "--db", str(tmp_path / "x.db")],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    return res.stdout.strip(), res.stderr.strip()


def test_one_snapshot_is_refused_before_torch_loads(tmp_path):
    snap = _snapshot(tmp_path)
    out, err = _eval(tmp_path, str(snap))
    assert out == "exit 2 False", (out, err)
    assert err.startswith(f"selfplay-eval: {ROUND_ROBIN}, got ['{snap}']"), err
    assert not (tmp_path / "x.db").exists()


def test_a_sidecar_that_does_not_match_its_file_is_not_read(tmp_path):
    snap = _snapshot(tmp_path)
    side = snap.with_suffix(".json")
    side.write_text(json.dumps({**json.loads(side.read_text()), "sha256": "0" * 64}))
    out, err = _eval(tmp_path, str(snap))
    assert out == "exit 2 True", (out, err)  # loaded for its game name, then refused
    # the file is checked against the sidecar's hash as it loads (5f84190): that refusal
    # comes first, naming the file, and the sidecar's game name is not used
    assert err.startswith(f"selfplay-eval: snapshot file {snap} is damaged or was replaced: "
                          "its SHA-256 "), err
    assert err.count("\n") == 0, err
