"""``selfplay-eval <run folder>`` said "policy <run> is a folder; give a .pt file (it holds
none)" (walk28a): read as a run without policies, while its snapshots were under
``snapshots/<member>/vN.pt``. A folder that holds no ``.pt`` itself but snapshots below is
refused in one line naming each member's newest snapshot (by version number), before torch
loads, with or without ``--exploit``."""

from __future__ import annotations

import pytest

import games
from marl import registry
from tests.populations.eval_cli_run import run_eval

KUHN = "openspiel/kuhn_poker"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A run folder as selfplay-train leaves it: two members' snapshots (v0002 < v0010)."""
    root = tmp_path_factory.mktemp("fix28e") / "runs" / "mixed1"
    policy = registry.get("mappo").build(games.make(KUHN).spec).policy()
    for member, versions in (("llm", (0, 2, 10)), ("mappo_0", (0, 1))):
        for v in versions:
            policy.save(root / "snapshots" / member / f"v{v:04d}.pt")
    (root / "league.db").write_bytes(b"")
    return root


def _line(args, capsys) -> str:
    code, out, err = run_eval(args, capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("extra", [[], ["--exploit"]])
def test_a_run_folder_names_its_members_newest_snapshots(run, tmp_path, capsys, extra):
    line = _line([str(run), "--game", KUHN, "--db", str(tmp_path / "e.db"), *extra], capsys)
    assert line == (f"selfplay-eval: policy {run} is a folder; give snapshot files (.pt), such "
                    f"as its members' newest: {run}/snapshots/llm/v0010.pt "
                    f"{run}/snapshots/mappo_0/v0001.pt")
    assert not (tmp_path / "e.db").exists()


def test_its_snapshots_folder_and_a_folder_of_files_as_before(run, tmp_path, capsys):
    snaps = run / "snapshots"
    line = _line([str(snaps), str(run / "snapshots" / "llm" / "v0000.pt"), "--game", KUHN,
                  "--db", str(tmp_path / "e.db")], capsys)
    assert line.endswith(f"its members' newest: {snaps}/llm/v0010.pt {snaps}/mappo_0/v0001.pt")
    member = snaps / "llm"  # holds .pt files itself: load_policy lists them, as before
    line = _line([str(member), str(member / "v0000.pt"), "--game", KUHN,
                  "--db", str(tmp_path / "e.db")], capsys)
    assert line == (f"selfplay-eval: policy {member} is a folder; give one of its files: "
                    "v0000.pt v0002.pt v0010.pt")
    empty = tmp_path / "empty"
    empty.mkdir()
    line = _line([str(empty), str(member / "v0000.pt"), "--game", KUHN,
                  "--db", str(tmp_path / "e.db")], capsys)
    assert line == f"selfplay-eval: policy {empty} is a folder; give a .pt file (it holds none)"
