"""What the dashboard serves for a stored value: a number column's value or a gap (SQLite
keeps whatever a crafted file put in a column, and Plotly renders text in labels as markup),
a stored rating row, JSON text, a member kind's display name and what a snapshot's learner
step counts. Split from :mod:`populations.dashboard.queries`, which re-exports the public
names of kinds and step units.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

KIND_LABELS = {
    "mappo": "MAPPO", "ippo": "IPPO", "maddpg": "MADDPG", "vdn": "VDN", "qmix": "QMIX",
    "llm_team": "LLM team", "llm": "LLM", "exact_br": "exact BR", "tabular": "tabular",
    "meta_mixture": "meta-mixture", "random": "random",
}


def kind_label(kind: str) -> str:
    """A display name for a member kind (unknown kinds are shown as stored)."""
    return KIND_LABELS.get(kind.lower(), kind)


@dataclass(frozen=True)
class StepUnit:
    """What a snapshot's ``learner_step`` counts, by its policy kind: the learners record
    different things there (MAPPO frames, MADDPG and VDN/QMIX updates, LLM teams
    iterations), so the page names the unit instead of a bare "step"."""

    one: str
    many: str
    title: str  # what one of them is, for the page's hover text


STEP_UNITS = {
    "mappo": StepUnit("frame", "frames", "frames the learner had seen (game copies × steps) "
                      "when this snapshot was saved"),
    "maddpg": StepUnit("update", "updates", "gradient updates of the learner when this "
                       "snapshot was saved"),
    "vdn": StepUnit("update", "updates", "gradient updates of the learner when this snapshot "
                    "was saved"),
    "qmix": StepUnit("update", "updates", "gradient updates of the learner when this snapshot "
                     "was saved"),
    "llm": StepUnit("iteration", "iterations", "training iterations of the LLM team when this "
                    "snapshot was saved"),
}


def step_unit(kind: str, step: Any) -> tuple[str | None, str | None]:
    """``(unit, title)`` of a snapshot's learner step ``step`` by the snapshot's policy kind
    (``"frames"``, ``"1 update"``'s ``"update"``...); ``(None, None)`` for a kind whose unit
    is not known (a user's own learner: the page says "step")."""
    unit = STEP_UNITS.get(kind.lower()) if isinstance(kind, str) else None
    if unit is None:
        return None, None
    return (unit.one if step == 1 else unit.many), unit.title


def loads(text: str | None, default: Any) -> Any:
    """A stored JSON column's value, ``default`` when it is empty, not JSON, or nested
    deeper than the parser goes."""
    try:
        return json.loads(text) if text else default
    except (TypeError, ValueError, RecursionError):  # not JSON, or nested too deep
        return default


def number(value: Any) -> int | float | None:
    """A number column's value as served to a chart: SQLite keeps whatever a crafted file put
    in an INTEGER or REAL column, and Plotly renders text in axis labels and hovers as markup
    (links, styles), so anything but a number is served as None (a gap)."""
    return value if type(value) in (int, float) and math.isfinite(value) else None


def size(value: Any) -> int | float | None:
    """A count or a σ as served: :func:`number`, and None when negative (no such count)."""
    v = number(value)
    return v if v is not None and v >= 0 else None


def rating(r: dict[str, Any] | None) -> dict[str, Any]:
    """A stored rating row's ``elo``, ``mu``, ``sigma`` and ``matches`` as served (a text or
    an impossible value: None, as every number column); all None without a row."""
    r = r or {}
    return {"elo": number(r.get("elo")), "mu": number(r.get("mu")),
            "sigma": size(r.get("sigma")), "matches": size(r.get("matches"))}
