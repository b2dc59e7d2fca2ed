"""``python -m populations.sweep_summary`` prints its table without importing torch (walk
34b, item 2): it imported it through ``populations.experiment``, about 4 s of CPU for a
table. Its figures are still those the torch way gives (``populations.run_figures`` reads a
checkpoint's plain values with a restricted unpickler), and a checkpoint it does not read
(here: its hash file gone) is read the torch way."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

from populations import experiment
from populations.db import LeagueDB
from tests.populations.test_walk18_cli_more import _train
from tests.populations.test_walk21_sweeps import FAST

SUMMARY = """
import json, sys
from populations.sweep_summary import main
main(sys.argv[1:])
print(json.dumps(sorted(m for m in ("torch", "populations.experiment") if m in sys.modules)))
"""


def _summary(sweep: Path) -> tuple[list[str], list[dict[str, str]]]:
    done = subprocess.run([sys.executable, "-c", SUMMARY, str(sweep)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    with open(sweep / "summary.csv", newline="") as f:
        return json.loads(done.stdout.splitlines()[-1]), list(csv.DictReader(f))


def _torch_way(folder: Path, member: str) -> dict[str, str]:
    db = LeagueDB(folder / "league.db", readonly=True)
    try:
        run_id = int(db.conn.execute("SELECT max(id) FROM runs").fetchone()[0])
        if member == "main":
            return {"mu/main": str(max((r for r in experiment.league_table(db, run_id)
                                        if r["member"] == "main"),
                                       key=lambda r: r["version"])["mu"])}
        row = experiment.finished_run_row(db, run_id, folder, member, "frames")
    finally:
        db.close()
    return {k: "" if v is None else str(v) for k, v in row.items()
            if k not in ("member", "version")}


def test_the_summary_module_reads_finished_runs_without_torch(tmp_path, monkeypatch):
    single, league = tmp_path / "single", tmp_path / "league"
    _train(["-m", "algo=mappo,ippo", *FAST, f"hydra.sweep.dir={single}"], monkeypatch,
           tmp_path)
    _train(["-m", "population=self_play", "population.generations=1",
            "population.frames_per_generation=32", *FAST, "seed=0",
            f"hydra.sweep.dir={league}"], monkeypatch, tmp_path)
    for sweep, member in ((single, None), (league, "main")):
        imported, rows = _summary(sweep)
        assert imported == [], imported  # before: ['populations.experiment', 'torch']
        assert rows and all(r["status"] == "finished" for r in rows), rows
        for r in rows:
            want = _torch_way(sweep / r["folder"], member or r["algo"])
            assert {k: r[k] for k in want} == want, (r, want)
    # a checkpoint without its hash file: read the torch way (it warns, loads it unverified)
    job = next(p for p in single.iterdir() if p.name.startswith("0_"))
    (hashed,) = (job / "checkpoints").glob("*.sha256")
    hashed.unlink()
    imported, rows = _summary(single)
    assert imported == ["populations.experiment", "torch"]
    want = _torch_way(job, "mappo")
    assert {k: rows[0][k] for k in want} == want and want["final_return"], (rows[0], want)
