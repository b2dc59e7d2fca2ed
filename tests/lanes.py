"""Two lanes for the suite: the test modules in :data:`SECOND_LANE` run in a second pytest
process while this one runs the rest, and their results are reported here.

Most tests are single-threaded (``torch.set_num_threads(1)``), and the slowest modules
spend their time waiting on child processes (``selfplay-train``, ``python -m
populations.league``, Ray workers), so one pytest process keeps about one core of a
2-core machine busy. Every test still runs once, in a fresh pytest process with the same
conftest, options from ``pyproject.toml`` and module order; the second lane's modules
are those that start Ray, so two Ray instances never run at once.

Here, each second-lane test becomes a :class:`LaneItem` with the same node id, placed
after this lane's tests: it waits for the worker's result and passes, fails (with the
worker's traceback and captured output) or skips as the test did there; ``--durations``
shows the worker's times. ``SELFPLAY_TEST_LANES=0`` runs everything in one process (as
do ``--pdb``, ``--collect-only`` and a selection that falls in one lane only).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

SECOND_LANE = (
    "tests/llm_agents/test_ray_rollouts.py",
    "tests/populations/test_cli.py",
    "tests/populations/test_league.py",
    "tests/populations/test_league_ray.py",
    "tests/populations/test_rollouts.py",
    "tests/populations/test_runners.py",
    "tests/populations/test_walk19_ray_address.py",
    "tests/populations/test_walk19_ray_imports.py",
    "tests/populations/test_walk20_greedy_matches.py",
    "tests/populations/test_fix26c_learner_progress.py",
    "tests/populations/test_fix26i_ray_legal_rate.py",
    "tests/populations/test_marl27_eval_ray_legal.py",
    "tests/populations/test_fix27c_ray_session_folder.py",
    "tests/populations/test_ray_sigterm_group.py",
    "tests/test_examples.py",
    "tests/marl/test_mappo_gru.py",
    "tests/populations/test_interrupts_review.py",
    "tests/marl/test_mappo.py",
    "tests/llm_agents/test_learning.py",
    "tests/populations/test_walk25_progress_bars.py",
    "tests/llm_agents/test_fix28c_actor_workdir_ray.py",
    "tests/populations/test_fix27g_failed_run_keeps_log.py",
    "tests/marl/test_maddpg.py",
    "tests/populations/test_fix28a_exploit_stop.py",
    "tests/populations/test_mixed_league.py",
    "tests/populations/test_fix29a_league_rollouts_closed.py",
    "tests/populations/test_fix29a_async_exploit_stop.py",
    "tests/populations/test_fix30b_league_start_closes.py",
    "tests/populations/test_dashboard_browser.py",
    "tests/populations/test_matrix.py",
    "tests/marl/test_value_decomp.py",
    "tests/populations/test_fix34c_second_ctrl_c_at_exit.py",
    "tests/populations/test_prog35_time_left.py",
    "tests/llm_agents/test_fix38_vocab_actors.py",
    "tests/test_fix39a_ray_session.py",
)
"""Modules (paths from the repository root) the second process runs, in this order: every
module that starts Ray, and test_cli (mostly ``selfplay-train`` child processes),
test_mappo_gru (~40-80 s) and test_interrupts_review (CLI child processes, ~40 s) for
balance: in the fresh-clone run at bcbf1ec the first lane's own tests took 882 s and the
second's last result came at 799 s. At 76ceb39: 889 s and 899 s; then the Ray tests' own
waits left the second lane (one ``ray start`` and ~28 s of SIGTERM waits fewer, the shared
instance no longer idling between its tests: ~40 s estimated), and test_run_folder (lock
holders and CLI child processes, ~15 s) came over (not yet measured in a full run). At
0b187ae (fresh clone, machine idle after its first ~15 min): this lane's own tests 1,603 s,
the second's last result at 1,082 s; test_mappo's GNN learning test (124-316 s) became a
benchmark and test_mappo (~100 s left: its MLP and IPPO learning tests) came over. The
official CI run at de384d1 (idle): this lane's own tests 1,009 s, the second's last result at
776 s; tests/llm_agents/test_learning.py (its three seed-0 learning tests ~270 s of 2,212 in a
loaded run at 35f0808, so ~120 s idle) came over to even them (~890 s each, estimated). In
walk 25's fresh-clone run (3,078 s, the machine ~3x loaded throughout): this lane's own tests
3,031 s, the second's last result at 2,767 s; then MADDPG's Gumbel and QMIX's spread learning
tests (244 s of this lane there) became benchmarks and test_mappo's MLP test trains 50k
frames instead of 60k (~16 s of the second's), leaving ~2,790 s here against ~2,750 s there
(estimated), so no module moved. The fresh-clone run at 45ec473 (idle): this lane's own
tests 1,077 s, the second's last result at 978 s; test_walk25_progress_bars (it starts Ray:
two Ray instances at once) and test_maddpg (~45 s) came over. The fresh-clone run at 9b18a6c
(~2.9x loaded: 2,912 s): this lane's own tests 2,890 s, the second's last result at 2,859 s;
then test_walk20_greedy_matches (its ray_local test started a second Ray instance in this
lane: 22 s of setup) and test_fix26c_learner_progress (a new ray_local test) came over, to
the instance the second lane's tests share, and test_vmas_reset's road_traffic and sampling checks
became ~90 s shorter here; test_run_folder (~15 s idle) went back for balance. At dd2e51c
(idle): this lane's own tests 1,132 s, the second's last result at 1,010 s; session 28's new
modules (~190 s idle) mostly landed here, so test_fix28a_exploit_stop (~50 s),
test_mixed_league (~50 s) and test_fix27g_failed_run_keeps_log (~15 s) came over (estimated
from a ~2.8x loaded run with --durations=0). At e2e734a (fresh clone, loaded by other tests
at times: 1,275 s): this lane's own tests 1,260 s, the second's last result at 1,036 s, after
session 31 moved the second lane's spread and league learning tests to VMAS (~125 s less
there); test_dashboard_browser (~42 s), test_matrix (~34 s) and test_value_decomp (~32 s)
came over (~1,150 s each, estimated)."""

SWITCH = "SELFPLAY_TEST_LANES"  # "0": one process
WORKER = "SELFPLAY_TEST_LANE_WORKER"  # set in the worker: its folder (node ids, results)
STALL_S = 1800  # a worker with no result this long is stuck (one test may take 900 s)


def _module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _enabled(config: pytest.Config) -> bool:
    return (os.environ.get(SWITCH, "1") != "0" and not os.environ.get(WORKER)
            and not config.option.collectonly and not config.option.usepdb
            and (os.cpu_count() or 1) >= 2)


class Lane:
    """The worker process and the results it has written so far."""

    def __init__(self, config: pytest.Config, nodeids: list[str]) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="selfplay-lane-"))
        self.nodeids = nodeids
        (self.folder / "nodeids.txt").write_text("\n".join(nodeids))
        self.results_path = self.folder / "results.jsonl"
        self.results_path.touch()
        self.log_path = self.folder / "worker.log"
        self.results: dict[str, dict[str, Any]] = {}
        self.waited = 0.0  # seconds this process spent waiting for the worker's results
        self.started, self.own_s = time.time(), None  # own_s: this lane's tests, in seconds
        self._offset = 0
        modules = list(dict.fromkeys(_module(n) for n in nodeids))
        root = config.rootpath
        args = [sys.executable, "-m", "pytest", *modules, "-p", "no:cacheprovider",
                f"--basetemp={self.folder / 'tmp'}", "-q"]
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(args, cwd=root, stdout=log, stderr=subprocess.STDOUT,
                                         env={**os.environ, WORKER: str(self.folder)},
                                         start_new_session=True)

    def _read(self) -> None:
        with open(self.results_path, encoding="utf-8") as fh:
            fh.seek(self._offset)
            while True:
                line = fh.readline()
                if not line.endswith("\n"):
                    break  # written only in part so far
                self._offset = fh.tell()
                rec = json.loads(line)
                self.results[rec["nodeid"]] = rec

    def log_tail(self, chars: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]

    def result(self, nodeid: str) -> dict[str, Any]:
        """The worker's result for ``nodeid``, once it has one (a failure if it never will)."""
        start = last = time.monotonic()
        seen = len(self.results)
        if self.own_s is None:  # the first wait: this process's own tests are done
            self.own_s = time.time() - self.started
        while True:
            self._read()
            if nodeid in self.results:
                self.waited += time.monotonic() - start
                return self.results[nodeid]
            if len(self.results) != seen:
                seen, last = len(self.results), time.monotonic()
            if self.proc.poll() is not None:
                self._read()
                return self.results.get(nodeid) or self._lost(
                    nodeid, f"the second-lane pytest process exited ({self.proc.returncode}) "
                    "without running this test")
            if time.monotonic() - last > STALL_S:
                return self._lost(nodeid, f"the second-lane pytest process reported nothing "
                                  f"for {STALL_S} s")
            time.sleep(0.1)

    def _lost(self, nodeid: str, why: str) -> dict[str, Any]:
        self.results[nodeid] = rec = {
            "nodeid": nodeid, "outcome": "failed", "when": "call", "durations": {}, "lost": True,
            "sections": [], "text": f"{why}; its log ({self.log_path}) ends:\n{self.log_tail()}"}
        return rec

    def close(self, keep: bool) -> None:
        """Stop the worker: once it has reported every test, give it time to end its session
        (fixtures' teardown: Ray's shutdown); else (an interrupted run) at once."""
        if len(self.results) >= len(self.nodeids):
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=120)
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(OSError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if not keep:
            shutil.rmtree(self.folder, ignore_errors=True)


class LaneItem(pytest.Item):
    """A second-lane test, reported from the worker's result."""

    def __init__(self, *, lane: Lane, location: tuple[str, int | None, str], **kw: Any):
        super().__init__(**kw)
        self.lane = lane
        self._where = location
        self.durations: dict[str, float] = {}
        self.skip_where: list | None = None
        self.add_marker(pytest.mark.timeout(0))  # the worker times its own tests out

    def reportinfo(self) -> tuple[str, int | None, str]:
        return self._where

    def _replay(self, when: str) -> None:
        """Fail or skip in phase ``when`` as the test did in the worker."""
        rec = self.lane.result(self.nodeid)
        self.durations = rec["durations"]
        if rec["when"] != when:
            return
        if rec["outcome"] == "skipped":
            self.skip_where = rec.get("where")
            pytest.skip(rec["text"])
        if rec["outcome"] == "failed":
            captured = "".join(f"\n{'-' * 20} {title}\n{content}"
                               for title, content in rec["sections"])
            where = "" if rec.get("lost") else "[in the second-lane pytest process]\n"
            pytest.fail(f"{where}{rec['text']}{captured}", pytrace=False)

    def setup(self) -> None:
        self._replay("setup")

    def runtest(self) -> None:
        self._replay("call")

    def teardown(self) -> None:
        self._replay("teardown")


_lane: Lane | None = None


@pytest.hookimpl(trylast=True)  # after -m / -k have deselected
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    global _lane
    folder = os.environ.get(WORKER)
    if folder:  # the worker: exactly the tests the first process handed over
        wanted = set(Path(folder, "nodeids.txt").read_text().splitlines())
        keep = [i for i in items if i.nodeid in wanted]
        config.hook.pytest_deselected(items=[i for i in items if i.nodeid not in wanted])
        items[:] = keep
        return
    if not _enabled(config):
        return
    order = {m: k for k, m in enumerate(SECOND_LANE)}
    second = sorted((i for i in items if _module(i.nodeid) in order),
                    key=lambda i: order[_module(i.nodeid)])  # stable: module order kept
    first = [i for i in items if _module(i.nodeid) not in order]
    if not first or not second:
        return
    _lane = Lane(config, [i.nodeid for i in second])
    proxies = [LaneItem.from_parent(i.parent, name=i.name, lane=_lane, location=i.location)
               for i in second]
    items[:] = first + proxies


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    outcome = yield
    if isinstance(item, LaneItem):
        rep = outcome.get_result()
        rep.duration = item.durations.get(call.when, 0.0)  # --durations: the worker's, not
        # the wait for it (the first second-lane test waits for most of the worker's run)
        if rep.skipped and item.skip_where and isinstance(rep.longrepr, tuple):
            rep.longrepr = (*item.skip_where, rep.longrepr[2])  # -ra: where it skipped


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _lane is not None:
        _lane.close(keep=exitstatus != 0)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config
                            ) -> None:
    if _lane is not None:
        where = f"; its log: {_lane.log_path}" if exitstatus != 0 else ""
        ends = [r["t"] for r in _lane.results.values() if "t" in r]
        took = f"{max(ends) - _lane.started:.0f} s" if ends else "?"
        terminalreporter.write_line(
            f"second lane: {len(_lane.results)} tests of {', '.join(SECOND_LANE)} ran in a "
            f"second pytest process beside this one (exit status {_lane.proc.returncode}); "
            f"their last result came {took} after the start, this one's own tests took "
            f"{_lane.own_s or 0:.0f} s, then it waited {_lane.waited:.0f} s for their results "
            f"({SWITCH}=0: one process){where}")


# ------------------------------------------------------------------------- in the worker
_reports: dict[str, dict[str, Any]] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    folder = os.environ.get(WORKER)
    if not folder:
        return
    rec = _reports.setdefault(report.nodeid, {"nodeid": report.nodeid, "outcome": "passed",
                                              "when": "", "text": "", "durations": {},
                                              "sections": []})
    rec["durations"][report.when] = report.duration
    if report.failed and rec["outcome"] != "failed":
        rec.update(outcome="failed", when=report.when, text=report.longreprtext,
                   sections=[list(s) for s in report.sections])
    elif report.skipped and rec["outcome"] == "passed":
        where, reason = ((list(report.longrepr[:2]), report.longrepr[2])
                         if isinstance(report.longrepr, tuple) else (None, str(report.longrepr)))
        rec.update(outcome="skipped", when=report.when, text=reason.removeprefix("Skipped: "),
                   where=where)
    if report.when == "teardown":
        rec["t"] = time.time()  # when it ended: the first process sums up the lanes' times
        with open(Path(folder, "results.jsonl"), "a", encoding="utf-8") as fh:
            fh.write(json.dumps(_reports.pop(report.nodeid)) + "\n")
