"""Static export: the dashboard page as one HTML file that opens without the server.

The page, its style, its script and Plotly's JavaScript are inlined, and every API answer
the page would request is embedded as JSON (:meth:`DashboardData.snapshot_all`); the
page reads those instead of fetching and does not refresh. The embedded JSON escapes
``<``, ``>``, ``&`` and the two JavaScript line separators, so no string from the
database can end the ``<script>`` element it sits in.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from marl.fileio import atomic_write
from populations.dashboard.app import PLOTLY_JS, STATIC
from populations.dashboard.data import DashboardData

_TAGS = {
    "style": '<link rel="stylesheet" href="static/dashboard.css">',
    "plotly": '<script src="static/plotly.min.js"></script>',
    "app": '<script src="static/dashboard.js"></script>',
}


def script_json(obj: Any) -> str:
    """JSON that is safe inside an HTML ``<script>`` element."""
    text = json.dumps(obj, separators=(",", ":"), allow_nan=False)
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                    ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(ch, esc)
    return text


def _inline_script(source: str) -> str:
    # "</script" can only occur inside JS strings, regexes or comments, where "<\/" is the same
    return "<script>" + source.replace("</script", "<\\/script") + "</script>"


def render(answers: dict[str, Any]) -> str:
    """The exported page for embedded API ``answers`` (path → JSON document)."""
    page = (STATIC / "index.html").read_text(encoding="utf-8")
    parts = {
        "style": "<style>" + (STATIC / "dashboard.css").read_text(encoding="utf-8") + "</style>",
        "plotly": _inline_script(PLOTLY_JS.read_text(encoding="utf-8")),
        "app": (f'<script id="dashboard-export" type="application/json">'
                f"{script_json(answers)}</script>\n"
                + _inline_script((STATIC / "dashboard.js").read_text(encoding="utf-8"))),
    }
    for name, tag in _TAGS.items():
        if tag not in page:
            raise RuntimeError(f"index.html lacks {tag!r}; the export cannot inline {name}")
        page = page.replace(tag, parts[name])
    return page


class ExportError(ValueError):
    """An export that cannot be written where it was asked (a folder, a path under a file, no
    permission); the message is one line naming the path."""


def check_target(out: str | Path) -> None:
    """Refuse an ``out`` that is not a file the page may replace: a folder (the rename over it
    failed after the page was written, leaving ``<out>.tmp``), another non-regular file (a
    FIFO, a device: replaced by the page), or a path under a file."""
    out = Path(out)
    above = next((p for p in out.parents if p.exists()), None)  # mkdir said "File exists"
    if above is not None and not above.is_dir():
        raise ExportError(f"cannot export to {out}: {above} is a file, not a folder")
    if out.is_dir():
        raise ExportError(f"cannot export to {out}: it is a folder; give a file name, such as "
                          f"{out / 'report.html'}")
    if out.exists() and not out.is_file():
        raise ExportError(f"cannot export to {out}: it is not a regular file; give the name of "
                          "a new or a regular file")


def new_folder(out: str | Path) -> Path | None:
    """The topmost folder above ``out`` that does not exist yet (the export makes it and those
    below it), or None."""
    missing = None
    for parent in Path(out).parents:  # the nearest first
        if parent.exists():
            break
        missing = parent
    return missing


def export_html(data: DashboardData, out: str | Path) -> dict[str, Any]:
    """Write the static page of every run ``data`` serves to ``out`` (whole or not at all;
    missing folders above it are made); returns what was embedded (``api/runs`` lists the
    runs and any database that could not be read).

    Raises:
        ExportError: ``out`` cannot be written (:func:`check_target`, or the system's error);
        nothing is left behind.
    """
    out = Path(out)
    check_target(out)
    answers = data.snapshot_all()
    page = render(answers).encode("utf-8")
    tmp = out.with_name(out.name + ".tmp")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(out, page)
    except OSError as err:
        if tmp.is_file() and not tmp.is_symlink():  # ours: atomic_write made it afresh
            tmp.unlink(missing_ok=True)
        why = err.strerror or type(err).__name__
        if err.filename and str(err.filename) != str(out):  # the folder or temporary file
            why += f": {err.filename}"
        raise ExportError(f"cannot write {out} ({why})") from None
    return answers
