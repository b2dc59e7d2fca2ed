"""A resumed run folder continues its wandb run: the id is kept in ``<run>/wandb/run_id`` and
passed with ``resume="allow"`` (each resume started a second wandb run). Disabled mode: no
network, no files of wandb's own."""

import pytest

from populations.loggers import LoggerConfig, WandbLogger


@pytest.fixture
def disabled(monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "disabled")
    monkeypatch.delenv("WANDB_API_KEY", raising=False)


def test_a_resumed_run_folder_continues_its_wandb_run(tmp_path, disabled):
    first = WandbLogger(tmp_path, LoggerConfig(kind="wandb"), {"seed": 0})
    run_id = first.run.id
    first.close()
    assert (tmp_path / "wandb" / "run_id").read_text().strip() == run_id
    again = WandbLogger(tmp_path, LoggerConfig(kind="wandb"), {"seed": 0})
    assert again.run.id == run_id
    again.close()
    other = WandbLogger(tmp_path / "other", LoggerConfig(kind="wandb"), {"seed": 0})
    assert other.run.id != run_id  # another run folder is another wandb run
    other.close()


def test_a_damaged_run_id_file_is_one_line(tmp_path, disabled):
    (tmp_path / "wandb").mkdir()
    (tmp_path / "wandb" / "run_id").write_text("../../x y\n")
    with pytest.raises(ValueError, match=r"run_id holds '\.\./\.\./x y', not a wandb run id"):
        WandbLogger(tmp_path, LoggerConfig(kind="wandb"), {})
