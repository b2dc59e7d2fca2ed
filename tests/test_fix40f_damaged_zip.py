"""fix40f L3: a damaged torch file with no sidecar to check it against loaded silently:
torch.load does not check the zip's CRCs, so an MLP snapshot with 64 bytes inverted in its
weights was rated by selfplay-eval (rc 0) with altered weights. Every entry's CRC-32 is
checked before torch.load (marl.fileio.check_torch_zip): one-line refusal naming the entry."""

from __future__ import annotations

import struct
import zipfile

import pytest

import games
from marl import registry
from marl.core import CheckpointError, PolicyLoadError, load_policy
from populations.checkpoint import read_checkpoint
from tests.populations.eval_cli_run import run_eval

RPS = "openspiel/matrix_rps"


def _damage(path) -> str:
    """Invert 64 bytes in the middle of the file's largest tensor data; its entry's name."""
    with zipfile.ZipFile(path) as zf:
        info = max((i for i in zf.infolist() if "/data/" in i.filename),
                   key=lambda i: i.file_size)
    raw = bytearray(path.read_bytes())
    n_name, n_extra = struct.unpack_from("<2H", raw, info.header_offset + 26)
    start = info.header_offset + 30 + n_name + n_extra + info.file_size // 2 - 32
    raw[start:start + 64] = bytes(b ^ 0xFF for b in raw[start:start + 64])
    path.write_bytes(bytes(raw))
    return info.filename


def _learner(seed=0):
    return registry.get("mappo").build(games.make(RPS).spec, seed=seed)


def test_damaged_policy_is_refused_in_one_line(tmp_path, capsys):
    good = _learner(1).policy().save(tmp_path / "good.pt")
    path = _learner().policy().save(tmp_path / "mlp.pt")
    assert not path.with_suffix(".json").exists()  # no sidecar to check the bytes against
    entry = _damage(path)
    with pytest.raises(PolicyLoadError) as err:
        load_policy(path)
    text = str(err.value)
    assert text.startswith(f"cannot read policy {path}: damaged (bad CRC in {entry})"), text
    assert "\n" not in text
    code, out, errtext = run_eval([str(path), str(good), "--db", str(tmp_path / "r.db"),
                                   "--episodes", "2"], capsys)
    assert code == 2, out
    assert "bad CRC in" in errtext and "Traceback" not in errtext + out, errtext


def test_damaged_learner_checkpoint_is_refused(tmp_path):
    learner = _learner()
    path = learner.save(tmp_path / "learner.pt")
    entry = _damage(path)
    with pytest.raises(CheckpointError, match=rf"damaged \(bad CRC in {entry}\)") as err:
        learner.load(path)
    assert "\n" not in str(err.value)
    with pytest.raises(CheckpointError, match=r"damaged \(bad CRC in "):
        read_checkpoint(path)  # a run's checkpoint without its hash file


def test_undamaged_files_still_load(tmp_path):
    learner = _learner()
    load_policy(learner.policy().save(tmp_path / "p.pt"))
    learner.load(learner.save(tmp_path / "l.pt"))
