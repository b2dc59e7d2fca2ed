"""Advantage diagnostics: per-agent and per-role statistics of what ``normalize_advantages``
was given and what it returned, as ``adv/...`` floats for the logger (the dashboard's
"Raw advantage per agent and role" panels), and the names those keys carry.

``normalize_advantages`` computes them on first read of ``AdvantageResult.diagnostics``;
``AdvantageConfig.diagnostics`` picks the level (``keys``, ``global``, ``none``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import torch
from torch import Tensor

from marl.advantages import KEY_NAMES, AdvantageKeys, FlatKeys, KeyNames
from marl.configs import AdvantageConfig
from marl.returns import dense_key

# raw_*: the values normalize_advantages was given, before normalization. Not rewards: MAPPO
# gives its GAE advantages, an LLM team its per-turn returns (rewards only for an adv_norm
# that consumes them); named reward_* before 2026-12, which the dashboard still reads
_DIAG = ["count", "raw_mean", "raw_std", "adv_mean", "adv_std", "raw_std_ratio",
         "raw_m2_ratio"]  # fmt: skip


def key_label(name: str) -> str:
    """``name`` (a game's agent id or role: any string) as one segment of a metric key:
    ``%`` and ``/`` percent-escaped (``%25``, ``%2F``), so a label never splits the key and
    two names never share one; ``scout_0`` stays ``scout_0``."""
    return name.replace("%", "%25").replace("/", "%2F")


def check_names(names: KeyNames | None) -> dict[str, tuple[str, ...]]:
    """``names`` checked (kinds among the keys, lists of distinct strings), as each id's key
    segment (:func:`_kind_labels`); a wrong one raises a one-line ``ValueError``."""
    out: dict[str, tuple[str, ...]] = {}
    for kind, given in (names or {}).items():
        if kind not in KEY_NAMES:
            raise ValueError(f"names[{kind!r}]: unknown key kind; kinds are {list(KEY_NAMES)}")
        if (isinstance(given, str) or not isinstance(given, Sequence)
                or not all(isinstance(n, str) for n in given)):
            raise ValueError(f"names[{kind!r}]={given!r}; expected a list of strings, the "
                             f"name of each {kind} id in order")  # fmt: skip
        twice = sorted(n for n, c in Counter(given).items() if c > 1)
        if twice:
            raise ValueError(f"names[{kind!r}] repeats {twice}; each {kind} id needs its "
                             "own name")  # fmt: skip
        out[kind] = _kind_labels(kind, tuple(map(key_label, given)))
    return out


def _kind_labels(kind: str, escaped: tuple[str, ...]) -> tuple[str, ...]:
    """The key segment of each escaped name: ``<kind>_<name>``, or the name as it is when it
    already starts with ``<kind>_`` (the agent ``agent_0`` logs ``adv/agent_0/...``, not
    ``adv/agent_agent_0/...``); all prefixed when that would make two names share one
    (``0`` and ``agent_0``)."""
    pre = f"{kind}_"
    labels = tuple(n if n.startswith(pre) else pre + n for n in escaped)
    return labels if len(set(labels)) == len(labels) else tuple(pre + n for n in escaped)


def _label(kind: str, i: int, names: dict[str, tuple[str, ...]]) -> str:
    """The key segment of id ``i`` (``<kind>_<i>`` when ``names`` has none for ``kind``)."""
    given = names.get(kind)
    if given is None:
        return f"{kind}_{i}"
    if not 0 <= i < len(given):
        raise ValueError(f"keys.{kind} holds id {i}, which names[{kind!r}] ({len(given)} "
                         f"names, ids 0..{len(given) - 1}) does not name")  # fmt: skip
    return given[i]


def advantage_diagnostics(values: Tensor, advantages: Tensor, keys: AdvantageKeys | None = None,
                          mask: Tensor | None = None,
                          names: KeyNames | None = None) -> dict[str, float]:  # fmt: skip
    """Global, per-agent and per-role statistics of the raw ``values`` and their normalized
    ``advantages``, as floats for the logger.

    ``values`` are what the normalization was given (``raw``), not rewards: MAPPO/IPPO's GAE
    advantages, an LLM team's per-turn returns (its rewards for an adv_norm that consumes
    rewards, ``player_turn``). Keys
    ``adv/{global,agent_<id>,role_<id>}/{count,raw_mean,raw_std,adv_mean,adv_std}`` plus, per
    agent and role, ``raw_std_ratio`` (sigma_k / sigma) and ``raw_m2_ratio``
    ((sigma_k**2 + (mu_k - mu)**2) / sigma**2: the mean squared advantage the key would get under
    global normalization, the gradient-norm inflation factor of Dr. MAS, arXiv:2602.08847).
    Ratios are 1 when the global std is 0. Unweighted, over unmasked samples: float64 sums of
    (1, r, r^2, a, a^2) per (agent, role) pair [P, 5] in one host sync, the rest on the host.

    ``names`` gives each agent / role id its name (``{"role": ["adversary", "agent"]}``: id i
    is ``names["role"][i]``): keys become ``adv/role_adversary/...``, the name escaped by
    :func:`key_label`; a name that starts with its kind is not prefixed again (the agent
    ``agent_0``: ``adv/agent_0/...``) unless two names would then share a key; a kind without
    names keeps its numbered keys, an id past its names raises a one-line ``ValueError``."""
    labels = check_names(names)
    r, a = values.reshape(-1).double(), advantages.reshape(-1).double()
    m = None if mask is None else mask.reshape(-1).bool()
    if m is not None:
        r, a = torch.where(m, r, 0.0), torch.where(m, a, 0.0)
    cols = [torch.ones_like(r) if m is None else m.double(), r, r * r, a, a * a]
    flat = FlatKeys(keys, values.shape)
    named = [(n, c) for n, c in (("agent", flat.agent), ("role", flat.role)) if c is not None]
    if named:  # one row per (agent, role) pair: its sums, then its agent and role ids
        key = dense_key(*(c for _, c in named))
        ids = [key.per_segment(c).double() for _, c in named]
        rows = torch.stack([key.sum(c) for c in cols] + ids, 1).tolist()
    else:
        rows = [torch.stack([c.sum() for c in cols]).tolist()]
    tables: dict[str, list[float]] = {"global": [0.0] * 5}
    for row in rows:  # each pair's sums go to the global row, its agent's and its role's
        pair = [_label(n, int(v), labels) for (n, _), v in zip(named, row[5:], strict=True)]
        for lab in ["global", *pair]:
            tables[lab] = [t + v for t, v in zip(tables.get(lab, [0.0] * 5), row[:5], strict=True)]
    g = _moment_row(tables.pop("global"))
    out = {f"adv/global/{n}": v for n, v in zip(_DIAG, g, strict=False)}
    for lab, sums in tables.items():  # agents and roles seen unmasked, with Dr. MAS ratios
        if sums[0] > 0:
            row, sig2 = _moment_row(sums), g[2] ** 2
            row += [row[2] / g[2], (row[2] ** 2 + (row[1] - g[1]) ** 2) / sig2] if sig2 else [1, 1]
            out.update({f"adv/{lab}/{n}": v for n, v in zip(_DIAG, row, strict=True)})
    return out


def _moment_row(s: list[float]) -> list[float]:
    """(count, raw mean/std, advantage mean/std) from sums (n, S r, S r^2, S a, S a^2)."""
    n = max(s[0], 1.0)
    mr, ma = s[1] / n, s[3] / n
    return [s[0], mr, max(s[2] / n - mr * mr, 0.0) ** 0.5, ma, max(s[4] / n - ma * ma, 0.0) ** 0.5]




def diagnostics_of(x, adv, keys, m, keep, shape, cfg: AdvantageConfig,
                   names: KeyNames) -> dict[str, float]:  # fmt: skip
    """The diagnostics of one ``normalize_advantages`` call, at the config's level."""
    diag = advantage_diagnostics(x.reshape(shape), adv.reshape(shape),
                                 keys if cfg.diagnostics == "keys" else None,
                                 None if m is None else m.reshape(shape), names)  # fmt: skip
    if cfg.drop_zero:
        diag["adv/dropped_frac"] = 1.0 - float(keep.sum()) / max(1, int(x.numel()))
    return diag
