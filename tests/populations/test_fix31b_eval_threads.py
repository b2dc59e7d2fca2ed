"""``selfplay-eval`` runs on one torch thread unless ``--torch-threads`` says otherwise (walk31
M2): it never set the count, so torch used one thread per core, and on a busy 2-core machine
``--exploit`` trained its responses in 55 s where ``selfplay-train`` (one thread) took 2 s."""

from __future__ import annotations

import pytest
import torch

import games
from marl import registry
from tests.populations.eval_cli_run import run_eval

KUHN = "openspiel/kuhn_poker"


@pytest.fixture
def threads():
    """Two torch threads before the command (the tests' conftest sets one), restored after."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def _files(tmp_path) -> list[str]:
    spec = games.make(KUHN).spec
    return [str(registry.get("mappo").build(spec).policy().save(tmp_path / f"{n}.pt"))
            for n in "ab"]


def test_eval_plays_on_one_torch_thread(tmp_path, capsys, threads):
    code, _, err = run_eval([*_files(tmp_path), "--db", str(tmp_path / "r.db"), "--episodes",
                             "1", "--game", KUHN], capsys)
    assert code == 0, err
    assert torch.get_num_threads() == 1


def test_torch_threads_sets_the_count(tmp_path, capsys, threads):
    torch.set_num_threads(1)
    code, _, err = run_eval([*_files(tmp_path), "--db", str(tmp_path / "r.db"), "--episodes",
                             "1", "--game", KUHN, "--torch-threads", "2"], capsys)
    assert code == 0, err
    assert torch.get_num_threads() == 2


@pytest.mark.parametrize("value", ["0", "100000"])
def test_a_bad_thread_count_is_one_line_before_the_database(tmp_path, capsys, value):
    db = tmp_path / "r.db"
    code, _, err = run_eval([*_files(tmp_path), "--db", str(db), "--game", KUHN,
                             "--torch-threads", value], capsys)
    assert code == 2 and err == (f"selfplay-eval: --torch-threads {value}: expected an integer "
                                 "from 1 to 1024 (intra-op threads: more than the cores only "
                                 "slow the run)\n"), err
    assert not db.exists()
