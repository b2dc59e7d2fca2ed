"""The suite's second lane (tests/lanes.py): a test run in the second pytest process passes,
fails, errors and skips in the first one as it did there, and a worker that dies fails the
tests it left."""

import re
from pathlib import Path

from tests import lanes

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[1]

SECOND = '''
import os
import pytest

def test_passes():
    pass

def test_fails():
    print("said before failing")
    assert 1 == 2, "in lane two"

@pytest.fixture
def broken():
    raise RuntimeError("fixture broke")

def test_errors(broken):
    pass

def test_skips():
    pytest.skip("no reason to run")

def test_in_the_worker():
    assert os.environ.get("SELFPLAY_TEST_LANE_WORKER")  # it ran in the worker

def test_dies():
    os._exit(3)

def test_after_the_death():
    pass
'''


def test_second_lane_results_are_reported_as_they_happened(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.delenv(lanes.WORKER, raising=False)
    monkeypatch.delenv(lanes.SWITCH, raising=False)
    (pytester.path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(pytester.path / "tmp"))  # the lane's folder, kept: failed
    pytester.makeconftest("pytest_plugins = ['tests.lanes']\n\n"
                          "def pytest_configure(config):\n"
                          "    import tests.lanes\n"
                          "    tests.lanes.SECOND_LANE = ('test_second.py',)\n")
    pytester.makepyfile(test_first="def test_here():\n    pass\n", test_second=SECOND)
    res = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rA")
    res.assert_outcomes(passed=3, failed=3, errors=1, skipped=1)  # as in one process
    out = res.stdout.str()
    assert "in lane two" in out and "said before failing" in out
    assert "fixture broke" in out
    assert "ERROR test_second.py::test_errors" in out  # a setup error, as pytest reports it
    # test_dies and test_after_the_death, each in its failure section (the short summary
    # repeats the message, cut to the terminal's width except where CI is set)
    sections = out.split("short test summary info")[0]
    for name in ("test_dies", "test_after_the_death"):
        assert re.search(rf"_ {name} _+\nthe second-lane pytest process exited \(3\) without "
                         "running this test", sections), name
    assert sections.count("without running this test") == 2
    assert re.search(r"SKIPPED \[1\] test_second.py:\d+: no reason to run", out)  # its line
    assert re.search(r"second lane: .*their last result came \d+ s after the start, this one's "
                     r"own tests took \d+ s, then it waited \d+ s", out)  # how to balance them

