"""``+extra=e1`` appends a config group a user's module stores: fast41's early check of
top-level ``+`` keys refused it as an unknown key before Hydra could find the group
(review41 H1); ``+framez=3`` is still refused early."""
from __future__ import annotations

from tests.populations.test_fast41_early_refusals import _early

STORE = """
from hydra.core.config_store import ConfigStore

ConfigStore.instance().store(group="extra", name="e1", node={"seed": 5}, package="_global_")
ConfigStore.instance().store(group="extra", name="e2", node={"seed": 6}, package="_global_")
"""


def test_a_group_a_users_module_stores_is_appended_and_a_bad_key_still_refused(tmp_path):
    (tmp_path / "rv_grp41.py").write_text(STORE)
    cases = [["imports=[rv_grp41]", "+extra=e1", "game=kuhn"],
             ["imports=[rv_grp41]", "+framez=3"]]
    (ok, ok_err, _), (bad, bad_err, torch_loaded) = _early(cases, tmp_path)
    assert ok == 99, ok_err  # the run's task was reached: Hydra composed the group
    assert bad == 2 and bad_err[-1].startswith("selfplay-train: framez: not a key of the "
                                               "experiment"), bad_err
