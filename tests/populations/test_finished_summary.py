"""A finished single run resumed ("nothing to do") shows the table it recorded: its seconds
and final_return were left out (tests/populations/test_single_resume.py checks the row
equals the first run's); a damaged last checkpoint leaves only those figures out."""

import logging

from populations.experiment import run_experiment
from tests.populations.test_db_store import garble
from tests.populations.test_single_resume import TINY, _exp


def test_a_damaged_last_checkpoint_leaves_out_only_the_figures(tmp_path, caplog):
    first = run_experiment(_exp(*TINY), tmp_path).table
    newest = sorted((tmp_path / "checkpoints").glob("ckpt_*.pt"))[-1]
    garble(newest)
    with caplog.at_level(logging.INFO, logger="populations.experiment"):
        table = run_experiment(_exp(*TINY, "resume=true"), tmp_path).table
    # not an older checkpoint's figures (48 frames' seconds and returns), nor a traceback
    # (the evaluation's return is read from league.db's matches, not the checkpoint)
    assert table == [{"member": "mappo", "version": 0, "frames": 64,
                      "eval_return": first[0]["eval_return"],
                      "eval_ci95": first[0]["eval_ci95"]}]
    assert any(f"checkpoint {newest} is damaged" in m and "shows none of its training figures"
               in m
               for m in caplog.messages), caplog.messages
