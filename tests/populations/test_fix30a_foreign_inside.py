"""Another program's files inside the folders a failed ``selfplay-train`` made
(``.hydra/``, ``checkpoints/``, ``snapshots/``).

A failed or refused command removed the folders of its own it had made whole (``rmtree``),
with the files another program had put inside them meanwhile; a file in ``checkpoints/``
(any file) made the run look worth keeping, so nothing at all was removed and the line did
not say why the half-made folder stayed. Now only what selfplay writes there goes
(``run_folder_names.OWN_INSIDE``: Hydra's three files, ``ckpt_<step>.pt`` and its sidecars,
``<member>/v<version>.pt|json``); the rest stays, with the folders holding it, and the
command's line names it.

The other program is a user's game (``imports=[...]``), as in ``test_fix29b_foreign_files``:
once the run holds its folder, its reset writes ``notes.txt`` into those folders and its
next step raises, so the run fails before any checkpoint. Real ``selfplay-train`` commands.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests import subprocs

REPO = Path(__file__).resolve().parents[2]
NOTE = "another program's\n"
SUBS = (".hydra", "checkpoints", "snapshots")

GAME = f'''
import os
import sys
from pathlib import Path

sys.path.insert(0, {str(REPO / "examples")!r})
import games
from nim import Nim


@games.register("fix30a_nim")
class WriterNim(Nim):
    """Nim whose reset, once the run holds TOOL_DIR, writes in the run's own folders as
    another program would; its next step then fails."""

    def _reset(self, seed):
        where = Path(os.environ["TOOL_DIR"])
        if (where / ".lock").exists() and not (where / "snapshots" / "notes.txt").exists():
            for sub in {SUBS!r}:
                (where / sub).mkdir(exist_ok=True)
                (where / sub / "notes.txt").write_text({NOTE!r})
        super()._reset(seed)

    def _step(self, actions):
        if (Path(os.environ["TOOL_DIR"]) / "snapshots" / "notes.txt").exists():
            raise RuntimeError("boom: the game failed")
        return super()._step(actions)
'''


def _failed(tmp_path: Path, run: Path) -> str:
    (tmp_path / "fix30agame.py").write_text(GAME)
    env = {**os.environ, "TOOL_DIR": str(run), "PYTHONPATH": os.pathsep.join(
        [str(tmp_path), str(REPO), os.environ.get("PYTHONPATH", "")])}
    env.pop("HYDRA_FULL_ERROR", None)
    res = subprocs.run([sys.executable, "-m", "populations.cli", "imports=[fix30agame]",
                          "game.name=fix30a_nim", "algo=ippo", "frames=2000", "num_envs=2",
                          "eval_episodes=2", "progress=false", "logger=csv",
                          f"hydra.run.dir={run}"],
                        cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    assert res.returncode == 2, res.stderr
    said = [line for line in res.stderr.splitlines() if line.startswith("selfplay-train:")]
    assert len(said) == 1 and "boom: the game failed" in said[0], res.stderr
    return said[0]


def _tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _theirs_only(run: Path) -> None:
    assert _tree(run) == sorted([*SUBS, *(f"{sub}/notes.txt" for sub in SUBS)])
    assert all((run / sub / "notes.txt").read_text() == NOTE for sub in SUBS)


NAMED = "it holds files this command did not write ('.hydra/notes.txt', " \
        "'checkpoints/notes.txt', 'snapshots/notes.txt'), its own went"


def test_a_new_folders_own_folders_keep_another_programs_files(tmp_path):
    run = tmp_path / "runs" / "new"
    line = _failed(tmp_path, run)
    _theirs_only(run)  # .hydra's config.yaml..., settings.json, league.db, .lock went
    assert line.endswith(f"; {run} stays: {NAMED}")


def test_an_existing_folders_new_folders_keep_another_programs_files(tmp_path):
    run = tmp_path / "work"
    run.mkdir()
    line = _failed(tmp_path, run)
    _theirs_only(run)
    assert line.endswith(f"; {run} stays: {NAMED}")


def test_remove_own_keeps_what_selfplay_does_not_write(tmp_path):
    """Member folders of ``snapshots`` go once empty; a link, a file where a member folder
    goes, or a file of another name in a member folder stays, and is named."""
    from populations.run_folder_names import remove_own

    snaps = tmp_path / "snapshots"
    for name in ("mappo/v0000.pt", "mappo/v0000.json", "mappo/v0001.pt.tmp", "ippo/v0000.pt",
                 "ippo/notes.txt", "README", "other/data/x.bin"):
        (snaps / name).parent.mkdir(parents=True, exist_ok=True)
        (snaps / name).write_text("x")
    (tmp_path / "elsewhere").mkdir()
    (snaps / "linked").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    assert remove_own(snaps) == ["snapshots/README", "snapshots/ippo/notes.txt",
                                 "snapshots/linked", "snapshots/other/data"]
    assert _tree(snaps) == ["README", "ippo", "ippo/notes.txt", "linked", "other",
                            "other/data", "other/data/x.bin"]
    ckpt = tmp_path / "checkpoints"
    ckpt.mkdir()
    for name in ("ckpt_000016.pt", "ckpt_000016.pt.sha256", "ckpt_000016.pt.threads"):
        (ckpt / name).write_text("x")
    assert remove_own(ckpt) == [] and not ckpt.exists()  # all ours: the folder went too


def test_a_refused_command_keeps_another_programs_file_in_hydra(tmp_path):
    """A refused command puts an existing run's ``.hydra`` back as it was: it removed every
    new file there, another program's too; a ``.hydra`` it made went whole."""
    from populations import run_guard

    existing, made = tmp_path / "existing", tmp_path / "made"
    (existing / ".hydra").mkdir(parents=True)
    (existing / ".hydra" / "config.yaml").write_text("the run's\n")
    made.mkdir()
    for folder in (existing, made):
        run_guard.keep_written(folder)  # as the command starts
        (folder / ".hydra").mkdir(exist_ok=True)
        for name in ("config.yaml", "hydra.yaml", "overrides.yaml"):  # Hydra writes
            (folder / ".hydra" / name).write_text("the refused command's\n")
        (folder / ".hydra" / "notes.txt").write_text(NOTE)  # another program
        run_guard._restore_written(folder)
    assert _tree(existing) == [".hydra", ".hydra/config.yaml", ".hydra/notes.txt"]
    assert (existing / ".hydra" / "config.yaml").read_text() == "the run's\n"
    assert _tree(made) == [".hydra", ".hydra/notes.txt"]
