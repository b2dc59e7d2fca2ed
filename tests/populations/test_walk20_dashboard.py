"""Walk 20: the dashboard said "matches" for three counts and "win rate" for two, and showed
learner steps without their unit.

- ``matches`` was the role-swapped pairs a rating is from (the closing table's 14 for
  ``mappo v3`` in a tag league), the episodes played by any of a member's snapshots (the
  league table's 84, same row) and the episodes of the whole run (the runs list's 108): now
  the league table shows the rating's pairs (``rated pairs``) and the member's episodes
  (``episodes``), and the runs list the run's episodes (``episodes``).
- one pair, ``mappo v0`` vs ``maddpg v1``, read 100 % in the payoff table and the league
  table (per role-swapped pair, 1 pair) and 50 % win / 50 % loss in cross-play (per
  episode, 2 episodes): each now says per what.
- ``latest snapshot · step N`` mixed frames (MAPPO 600, 1200), updates (MADDPG 87, 237;
  QMIX 101, 251) and iterations (LLM team 1, 2): each now names its unit.

The database here is written by hand in the shapes a mixed-algorithm league on simple_tag
records (``/tmp/walk211/mix_a``); payoffs and ratings come from
:func:`populations.evaluation.recompute`, as in a league.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from populations.dashboard import BackgroundServer, create_app, queries
from populations.db import LeagueDB, MatchRow
from populations.evaluation import recompute
from tests.populations.test_dashboard import XSS, get

ADV = ("adversary_0", "adversary_1")  # the first team; agent_0 is the other
# member -> (member kind, snapshot kind, learner step of v0, v1, v2)
MEMBERS = {
    "mappo": ("mappo", "mappo", (0, 600, 1200)),  # frames
    "ippo": ("ippo", "mappo", (0, 1)),  # frames: IPPO's snapshots are mappo policies
    "maddpg": ("maddpg", "maddpg", (0, 87, 237)),  # updates
    "qmix": ("qmix", "qmix", (0, 101, 251)),  # updates
    "llm": ("llm", "llm", (0, 1)),  # GRPO iterations
    XSS: (XSS, XSS, (5,)),  # a kind no learner records: its step has no known unit
}


def pair(key: str, a: int, b: int, margins: tuple[float, float]) -> list[MatchRow]:
    """One role-swapped pair: ``a`` seats the adversaries, then ``b`` does; ``a``'s team
    return minus ``b``'s is ``margins[0]`` in the first episode and ``margins[1]`` in the
    second."""
    def ep(side: str, first: int, second: int, margin: float) -> MatchRow:
        seats = {**{x: first for x in ADV}, "agent_0": second}
        returns = {**{x: margin if first == a else -margin for x in ADV}, "agent_0": 0.0}
        return MatchRow(f"{key}/{side}/e0000", "g", seats, returns)
    return [ep("ab", a, b, margins[0]), ep("ba", b, a, margins[1])]


def build(path: Path) -> tuple[int, dict[tuple[str, int], int]]:
    db = LeagueDB(path)
    try:
        run = db.create_run("mix", experiment="mixed_algo_league", game="g")
        sid = {}
        for name, (kind, snap_kind, steps) in MEMBERS.items():
            mid = db.add_member(run, name, kind, ["adversary", "agent"])
            for v, step in enumerate(steps):
                sid[(name, v)] = db.add_snapshot(mid, v, f"/nowhere/{v}.pt", snap_kind, "g",
                                                 ["adversary", "agent"], learner_step=step)
        rows = (pair("p1", sid[("mappo", 0)], sid[("maddpg", 1)], (3.0, -1.0))  # won 1 of 2
                + pair("p2", sid[("mappo", 2)], sid[("qmix", 2)], (1.0, 1.0))
                + pair("p3", sid[("mappo", 2)], sid[("qmix", 2)], (-1.0, 2.0))
                + pair("p4", sid[("maddpg", 2)], sid[("qmix", 2)], (1.0, 0.0)))
        db.add_matches(run, rows)
        recompute(db, run, step=1)
        db.set_run_status(run, "finished")
    finally:
        db.close()
    return run, sid


@pytest.fixture
def mix(tmp_path) -> tuple[Path, int, dict[tuple[str, int], int]]:
    run, sid = build(tmp_path / "league.db")
    return tmp_path, run, sid


# ---------------------------------------------------------------------------- queries
def test_counts_name_their_unit(mix):
    folder, run, sid = mix
    client = TestClient(create_app([folder]))
    (listed,) = get(client, "/api/runs")["runs"]
    assert "matches" not in listed  # three meanings under one name before
    assert listed["episodes"] == 8  # every recorded episode of the run
    db = LeagueDB(folder / "league.db", readonly=True)
    try:
        rows = {r["member"]: r for r in queries.league_table(db, run)}
        ratings = db.latest_ratings(run)
    finally:
        db.close()
    mappo = rows["mappo"]
    assert "matches" not in mappo
    assert mappo["rated_version"] == 2
    # the rating of v2 is from its 2 role-swapped pairs with qmix v2, as ratings.matches says
    assert mappo["rated_pairs"] == ratings[sid[("mappo", 2)]]["matches"] == 2
    assert mappo["win_pairs"] == 2
    assert mappo["episodes"] == 6  # by v0 (2) and v2 (4): every snapshot of the member
    assert rows["maddpg"]["episodes"] == 4 and rows["maddpg"]["rated_pairs"] == 1
    assert rows["llm"]["rated_pairs"] is None and rows["llm"]["episodes"] == 0  # never rated
    (series,) = [x for x in get(client, f"/api/runs/{listed['source']}/{run}/ratings")
                 if x["snapshot_id"] == sid[("mappo", 2)]]
    assert "matches" not in series and series["pairs"] == [2]  # the rating's pairs, by name


def test_crafted_rating_counts_are_served_as_numbers_only(mix):
    folder, run, sid = mix
    db = LeagueDB(folder / "league.db")
    try:
        db.conn.execute("UPDATE ratings SET matches = ? WHERE snapshot_id = ?",
                        (XSS, sid[("mappo", 2)]))
        db.conn.commit()
        rows = {r["member"]: r for r in queries.league_table(db, run)}
    finally:
        db.close()
    assert rows["mappo"]["rated_pairs"] is None


def test_each_snapshot_step_names_its_unit(mix):
    folder, run, _ = mix
    db = LeagueDB(folder / "league.db", readonly=True)
    try:
        rows = {r["member"]: r for r in queries.league_table(db, run)}
    finally:
        db.close()
    got = {m: (r["learner_step"], r["step_unit"]) for m, r in rows.items()}
    assert got == {"mappo": (1200, "frames"), "ippo": (1, "frame"),
                   "maddpg": (237, "updates"), "qmix": (251, "updates"),
                   "llm": (1, "iteration"), XSS: (5, None)}
    assert "copies" in rows["mappo"]["step_title"]  # what a frame is, on hover
    assert rows[XSS]["step_title"] is None


# ---------------------------------------------------------------------------- the page
@pytest.fixture
def page(tmp_path_factory) -> Iterator:
    from tests.populations import test_dashboard_browser as tb  # skips without Chromium

    with tb.sync_api.sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            tmp_path_factory.mktemp("chromium-profile"), executable_path=tb.CHROMIUM,
            headless=True, args=tb.CHROMIUM_ARGS, viewport={"width": 1400, "height": 1000})
        ctx.set_default_timeout(tb.WAIT_MS)
        p = tb.Page(ctx)
        yield p
        ctx.close()


def _cells(page, member: str) -> dict[str, str]:
    """The league table's row of ``member``: header key -> text."""
    keys = [th.get_attribute("data-key")
            for th in page.locator("#league-table thead th").all()]
    for tr in page.locator("#league-table tbody tr").all():
        texts = tr.locator("td").all_inner_texts()
        if texts[0] == member:
            return dict(zip(keys, texts, strict=True))
    raise AssertionError(f"no row for {member!r}")


def test_the_page_names_every_unit(page, mix):
    from tests.populations.test_dashboard_browser import expect

    folder, run, sid = mix
    with BackgroundServer(create_app([folder], refresh_s=60)) as srv:
        p = page.page
        p.goto(f"{srv.url}/")
        p.wait_for_selector("#league-table tbody tr")
        page.rendered("payoff-chart")
        expect(p.locator("#crossplay-table tbody tr").first).to_be_visible()
        # runs list: the run's episodes
        heads = p.locator("#runs-table thead th").all_inner_texts()
        assert "episodes" in heads and "matches" not in heads
        assert p.locator("#runs-table tbody tr td").nth(7).inner_text() == "8"
        # league table: the rating's pairs, the member's episodes, each step's unit
        heads = p.locator("#league-table thead th").all_inner_texts()
        assert "matches" not in heads
        assert {"rated pairs", "episodes"} <= set(heads)
        mappo = _cells(p, "mappo")
        assert (mappo["rated_pairs"], mappo["episodes"]) == ("2", "6")
        assert mappo["latest_version"] == "v2 · 1,200 frames"
        assert _cells(p, "ippo")["latest_version"] == "v1 · 1 frame"
        assert _cells(p, "maddpg")["latest_version"] == "v2 · 237 updates"
        assert _cells(p, "qmix")["latest_version"] == "v2 · 251 updates"
        assert _cells(p, "llm")["latest_version"] == "v1 · 1 iteration"
        assert _cells(p, XSS)["latest_version"] == "v0 · step 5"  # unknown unit: as before
        assert _cells(p, "llm")["rated_pairs"] == "—"
        title = p.locator("#league-table tbody tr", has_text="mappo").first.locator(
            "td").nth(2).get_attribute("title")
        assert "copies" in title
        # the two win rates of one pair say per what: 100 % per pair, 50 % per episode
        win_head = p.inner_text("#league-table th[data-key='win_rate']")
        assert "per pair" in win_head
        cross_heads = p.locator("#crossplay-table thead th").all_inner_texts()
        assert "win per episode" in cross_heads and "loss per episode" in cross_heads
        a, b = sid[("mappo", 0)], sid[("maddpg", 1)]
        row = p.locator(f"#crossplay-table tr[data-pair='{min(a, b)}/{max(a, b)}'] td")
        assert row.nth(2).inner_text() == "2"
        assert row.nth(3).inner_text().startswith("50.0% [")
        hover = p.evaluate("document.getElementById('payoff-chart').data[0].text")
        ids = get(TestClient(create_app([folder])),
                  f"/api/runs/{p.evaluate('location.hash').split('=')[1]}/payoffs")["ids"]
        i, j = ids.index(a), ids.index(b)
        assert hover[i][j] == "win rate per role-swapped pair 100.0% · 1 pair"
        assert "per role-swapped pair" in p.inner_text("#payoff-meaning")
        assert p.evaluate("document.scripts.length") == 2
    assert page.dialogs == [] and page.errors == []


def test_learner_panels_take_the_keys_of_a_league_of_several_members(tmp_path):
    """A league of several members logs ``<member>/charts/episode_return``,
    ``<member>/losses/...`` (League.log_metrics): the panels matched keys at the start only,
    so they showed none of those members' curves (only a one-member league's)."""
    db = LeagueDB(tmp_path / "league.db")
    run = db.create_run("mix", experiment="mixed_algo_league", game="g")
    for step in (100, 200):
        db.log_metrics(run, step, {"mappo/charts/episode_return": -1.0 * step,
                                   "qmix/charts/episode_return": 1.0, "qmix/losses/td_loss": 0.5,
                                   "mappo/losses/pg_loss": 0.1, "mappo/losses/approx_kl": 0.01,
                                   "mappo/adv/agent_0/adv_mean": 0.0})
    panels = {p["title"]: {s["key"] for s in p["series"]}
              for p in queries.learner_panels(db, run)["panels"]}
    db.close()
    assert panels["Episode return"] == {"mappo/charts/episode_return",
                                        "qmix/charts/episode_return"}
    assert panels["Losses"] == {"qmix/losses/td_loss", "mappo/losses/pg_loss"}
    assert panels["PPO diagnostics"] == {"mappo/losses/approx_kl"}
    assert panels["Advantage per agent"] == {"mappo/adv/agent_0/adv_mean"}
