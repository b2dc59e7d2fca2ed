"""The league dashboard: a local web page that reads league databases while runs write them.

``selfplay-dashboard RUN_DIR_OR_DB ...`` serves it (:mod:`populations.dashboard.cli`);
:func:`create_app` builds the Starlette application, :class:`BackgroundServer` runs one in
a thread (tests, notebooks), :func:`export_html` writes a static report that opens
without the server. Databases are only ever opened read-only.
"""

from populations.dashboard.app import BackgroundServer, create_app
from populations.dashboard.data import DashboardData
from populations.dashboard.export import export_html

__all__ = ["BackgroundServer", "DashboardData", "create_app", "export_html"]
