"""Every test module that starts Ray (its shared fixtures ``ray_local``/``loopback_cluster``,
``populations.runners.init_ray`` or ``ray.init``) runs in the suite's second lane, so two Ray
instances never run at once (``tests/lanes.py``). Session 38's
``test_fix38_vocab_actors.py`` started Ray in the first lane beside the second's."""
from __future__ import annotations

import re
from pathlib import Path

from tests.lanes import SECOND_LANE

ROOT = Path(__file__).resolve().parents[1]
STARTS_RAY = re.compile(r"\b(ray_local|loopback_cluster|init_ray)\b|\bray\.init\(")


def ray_modules(root: Path = ROOT) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in (root / "tests").rglob("test_*.py")
                  if p.resolve() != Path(__file__).resolve()  # names them, starts none
                  and STARTS_RAY.search(p.read_text(encoding="utf-8")))


def test_every_module_starting_ray_runs_in_the_second_lane():
    found = ray_modules()
    assert "tests/llm_agents/test_ray_rollouts.py" in found  # the scan sees the known ones
    assert [m for m in found if m not in SECOND_LANE] == []


def test_the_scan_sees_each_way_of_starting_ray(tmp_path):
    (tmp_path / "tests").mkdir()
    for i, text in enumerate(["def test(ray_local): pass", "init_ray(address=None)",
                              "import ray\nray.init(num_cpus=1)", "x = 'runner=local'"]):
        (tmp_path / "tests" / f"test_{i}.py").write_text(text)
    assert ray_modules(tmp_path) == [f"tests/test_{i}.py" for i in range(3)]
