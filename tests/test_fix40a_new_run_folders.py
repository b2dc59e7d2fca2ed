"""Runs (sweeps) started with ``selfplay-train``'s default folder in the same second each get a
folder of their own (walk40a H1): ``runs/${experiment}/${now:%Y-%m-%d_%H-%M-%S}`` named one
folder for all of them, and all but the first were refused ``run folder runs/default/<stamp>
is in use by process N``, a folder the user never chose. The resolver ``new_folder``
(``populations.sweeps``, ``populations.run_folder.new_folder``) claims the name for its
process and adds ``_1``, ``_2``... where a folder or another process has it. A folder the user
gives (``hydra.run.dir=D``) is used as given, and refused as before while in use.

The runs are real processes; "the same second" is made certain, not waited for: another
process holds every stamp folder of the minutes around the test (as a run started in that
second would), and the test checks that the run's own second was among them."""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from tests import subprocs

ROOT = Path(__file__).resolve().parents[1]
ENV = {**{k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"},
       "PYTHONPATH": str(ROOT)}
ARGS = ["game.name=openspiel/matrix_rps", "frames=64", "num_envs=2", "eval_episodes=2",
        "progress=false", "seed=0"]
STAMP = "%Y-%m-%d_%H-%M-%S"  # configs/config.yaml's

HOLDER = """
import sys
from datetime import datetime, timedelta
from pathlib import Path

from populations.run_folder import RunLock

base, what, first, seconds = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
start = datetime.fromtimestamp(first)
for s in range(seconds):  # each stamp folder held as a run (sweep) started in that second holds it
    RunLock(base / (start + timedelta(seconds=s)).strftime(sys.argv[5]), what).acquire()
print("held", flush=True)
sys.stdin.read()  # until the test closes it
"""

SECONDS = 900
"""How many seconds' stamp folders the holder takes, from a few seconds before the test: the
run's start falls among them (checked: the test fails, not passes, if it did not)."""


@contextmanager
def holding(base: Path, what: str = "run folder", seconds: int = SECONDS):
    """Another process holds ``base/<stamp>`` for each second from just before now on, as a
    run (``what``: a sweep) started in that second does: its PID and the stamps."""
    first = datetime.now().timestamp() - 5
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(base), what, str(first),
                               str(seconds), STAMP], env=ENV, cwd=ROOT, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        yield holder.pid, {p.name for p in base.iterdir()}
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
        holder.stdout.close()


def train(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocs.run([sys.executable, "-m", "populations.cli", *args], cwd=cwd, env=ENV,
                        capture_output=True, text=True, timeout=600)


def test_a_run_started_in_the_second_of_a_running_one_gets_its_own_folder(tmp_path):
    base = tmp_path / "runs" / "default"
    with holding(base) as (pid, stamps):
        done = train(tmp_path, *ARGS)
        # before: rc 2, "run folder runs/default/<stamp> is in use by process <pid>"
        assert done.returncode == 0, done.stderr[-3000:]
        new = sorted(p for p in base.iterdir() if p.name not in stamps)
        assert [p.name for p in new] == [new[0].name] and new[0].name.endswith("_1"), new
        assert new[0].name.removesuffix("_1") in stamps  # its own second was held
        assert (new[0] / "settings.json").is_file() and (new[0] / ".hydra").is_dir()
        # the resume command names the folder the run went to
        assert f"resume=true hydra.run.dir={new[0]}\n" in done.stdout.replace(")", "\n")
        # the held folders are as the holder made them: its lock alone
        assert all(sorted(os.listdir(base / s)) == [".lock"] for s in stamps)


def test_a_sweep_started_in_the_second_of_a_running_one_gets_its_own_folder(tmp_path):
    base = tmp_path / "multirun" / "default"
    with holding(base, "sweep folder") as (pid, stamps):
        done = train(tmp_path, "-m", *ARGS)
        assert done.returncode == 0, done.stderr[-3000:]
        new = sorted(p for p in base.iterdir() if p.name not in stamps)
        assert len(new) == 1 and new[0].name.removesuffix("_1") in stamps, new
        jobs = [p for p in new[0].iterdir() if p.is_dir() and p.name != ".hydra"]
        assert len(jobs) == 1 and (jobs[0] / "settings.json").is_file(), jobs
        assert (new[0] / "multirun.yaml").is_file()
        assert all(sorted(os.listdir(base / s)) == [".lock"] for s in stamps)


def test_a_folder_the_user_gives_is_refused_as_before_while_in_use(tmp_path):
    base = tmp_path / "mine"
    with holding(base, seconds=1) as (pid, stamps):
        (given,) = stamps
        done = train(tmp_path, *ARGS, f"hydra.run.dir={base / given}")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith(
        f"selfplay-train: run folder {base / given} is in use by process {pid} "), done.stderr
    assert sorted(os.listdir(base)) == [given]


def test_runs_started_together_each_get_a_folder(tmp_path):
    # the walker's repro: three runs started at once with the default folder
    runs = [subprocess.Popen([sys.executable, "-m", "populations.cli", *ARGS[:-1], f"seed={s}"],
                             cwd=tmp_path, env=ENV, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for s in range(3)]
    outs = [run.communicate(timeout=600) for run in runs]
    assert [run.returncode for run in runs] == [0, 0, 0], [err[-2000:] for _, err in outs]
    folders = sorted((tmp_path / "runs" / "default").iterdir())
    assert len(folders) == 3
    seeds = sorted(next(line for line in (f / ".hydra" / "overrides.yaml").read_text().splitlines()
                        if "seed=" in line) for f in folders)
    assert seeds == ["- seed=0", "- seed=1", "- seed=2"]


CLAIMER = """
import sys

from omegaconf import OmegaConf

import populations.sweeps  # registers new_folder

print(OmegaConf.create({"d": "${new_folder:" + sys.argv[1] + "}"}).d, flush=True)
sys.stdin.read()
"""


def test_a_name_another_process_claimed_is_not_given_again(tmp_path, request):
    from omegaconf import OmegaConf

    import populations.sweeps  # noqa: F401 - registers new_folder
    from populations.run_folder import release_claim

    base = str(tmp_path / "runs" / "x" / "stamp")
    for name in ("stamp", "stamp_1", "stamp_2"):  # this process's claims go with the test
        request.addfinalizer(lambda name=name: release_claim(Path(base).parent / name))

    def resolved() -> str:
        return OmegaConf.create({"d": "${new_folder:" + base + "}"}).d

    other = subprocess.Popen([sys.executable, "-c", CLAIMER, base], env=ENV, cwd=ROOT,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout.readline() == f"{base}\n"  # claimed: no folder made
        config = OmegaConf.create({"d": "${new_folder:" + base + "}"})
        assert config.d == f"{base}_1" and config.d == f"{base}_1"  # once per config
        assert resolved() == f"{base}_1"  # this process's own claim
    finally:
        other.stdin.close()
        other.wait(timeout=60)
        other.stdout.close()
    assert not (tmp_path / "runs").exists()  # claims make no file
    assert resolved() == base  # the other process ended: its claim with it
    Path(base).mkdir(parents=True)
    (Path(base).parent / "stamp_1").mkdir()
    assert resolved() == f"{base}_2"  # folders there (runs that ended) are skipped


def test_a_folder_made_between_the_look_and_the_claim_is_passed_over(tmp_path, monkeypatch):
    # review40b: another run made and locked <stamp> (dropping its claim) right after this
    # one saw no folder there; the claim then succeeded on a folder in use, and the run was
    # refused 'in use by process N' as before the resolver existed
    from populations import run_folder

    base = str(tmp_path / "runs" / "default" / "stamp")
    real = os.path.lexists
    looks = []

    def lexists(path):
        looks.append(path)
        if path == base and len(looks) == 1:  # the first look: not there yet
            Path(base).mkdir(parents=True)  # ... and another run makes it now
            return False
        return real(path)

    monkeypatch.setattr(run_folder.os.path, "lexists", lexists)
    got = run_folder.new_folder(base)
    try:
        assert got == base + "_1"
        assert os.path.realpath(base) not in run_folder._CLAIMS  # the passed-over claim dropped
    finally:
        run_folder.release_claim(got)
