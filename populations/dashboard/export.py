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


def export_html(data: DashboardData, out: str | Path) -> dict[str, Any]:
    """Write the static page of every run ``data`` serves to ``out``; returns what was
    embedded (``api/runs`` lists the runs and any database that could not be read)."""
    answers = data.snapshot_all()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(render(answers), encoding="utf-8")
    tmp.replace(out)
    return answers
