"""The wandb logger gives a step's rows to wandb committed once the next step comes (a live
dashboard shows the step then): given uncommitted, wandb held the step until a higher one was
logged, which came only at the logger's next step, so a live run showed each step two steps
late. Read with the offline run files' own records (wandb's protobuf), in offline mode.

``logger.tags`` is checked as a list of strings before wandb starts (``[[a]]`` reached
wandb's pydantic error; a plain string became one-letter tags)."""

import json
import time

import pytest

from populations.loggers import LoggerConfig, WandbLogger, offline_records


def _history(wandb_dir) -> dict[int, dict]:
    """Step -> the items of the history records the offline run files hold so far."""
    out: dict[int, dict] = {}
    for path in sorted(wandb_dir.glob("offline-run-*/run-*.wandb")):
        for rec in offline_records(path):
            if rec.WhichOneof("record_type") == "history":
                items = {i.key or "/".join(i.nested_key): json.loads(i.value_json)
                         for i in rec.history.item}
                out[rec.history.step.num] = {k: v for k, v in items.items()
                                             if not k.startswith("_")}
    return out


@pytest.fixture
def offline(monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.delenv("WANDB_API_KEY", raising=False)


def _settled(wandb_dir, steps: int) -> dict[int, dict]:
    """:func:`_history` once it holds ``steps`` steps (wandb's service writes the file on its
    own time, also after ``finish``), or after 30 s."""
    deadline, seen = time.monotonic() + 30, {}
    while len(seen) < steps and time.monotonic() < deadline:
        seen = _history(wandb_dir)
        time.sleep(0.2)
    return seen


def test_a_step_reaches_wandb_committed_when_the_next_step_comes(tmp_path, offline):
    logger = WandbLogger(tmp_path, LoggerConfig(kind="wandb"), {"seed": 0})
    try:
        logger.log(16, {"a": 1.0})
        logger.log(32, {"a": 2.0})
        logger.log(32, {"b": 3.0}, prefix="x/")  # two calls at one step: one row
        logger.log(48, {"a": 4.0})  # step 32 is complete: wandb must have committed it
        # wandb's step counter: past 32 once 32 is committed (32 while it holds the step)
        assert logger.run.step == 33
    finally:
        logger.close()
    # each row on the step it was logged at, as metrics.csv has it
    assert _settled(tmp_path / "wandb", 3) == {16: {"a": 1}, 32: {"a": 2, "x/b": 3},
                                                48: {"a": 4}}


@pytest.mark.parametrize(("tags", "named"), [
    ([["a"]], "logger.tags holds ['a']"),
    ("abc", "logger.tags='abc' is not a list"),
    ([1], "logger.tags holds 1"),
    (["x" * 65], "logger.tags holds 'xxxx"),
    ([""], "logger.tags holds ''"),
])
def test_tags_that_are_not_a_list_of_strings_are_refused_in_our_words(tags, named):
    with pytest.raises(ValueError) as err:
        LoggerConfig(kind="wandb", tags=tags)
    msg = str(err.value)
    assert named in msg and "\n" not in msg
    assert "accepted: a list of strings of 1 to 64 characters" in msg


def test_a_logger_of_its_own_takes_tags_of_any_length_but_strings_only():
    assert LoggerConfig(kind="csv", tags=("x" * 100, "")).tags == ("x" * 100, "")
    with pytest.raises(ValueError, match=r"logger.tags holds \['a'\]; accepted: a list of "
                                         r"strings, e.g."):
        LoggerConfig(kind="csv", tags=[["a"]])


def test_the_command_line_refuses_nested_tags_before_wandb_starts(tmp_path, offline):
    from tests.populations.test_single_resume import _exp

    with pytest.raises(ValueError, match=r"logger.tags holds \['a'\]"):
        _exp("game=kuhn", "logger=wandb", "logger.tags=[[a]]")
