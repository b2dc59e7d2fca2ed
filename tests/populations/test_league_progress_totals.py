"""A league's progress (``progress=True``): each member's training bar counts to the frames
the generation plays (MAPPO rounds a generation up to whole rollouts: 1 frame of 8-frame
rollouts is 8; the bar said ``1/1 100%`` and then ``8frame``), and the evaluation of each
generation has a bar of pairs and a log line (it was silent: 30-40 s at 110 snapshots)."""

import logging

import populations.league as league_module
from populations.league import League
from tests.populations.test_league import _kuhn


class _Bar:
    """tqdm as the league calls it, recording totals and counts."""

    made: list["_Bar"] = []

    def __init__(self, total=None, desc="", unit="it", disable=False, **_):
        self.total, self.desc, self.unit, self.disable, self.n = total, desc, unit, disable, 0
        _Bar.made.append(self)

    def update(self, k=1):
        self.n += k

    def refresh(self):
        pass

    def note(self, text, now=False):  # marl.progress.tqdm's postfix of a still count
        pass

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def test_bars_count_to_their_totals_and_the_evaluation_is_shown(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(_Bar, "made", [])
    monkeypatch.setattr(league_module, "tqdm", _Bar)
    cfg = _kuhn(generations=3, frames_per_generation=1, num_envs=1, eval_episodes=1)
    league = League(cfg, tmp_path / "run", progress=True)
    try:
        with caplog.at_level(logging.INFO, "populations.league"):
            league.run()
    finally:
        league.close()
    train = [b for b in _Bar.made if b.unit == "frame"]
    evals = [b for b in _Bar.made if b.unit == "pair"]
    assert [(b.desc, b.total, b.n) for b in train] == [
        (f"generation {g}/3 main", 8, 8) for g in (1, 2, 3)]  # 1 frame: one 8-frame rollout
    assert [(b.desc, b.total, b.n) for b in evals] == [
        (f"generation {g}/3 evaluation", g, g) for g in (1, 2, 3)]  # v_g against v0..v_g-1
    assert not any(b.disable for b in _Bar.made)
    said = [r.getMessage() for r in caplog.records if "evaluated" in r.getMessage()]
    assert [m.split(" in ")[0] for m in said] == [
        f"generation {g}: evaluated {g} snapshot pair{'s' if g > 1 else ''}, {2 * g} episodes "
        "recorded (eval_episodes=1 a side)" for g in (1, 2, 3)]
