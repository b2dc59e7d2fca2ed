"""The dashboard's web application (Starlette) and a server that runs it in a thread.

``GET /`` is the page; ``static/`` holds its script and style and Plotly's JavaScript,
served from the installed ``plotly`` package (no CDN). ``api/...`` are the JSON documents
listed in :mod:`populations.dashboard.data`. A database that cannot be read answers
``{"error": "<one line>"}`` with status 404 (missing) or 503 (locked, corrupt, not yet
initialised), which the page shows in a banner while it keeps refreshing. Any other failure
answers status 500 with one generic line; its detail (and traceback) goes to the server's
log only, so a page never shows paths or values from inside the server.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import socket
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import plotly
import uvicorn
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from populations.dashboard.data import DashboardData, finite
from populations.dashboard.sources import SourceError

log = logging.getLogger(__name__)

STATIC = Path(__file__).parent / "static"
PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
LOOPBACK = ("127.0.0.1", "localhost", "[::1]")  # Host headers a loopback server accepts
MAX_RUN_ID = 2**63 - 1  # SQLite's largest integer; a larger id names no run
INTERNAL_ERROR = "internal error in the dashboard; the detail is in the dashboard's log"

# Plotly injects <style> elements, so styles may be inline; scripts come only from here.
SECURITY_HEADERS = [
    (b"content-security-policy",
     b"default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
     b"img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; "
     b"base-uri 'none'; frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]


class SecurityHeaders:
    """Adds :data:`SECURITY_HEADERS` to every response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)


class InternalErrors:
    """Answers an unexpected failure with status 500 and :data:`INTERNAL_ERROR`, and logs
    its detail (paths, values, the traceback) on the server only. It sits inside
    :class:`SecurityHeaders`, so the answer has them, and does not re-raise (as a handler
    for ``Exception`` in Starlette's outermost middleware does), so the server neither logs
    the traceback twice nor closes the browser's connection."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def send_tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, send_tracked)
        except Exception as exc:
            if scope["type"] != "http" or started:  # nothing else can be sent now
                raise
            log.error("dashboard request %s failed: %s: %s", scope.get("path", "?"),
                      type(exc).__name__, exc, exc_info=exc)
            await _json({"error": INTERNAL_ERROR}, 500)(scope, receive, send)


def is_loopback(host: str) -> bool:
    """Whether ``host`` (as given to ``--host``) is this machine only: localhost,
    127.0.0.0/8 or ::1."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def trusted_hosts(host: str) -> list[str] | None:
    """The Host headers a server listening on ``host`` accepts: for a loopback address,
    the loopback names and the address itself (a page on another site cannot reach it by
    DNS rebinding); None (any) for other addresses, which are reachable by name anyway."""
    if not is_loopback(host):
        return None
    bare = host.strip("[]").lower()
    return list(dict.fromkeys([*LOOPBACK, f"[{bare}]" if ":" in bare else bare]))


def _json(data: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(finite(data), status_code=status, headers={"cache-control": "no-store"})


def _cached_json(request: Request, data: Any) -> Response:
    """A 200 JSON answer with an ETag (a hash of the body) that the browser revalidates
    every time (``no-cache``), or 304 with no body when its ``If-None-Match`` names the
    same body: a page polling a run that did not change downloads nothing."""
    resp = JSONResponse(finite(data))
    etag = '"' + hashlib.blake2b(resp.body, digest_size=12).hexdigest() + '"'
    headers = {"cache-control": "no-cache", "etag": etag}
    sent = request.headers.get("if-none-match", "")
    if etag in (t.strip().removeprefix("W/") for t in sent.split(",")):
        return Response(status_code=304, headers=headers)
    resp.headers.update(headers)
    return resp


def create_app(paths: Sequence[str | Path], refresh_s: float = 5.0,
               allowed_hosts: Sequence[str] | None = None, max_points: int | None = None
               ) -> Starlette:
    """The dashboard for the databases named by ``paths`` (files, run folders, folders of
    runs). ``allowed_hosts`` limits the Host header (guards a loopback server against DNS
    rebinding); None accepts any."""
    data = DashboardData(paths, refresh_s, **({"max_points": max_points} if max_points else {}))

    def index(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"cache-control": "no-store"})

    def plotly_js(request: Request) -> Response:
        return FileResponse(PLOTLY_JS, media_type="text/javascript",
                            headers={"cache-control": "max-age=86400"})

    def config(request: Request) -> Response:
        return _json(data.config())

    def runs(request: Request) -> Response:
        return _cached_json(request, data.runs())

    def sweeps(request: Request) -> Response:
        return _cached_json(request, data.sweeps())

    def run_id(request: Request) -> int:
        run = request.path_params["run"]
        if run > MAX_RUN_ID:  # SQLite cannot even compare it
            raise SourceError(f"no run {run}: run ids are at most {MAX_RUN_ID}", 404)
        return run

    def run(request: Request) -> Response:
        return _cached_json(request, data.run(request.path_params["source"], run_id(request)))

    def view(request: Request) -> Response:
        p = request.path_params
        compact = request.query_params.get("compact", "") in ("1", "true")
        rows = request.query_params.get("rows")
        if rows is not None and not (rows.isascii() and rows.isdigit()
                                     and 0 < len(rows) < 10 and int(rows) > 0):
            raise SourceError("rows=N takes a whole number of rows from 1", 400)
        return _cached_json(request, data.view(p["source"], run_id(request), p["view"], compact,
                                               None if rows is None else int(rows)))

    def metrics(request: Request) -> Response:
        p = request.path_params
        keys = request.query_params.getlist("key")
        if not keys:
            raise SourceError(  # a league's keys are per member (main/losses/pg_loss)
                "pass one or more metric keys, metrics?key=<key>: the run's keys are the "
                "'keys' of its learner view, api/runs/<source>/<run>/learner", 400)
        return _cached_json(request, data.metrics(p["source"], run_id(request), keys))

    def health(request: Request) -> Response:
        return _json({"ok": True, "time": time.time()})

    async def on_source_error(request: Request, exc: Exception) -> Response:
        status = exc.status if isinstance(exc, SourceError) else 500
        return _json({"error": str(exc)}, status)

    routes = [
        Route("/", index),
        Route("/static/plotly.min.js", plotly_js),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
        Route("/api/health", health),
        Route("/api/config", config),
        Route("/api/runs", runs),
        Route("/api/sweeps", sweeps),
        Route("/api/runs/{source}/{run:int}", run),
        Route("/api/runs/{source}/{run:int}/metrics", metrics),
        Route("/api/runs/{source}/{run:int}/{view}", view),
    ]
    middleware = [Middleware(SecurityHeaders), Middleware(InternalErrors)]
    if allowed_hosts is not None:
        middleware.insert(0, Middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts)))
    return Starlette(routes=routes, middleware=middleware,
                     exception_handlers={SourceError: on_source_error})


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: a free one); OSError if it is taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def _checks_hosts(app: ASGIApp) -> bool:
    """Whether ``app`` was made with a Host check of its own (``create_app(allowed_hosts=)``)."""
    return any(getattr(m, "cls", None) is TrustedHostMiddleware
               for m in getattr(app, "user_middleware", ()))


_APP_OR_LOOPBACK: Any = object()  # BackgroundServer's default allowed_hosts


class BackgroundServer:
    """Serves ``app`` from a thread on ``host`` (a free port unless given); a context manager.
    ``allowed_hosts``: the Host headers it serves. By default an app made with
    ``create_app(allowed_hosts=...)`` keeps its own list; any other app, on a loopback
    ``host``, accepts only loopback Host headers (:func:`trusted_hosts`), as
    ``selfplay-dashboard`` does, so a web page cannot read it by DNS rebinding. Behind a
    proxy that keeps the browser's Host (a notebook's server proxy), name that host here or
    in ``create_app``; None accepts any.

    Example::

        with BackgroundServer(create_app(["runs/league"])) as server:
            print(server.url)
    """

    def __init__(self, app: ASGIApp, host: str = "127.0.0.1", port: int = 0,
                 start_timeout_s: float = 10.0,
                 allowed_hosts: Sequence[str] | None = _APP_OR_LOOPBACK) -> None:
        if allowed_hosts is _APP_OR_LOOPBACK:
            allowed_hosts = None if _checks_hosts(app) else trusted_hosts(host)
        if allowed_hosts is not None:
            app = TrustedHostMiddleware(app, allowed_hosts=list(allowed_hosts))
        self.sock = bind(host, port)
        self.host, self.port = host, self.sock.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]},
                                       name="dashboard-server", daemon=True)
        self.start_timeout_s = start_timeout_s

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> BackgroundServer:
        self.thread.start()
        deadline = time.monotonic() + self.start_timeout_s
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"dashboard server did not start on {self.url}")
            time.sleep(0.02)
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        self.server.should_exit = True
        if self.thread.is_alive():
            self.thread.join(timeout_s)
        self.sock.close()

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
