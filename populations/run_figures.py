"""A finished run's key figures read without torch, for ``python -m populations.sweep_summary``
(walk 34b): it imported torch through ``populations.experiment`` (about 4 s of CPU) to print
a table. A league's newest μ per member and a single run's closing row as a resume prints it
(``populations.single_run._finished_row``: its last checkpoint's frames, seconds and returns,
its snapshot's recorded evaluation). A checkpoint is read by a restricted unpickler that
knows only what a torch checkpoint names (tensors become placeholders, their bytes unread);
anything else, and any file that is not as a run writes it (a link, no or another hash), is
:class:`NotPlain`: the caller reads that run the torch way, with its messages.

The rows' shapes are ``populations.single_run``'s (``_single_row``, ``_llm_row``) and
``populations.single_eval``'s (``_evaluation``, ``_eval_cells``, ``ci95``);
tests/populations/test_fix34c_sweep_summary_torch_free.py compares them on real runs."""

from __future__ import annotations

import collections
import hashlib
import io
import pickle
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from populations.run_folder_names import CHECKPOINT

CHECKPOINTS = "checkpoints"  # populations.single_run.CHECKPOINTS
EVAL_MATCHES = "eval/e"  # populations.single_eval.EVAL_MATCHES
EVAL_LEGAL_RATE = "charts/eval_legal_rate"  # populations.single_eval.EVAL_LEGAL_RATE
HASH_SUFFIX = ".sha256"  # populations.checkpoint.HASH_SUFFIX
MAX_PICKLE = 64 << 20  # a checkpoint's data.pkl (its tensors' bytes are elsewhere in the zip)


class NotPlain(Exception):
    """Not read here: read the run the torch way."""


def league_mus(db: Any, run_id: int) -> dict[str, float | None]:
    """``{member: μ}`` of each member's newest snapshot (rounded to 2 places, as
    ``populations.league_eval.league_table``; None where it has no rating yet)."""
    ratings = db.latest_ratings(run_id)
    newest: dict[str, Any] = {}
    for s in db.snapshots(run_id):
        if s.member not in newest or s.version > newest[s.member].version:
            newest[s.member] = s
    return {m: None if s.id not in ratings else round(ratings[s.id]["mu"], 2)
            for m, s in sorted(newest.items())}


def finished_row(db: Any, run_id: int, run_dir: Path, member: str,
                 unit: str) -> dict[str, Any] | None:
    """A finished single run's row as ``populations.single_run._finished_row`` makes it
    (None when the run is not finished).

    Raises:
        NotPlain: a checkpoint this module does not read (the torch way reads it, or says
            why not).
    """
    if db.run_status(run_id) != "finished":
        return None
    snaps = db.snapshots(run_id, member)
    version = snaps[-1].version if snaps else None
    ckpts = _checkpoints(run_dir / CHECKPOINTS)
    step = int(ckpts[0].stem.removeprefix("ckpt_")) if ckpts else None
    evaluated = _evaluation(db, run_id, snaps[-1].id if snaps else None)
    cells = _eval_cells(evaluated)
    if not ckpts:
        return {"member": member, "version": version, unit: step, **cells}
    state = read_plain(ckpts[0])
    returns, seconds, metrics = state.get("returns", []), state.get("seconds", 0.0), \
        state.get("metrics", {})
    if not (isinstance(returns, list) and all(isinstance(r, float) for r in returns)
            and isinstance(seconds, float) and isinstance(metrics, dict)
            and all(isinstance(k, str) and isinstance(v, float) for k, v in metrics.items())):
        raise NotPlain(f"{ckpts[0]}: figures of other types")  # the torch way says so
    if unit == "iterations":
        row: dict[str, Any] = {"member": "llm", "version": version, "iterations": step}
        for key in ("legal_rate", "success_rate", "team_return"):
            if f"charts/{key}" in metrics:
                row[key] = round(float(metrics[f"charts/{key}"]), 3)
        row.update(cells)
        for key in sorted(k for k in metrics if k.startswith("charts/win_rate/")):
            row[key.removeprefix("charts/")] = round(float(metrics[key]), 3)
        return row
    return {"member": member, "version": version, "frames": step, "seconds": round(seconds, 1),
            "final_return": round(float(np.mean(returns)), 3) if returns else None, **cells}


def _checkpoints(folder: Path) -> list[Path]:
    """``populations.checkpoint.checkpoint_files``: newest first."""
    if folder.is_symlink():
        raise NotPlain(f"{folder} is a link")
    if not folder.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in folder.iterdir() if (m := CHECKPOINT.fullmatch(p.name))]
    return [p for _, p in sorted(found, reverse=True)]


def read_plain(path: Path) -> dict[str, Any]:
    """The plain values of checkpoint ``path`` (its tensors as placeholders), checked against
    its recorded hash."""
    hashed = path.with_name(path.name + HASH_SUFFIX)
    if path.is_symlink() or hashed.is_symlink() or not path.is_file() or not hashed.is_file():
        raise NotPlain(f"{path}: a link, or no hash")
    try:
        if hashed.stat().st_size > 4096:
            raise NotPlain(f"{hashed}: not a hash")
        data = path.read_bytes()
        recorded = hashed.read_text("utf-8", "replace").split()
    except OSError as err:
        raise NotPlain(str(err)) from None
    if not recorded or hashlib.sha256(data).hexdigest() != recorded[0]:
        raise NotPlain(f"{path}: damaged")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            (name,) = [n for n in archive.namelist() if n.endswith("/data.pkl")]
            if archive.getinfo(name).file_size > MAX_PICKLE:
                raise NotPlain(f"{path}: a data.pkl of {archive.getinfo(name).file_size} bytes")
            state = _Unpickler(io.BytesIO(archive.read(name))).load()
    except NotPlain:
        raise
    except Exception as err:  # noqa: BLE001 - any other file: the torch way says what it is
        raise NotPlain(f"{path}: {type(err).__name__}") from None
    if not isinstance(state, dict):
        raise NotPlain(f"{path}: not a dict")
    return state


class _Tensor:
    """A tensor of a checkpoint, unread."""

    def __setstate__(self, state: Any) -> None:
        pass


def _tensor(*args: Any, **kwargs: Any) -> _Tensor:
    return _Tensor()


class _Unpickler(pickle.Unpickler):
    """What a torch checkpoint's ``data.pkl`` names, nothing else (as torch's weights-only
    loader, without torch): ordered dicts, storages and tensor rebuilds."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if module == "torch._utils" and name in ("_rebuild_tensor_v2", "_rebuild_parameter"):
            return _tensor
        if module == "torch" and name.endswith("Storage") and name.isidentifier():
            return name
        raise NotPlain(f"{module}.{name}")

    def persistent_load(self, pid: Any) -> None:
        return None


def _evaluation(db: Any, run_id: int, sid: int | None) -> tuple[float, float | None,
                                                                float | None] | None:
    """``populations.single_eval._evaluation``: the mean, 95 % half-width and LLM legal rate
    of the recorded evaluation of snapshot ``sid``."""
    mine = sorted((m for m in db.matches(run_id, EVAL_MATCHES)
                   if m.seats and set(m.seats.values()) == {sid}),
                  key=lambda m: (len(m.key), m.key))
    per_episode = [float(np.mean([m.returns[a] for a in m.seats])) for m in mine]
    if not per_episode:
        return None
    legal = db.metric(run_id, EVAL_LEGAL_RATE)
    return float(np.mean(per_episode)), _ci95(per_episode), legal[-1][1] if legal else None


def _eval_cells(evaluated: tuple[float, float | None, float | None] | None
                ) -> dict[str, float | None]:
    if evaluated is None:
        return {"eval_return": None, "eval_ci95": None}
    mean, ci95, legal = evaluated
    cells = {"eval_return": _rounded(mean), "eval_ci95": _rounded(ci95)}
    if legal is not None:
        cells["eval_legal_rate"] = _rounded(legal)
    return cells


def _rounded(x: float | None) -> float | None:
    return None if x is None else round(float(x), 3)


def _ci95(values: list[float]) -> float | None:
    """``populations.single_eval.ci95``: Student's t half-width (scipy's quantile)."""
    n = len(values)
    if n < 2:
        return None
    from scipy.special import stdtrit

    return float(stdtrit(n - 1, 0.975) * np.std(values, ddof=1) / np.sqrt(n))
