"""``selfplay-dashboard``: serve the league dashboard, or export it as one HTML file.

Examples::

    selfplay-dashboard runs/league                 # http://127.0.0.1:8050, live
    selfplay-dashboard runs/                       # every run folder below runs/
    selfplay-dashboard a/league.db b/ --port 9000
    selfplay-dashboard runs/league --export report.html
"""

from __future__ import annotations

import argparse
import errno
import ipaddress
import logging
import math
import re
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import uvicorn

from populations.cli_common import OneLineParser, integer
from populations.dashboard.app import bind, create_app, is_loopback, trusted_hosts
from populations.dashboard.data import DashboardData, source_status
from populations.dashboard.export import ExportError, export_html, new_folder
from populations.dashboard.sources import SCAN_DEPTH, Source

DEFAULT_PORT = 8050
MAX_REFRESH = 2_147_483  # seconds: a browser's longest timer (2**31 - 1 ms; longer fires at once)


def _seconds(text: str) -> float:
    """``--refresh``: seconds between the page's reloads. nan and inf were accepted:
    /api/config said null and the page polled at once (``setTimeout(tick, 0)``), as a browser
    does past its longest timer."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value <= MAX_REFRESH:  # False for nan
        raise argparse.ArgumentTypeError(
            f"{text}: expected a number of seconds > 0 and <= {MAX_REFRESH} (about "
            "24 days, a browser's longest timer)")
    return value


def _bounded(low: int, high: int | None, accepted: str) -> Callable[[str], int]:
    """An argparse ``type``: an integer ``low <= n (<= high)``, else one line naming the value
    and ``accepted``, in argparse's words whether it is no integer or one out of range, as
    ``selfplay-demo``'s (``--port 99999`` said ``--port 99999: ...``, ``--port abc``
    ``argument --port: 'abc': ...``)."""
    as_int = integer(accepted)

    def convert(text: str) -> int:
        value = as_int(text)
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"{value}: expected {accepted}")
        return value

    convert.__name__ = "int"
    return convert


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = OneLineParser(  # one line, exit 2, as selfplay-train and selfplay-eval (not usage + error)
        prog="selfplay-dashboard",
        description="Live web dashboard of league databases (read-only).")
    p.add_argument("paths", nargs="*", default=["."], metavar="RUN_DIR_OR_DB",
                   help="league.db files, run folders, or folders of runs (default: .)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=_bounded(0, 65535, "0-65535"), default=DEFAULT_PORT,
                   help="port (default %(default)s)")
    p.add_argument("--refresh", type=_seconds, default=5.0, metavar="SECONDS",
                   help="how often the page reloads the data (default %(default)s)")
    p.add_argument("--export", metavar="FILE.html",
                   help="write a static HTML report of every run and exit")
    p.add_argument("--max-points", type=_bounded(2, None, "an integer >= 2"),
                   default=400,
                   help="points per learner curve (longer histories are averaged)")
    args = p.parse_args(argv)
    if not args.host.strip():  # uvicorn and bind() would listen on every interface
        p.error(f"--host {args.host!r} is empty; give an address: 127.0.0.1 (this machine, the "
                "default), or 0.0.0.0 if you mean every interface")
    for raw in args.paths:  # a name the system cannot look up (too long, a loop): one line
        try:
            Path(raw).expanduser().stat()
        except (FileNotFoundError, NotADirectoryError):
            pass  # a run not started yet: served, with its "not found" line
        except OSError as err:
            shown = raw if len(raw) <= 80 else f"{raw[:60]}...({len(raw)} characters)"
            p.error(f"{shown}: {err.strerror or err}; expected a run folder, a league.db file "
                    "or a folder of runs")
    return args


PROG = "selfplay-dashboard"
STOP_SIGNALS = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM"}  # what stops the server


class Stopped(Exception):
    """The server stopped on a signal (``signum``) other than a Ctrl-C."""

    def __init__(self, signum: int) -> None:
        super().__init__(STOP_SIGNALS.get(signum, f"signal {signum}"))
        self.signum = signum


def _warn_wide_scans(paths: list[str]) -> None:
    """A warning for a path that is the whole filesystem or the home folder: every refresh
    searches it :data:`SCAN_DEPTH` folders deep (``selfplay-dashboard /`` took seconds per
    request)."""
    for raw in paths:
        try:
            where = Path(raw).expanduser().resolve()
        except (OSError, RuntimeError):
            continue
        what = ("the whole filesystem" if where == Path(where.anchor)
                else "your home folder" if where == Path.home() else None)
        if what:
            print(f"{PROG}: warning: {where} is {what}: every refresh searches it "
                  f"{SCAN_DEPTH} folders deep for league.db files; name the folder of your "
                  "runs instead (runs/, multirun/)", file=sys.stderr)


def _urls(host: str, port: int) -> tuple[str, str | None]:
    """The URL to open on this machine, and for an address reachable from others the one
    to give them (None for a loopback address). A wildcard address (0.0.0.0, ::) is no
    address to open: this machine's loopback and its host name stand for it."""
    try:
        wildcard = ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        wildcard = False
    def url(h: str) -> str:
        return f"http://[{h}]:{port}/" if ":" in h else f"http://{h}:{port}/"
    if wildcard:
        return url("::1" if ":" in host else "127.0.0.1"), url(socket.gethostname())
    return url(host.strip("[]")), None if is_loopback(host) else url(host.strip("[]"))


def _status(src: Source) -> tuple[bool, str]:
    """``src``'s one-line status and whether it is a readable database (``<path>: N runs``);
    any other line is said with the command's name (``league database not found`` had
    none)."""
    line = source_status(src)
    return re.fullmatch(re.escape(f"{src.path}: ") + r"\d+ runs?", line) is not None, line


def _export(data: DashboardData, out: str) -> int:
    sources = data.sources.all()
    if not any(src.path.is_file() for src in sources):  # an empty folder: a page of no run
        first = _status(sources[0])[1] if sources else "no league database given"
        more = f" (and {len(sources) - 1} more)" if len(sources) > 1 else ""
        print(f"{PROG}: --export {out}: nothing to export: {first}{more}", file=sys.stderr)
        return 2  # nothing written (a file there stays)
    try:
        made = new_folder(out)  # export_html checks out before it reads the databases
        answers = export_html(data, out)
    except ExportError as err:
        print(f"{PROG}: {err}", file=sys.stderr)
        return 2
    if made is not None:  # /results/r.html, $OUT/r.html with OUT unset: made without a word
        unset = " (if you meant $VAR/..., VAR is unset)" if str(made.parent) == made.anchor else ""
        print(f"{PROG}: note: --export {out} made the new folder {made}{unset}",
              file=sys.stderr)
    runs, errors = answers["api/runs"]["runs"], answers["api/runs"]["errors"]
    for e in errors:
        print(f"{PROG}: warning: {e['error']}", file=sys.stderr)
    print(f"wrote {out}: {len(runs)} run{'s' if len(runs) != 1 else ''}")
    return 0 if runs or not errors else 1


def _main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    data = DashboardData(args.paths, args.refresh, args.max_points)
    if args.export:
        return _export(data, args.export)
    _warn_wide_scans(args.paths)
    for src in data.sources.all():
        readable, line = _status(src)
        print(line if readable else f"{PROG}: {line}")  # not found, unreadable: its name
    try:
        sock = bind(args.host, args.port)
    except OSError as err:
        # a taken or privileged port: another --port; an address this machine lacks: --host
        fix = ("pass another --port (0 picks a free one)"
               if err.errno in (errno.EADDRINUSE, errno.EACCES) else
               "pass an address of this machine as --host (127.0.0.1 is the default)")
        print(f"selfplay-dashboard: cannot listen on {args.host}:{args.port} ({err.strerror}); "
              f"{fix}", file=sys.stderr)
        return 2
    port = sock.getsockname()[1]
    # a loopback server checks the Host header, so a web page cannot reach it by DNS rebinding
    hosts = trusted_hosts(args.host)
    app = create_app(args.paths, args.refresh, allowed_hosts=hosts, max_points=args.max_points)
    here, remote = _urls(args.host, port)
    if remote is not None:  # said once, before the first request
        print(f"{PROG}: warning: --host {args.host} serves these runs to anyone who can reach "
              f"{remote} (the dashboard has no authentication); to view it from another "
              f"machine, keep the default 127.0.0.1 and use an SSH tunnel: "
              f"ssh -L {port}:127.0.0.1:{port} <this machine>", file=sys.stderr, flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    with _ctrl_c_stops(server) as pressed:
        print(f"league dashboard on {here} (Ctrl-C stops it)", flush=True)
        server.run(sockets=[sock])
    if pressed and pressed[0] == signal.SIGINT:
        raise KeyboardInterrupt
    if pressed:
        raise Stopped(pressed[0])
    return 0


@contextmanager
def _ctrl_c_stops(server: uvicorn.Server) -> Iterator[list[int]]:
    """Ctrl-C (or SIGTERM, from ``kill`` or a service manager) asks ``server`` to stop
    instead of raising KeyboardInterrupt inside asyncio: uvicorn re-raises the signal it
    caught once it has shut down (two tracebacks, CancelledError and KeyboardInterrupt; a
    SIGTERM ended in uvicorn's own log lines), and one pressed while it starts broke the
    event loop's setup. The list
    yielded holds the signal once it came; a second one raises (a shutdown that hangs)."""
    pressed: list[int] = []

    def stop(signum: int, frame: object) -> None:
        if pressed:
            raise KeyboardInterrupt
        pressed.append(signum)
        server.should_exit = True

    if threading.current_thread() is not threading.main_thread():  # signals: main thread only
        yield pressed
        return
    previous = {sig: signal.signal(sig, stop) for sig in STOP_SIGNALS}
    try:
        yield pressed
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def main(argv: list[str] | None = None) -> int:
    """Ctrl-C stops the command in one line, status 130 as a shell's (no traceback); SIGTERM
    in the same line naming it, status 143 (128 + 15)."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("selfplay-dashboard: stopped (Ctrl-C)", file=sys.stderr)
        return 130
    except Stopped as stop:
        print(f"selfplay-dashboard: stopped ({stop})", file=sys.stderr)
        return 128 + stop.signum


if __name__ == "__main__":
    sys.exit(main())
