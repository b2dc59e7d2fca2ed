"""``selfplay-eval`` of a crafted snapshot: a real MAPPO policy of a small game whose
``meta.game`` records another name (untrusted text read from the file), for the tests of
the game names the command must refuse before building anything."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from games import GameSpec
from tests.populations.eval_cli_run import run_eval


def eval_refusal(tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: GameSpec,
                 name: str) -> list[str]:
    """The stderr lines of ``selfplay-eval --db <tmp_path>/evil.db <snapshot> --episodes 2``
    on ``evil.pt``, a MAPPO policy of ``spec`` recording the game ``name``; asserts the
    command exits 2 and leaves no database. Run it in ``tmp_path`` (``monkeypatch.chdir``):
    the command writes nothing elsewhere."""
    from marl import registry

    pol = registry.get("mappo").build(spec).policy()
    pol.meta = dataclasses.replace(pol.meta, game=name)
    path = str(pol.save(tmp_path / "evil.pt"))
    code, out, err = run_eval(["--db", str(tmp_path / "evil.db"), path, "--episodes", "2"],
                              capsys)
    assert code == 2, (out, err)
    assert not (tmp_path / "evil.db").exists()
    return err.strip().splitlines()


def refused(name: str, why: str) -> list[str]:
    """:func:`eval_refusal`'s lines for a snapshot recording ``name``, refused for ``why``."""
    return [f"selfplay-eval: evil records the game {name}: {why}; give the game with --game "
            "(--import the module of a game of your own)"]
