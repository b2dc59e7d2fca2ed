"""Cooperative tool-use tasks with specialized roles and verifiable rewards.

* ``tool/relay`` (:class:`RelayTask`): a scout and a solver compute ``A op B`` through a
  message and a calculator.
* ``tool/lookup`` (:class:`LookupTask`): a composer answers a question about a key-value
  table that only the querier can read.

Tools (:mod:`games.tool.tools`) evaluate arithmetic through an AST walker (never ``eval``),
limit calls, and report errors as observation text.

    >>> import games
    >>> sorted(n for n in games.registered() if n.startswith("tool/"))
    ['tool/lookup', 'tool/relay']
"""

from games.tool.base import ToolTask
from games.tool.lookup import ELEMENTS, LookupTask
from games.tool.relay import RelayTask
from games.tool.tools import Calculator, KeyValueTable, ToolError, ToolResult, safe_eval

__all__ = [
    "ELEMENTS",
    "Calculator",
    "KeyValueTable",
    "LookupTask",
    "RelayTask",
    "ToolError",
    "ToolResult",
    "ToolTask",
    "safe_eval",
]
