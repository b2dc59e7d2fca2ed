"""A finished run's key figures read without torch, for ``python -m populations.sweep_summary``
(walk 34b): it imported torch through ``populations.experiment`` (about 4 s of CPU) to print
a table. A league's newest μ per member and a single run's closing row as a resume prints it
(``populations.single_run.finished_run_row``: its last checkpoint's frames, seconds and returns,
its snapshot's recorded evaluation). A checkpoint is read by a restricted unpickler that
knows only what a torch checkpoint names (tensors become placeholders, their bytes unread);
anything else, and any file that is not as a run writes it (a link, no or another hash), is
:class:`NotPlain`: the caller reads that run the torch way, with its messages.

The rows are made here, once, for both ways: ``populations.single_run`` and
``populations.single_eval`` import :func:`single_row`, :func:`llm_row`, :func:`recorded_evaluation`,
:func:`_eval_cells` and :func:`ci95` from this module (so a resume's row and the summary's
cannot drift); tests/populations/test_fix34c_sweep_summary_torch_free.py compares them on
real runs."""

from __future__ import annotations

import collections
import hashlib
import io
import pickle
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from populations.run_folder_names import CHECKPOINT

CHECKPOINTS = "checkpoints"  # a single run's checkpoints (a league's: populations.league)
EVAL_MATCHES = "eval/e"  # a single run's evaluation matches: eval/e00000, eval/e00001, ...
EVAL_LEGAL_RATE = "charts/eval_legal_rate"  # an LLM team's, logged with its evaluation
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
    """A finished single run's row as ``populations.single_run.finished_run_row`` makes it
    (None when the run is not finished).

    Raises:
        NotPlain: a checkpoint this module does not read (the torch way reads it, or says
            why not).
    """
    found = finished(db, run_id, run_dir, member, _checkpoints)
    if found is None:
        return None
    version, ckpts, step, evaluated = found
    figures = None
    if ckpts:
        figures = plain_figures(read_plain(ckpts[0]))
        if figures is None:
            raise NotPlain(f"{ckpts[0]}: figures of other types")  # the torch way says so
    return table_row(member, version, unit, step, figures, evaluated)


def finished(db: Any, run_id: int, run_dir: Path, member: str,
             files: Callable[[Path], list[Path]]
             ) -> tuple[int | None, list[Path], int | None, Evaluation | None] | None:
    """A finished single run's snapshot version, its checkpoints (newest first, as ``files``
    lists them), the newest one's step and its recorded evaluation; None when the run is not
    finished."""
    if db.run_status(run_id) != "finished":
        return None
    snaps = db.snapshots(run_id, member)
    version = snaps[-1].version if snaps else None
    ckpts = files(run_dir / CHECKPOINTS)
    step = int(ckpts[0].stem.removeprefix("ckpt_")) if ckpts else None
    return version, ckpts, step, recorded_evaluation(db, run_id, snaps[-1].id if snaps else None)


def plain_figures(raw: dict[str, Any]) -> tuple[list[float], float, dict[str, float]] | None:
    """A single run's checkpoint's last episode returns, seconds and metrics; None where one
    is not of its type (floats; metrics by name)."""
    returns, seconds, metrics = raw.get("returns", []), raw.get("seconds", 0.0), \
        raw.get("metrics", {})
    if not (isinstance(returns, list) and all(isinstance(r, float) for r in returns)
            and isinstance(seconds, float) and isinstance(metrics, dict)
            and all(isinstance(k, str) and isinstance(v, float) for k, v in metrics.items())):
        return None
    return returns, seconds, metrics


def table_row(member: str, version: int | None, unit: str, step: int | None,
              figures: tuple[list[float], float, dict[str, float]] | None,
              evaluated: Evaluation | None) -> dict[str, Any]:
    """A finished run's row: :func:`llm_row` (``unit`` iterations) or :func:`single_row`
    from its checkpoint's ``figures``; without them, its step and evaluation only."""
    if figures is None:
        return {"member": member, "version": version, unit: step, **_eval_cells(evaluated)}
    returns, seconds, metrics = figures
    if unit == "iterations":
        return llm_row(version, step, metrics, evaluated)
    return single_row(member, version, step, seconds, returns, evaluated)


def single_row(member: str, version: int | None, frames: int | None, seconds: float,
               returns: list[float], evaluated: Evaluation | None) -> dict[str, Any]:
    """A single run's table row: its frames, seconds, the mean return of its last (up to 50)
    training episodes (``final_return``: exploring, or sampling for on-policy learners) and
    of its snapshot's evaluation episodes (``eval_return``, with its 95 % confidence
    half-width ``eval_ci95``: :func:`recorded_evaluation`)."""
    return {"member": member, "version": version, "frames": frames, "seconds": round(seconds, 1),
            "final_return": round(float(np.mean(returns)), 3) if returns else None,
            **_eval_cells(evaluated)}


def llm_row(version: int | None, iterations: int | None,
            metrics: dict[str, float], evaluated: Evaluation | None) -> dict[str, Any]:
    """An LLM team run's table row: its last iteration's rates, the evaluation's mean team
    return (``eval_return``, ``eval_ci95``: :func:`recorded_evaluation`) and self-play win rates."""
    row: dict[str, Any] = {"member": "llm", "version": version, "iterations": iterations}
    for key in ("legal_rate", "success_rate", "team_return"):
        if f"charts/{key}" in metrics:
            row[key] = round(float(metrics[f"charts/{key}"]), 3)
    row.update(_eval_cells(evaluated))
    for key in sorted(k for k in metrics if k.startswith("charts/win_rate/")):  # self-play:
        row[key.removeprefix("charts/")] = round(float(metrics[key]), 3)  # team_return is 0
    return row


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


@dataclass(frozen=True)
class Evaluation:
    """A single run's evaluation of its snapshot: the learner team's mean return over
    ``episodes`` episodes and the half-width of that mean's 95 % confidence interval
    (Student's t over the episodes' returns; None below two episodes); for an LLM team, the
    share of its evaluated moves that named a legal action (None for other learners)."""

    mean: float
    ci95: float | None
    episodes: int
    legal_rate: float | None = None


def recorded_evaluation(db: Any, run_id: int, sid: int | None,
                        episodes: int | None = None) -> Evaluation | None:
    """The learner team's returns in a single run's recorded evaluation matches of snapshot
    ``sid`` (the first ``episodes`` of them, in the order they were played; a resume with
    another ``eval_episodes`` keeps the rows recorded before): per episode the mean over the
    seats it held, as ``final_return`` (and ``marl.train``'s ``charts/episode_return``, an
    LLM team's ``charts/team_return``) counts an episode; then their mean and its 95 %
    confidence half-width; None when none is recorded."""
    # eval/e00000 ... eval/e99999, eval/e100000: by length, then text (text alone put
    # e100000 before e10001)
    mine = sorted((m for m in db.matches(run_id, EVAL_MATCHES)
                   if m.seats and set(m.seats.values()) == {sid}),
                  key=lambda m: (len(m.key), m.key))
    per_episode = [float(np.mean([m.returns[a] for a in m.seats])) for m in mine[:episodes]]
    if not per_episode:
        return None
    legal = db.metric(run_id, EVAL_LEGAL_RATE)  # an LLM team's, logged with the evaluation
    return Evaluation(float(np.mean(per_episode)), ci95(per_episode), len(per_episode),
                      legal[-1][1] if legal else None)


def _eval_cells(evaluated: Evaluation | None) -> dict[str, float | None]:
    """A table row's ``eval_return`` and ``eval_ci95`` (None when not recorded), and an LLM
    team's ``eval_legal_rate`` where it was recorded."""
    if evaluated is None:
        return {"eval_return": None, "eval_ci95": None}
    cells = {"eval_return": _rounded(evaluated.mean), "eval_ci95": _rounded(evaluated.ci95)}
    if evaluated.legal_rate is not None:
        cells["eval_legal_rate"] = _rounded(evaluated.legal_rate)
    return cells


def _rounded(x: float | None) -> float | None:
    return None if x is None else round(float(x), 3)


def ci95(values: list[float]) -> float | None:
    """The half-width of the 95 % confidence interval of the mean of ``values`` (Student's
    t with n - 1 degrees of freedom: 2.04 × std / √n at 32 episodes); None below two."""
    n = len(values)
    if n < 2:
        return None
    # scipy.special's quantile (~0.25 s CPU to import): scipy.stats cost ~1 s of every
    # evaluating selfplay-train run's ~7 s, for this one number (the same values)
    from scipy.special import stdtrit

    return float(stdtrit(n - 1, 0.975) * np.std(values, ddof=1) / np.sqrt(n))
