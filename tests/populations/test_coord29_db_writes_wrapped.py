"""Every public LeagueDB method that writes goes through ``_writes`` (lock retries up to
``lock_timeout`` with a warning, then a LeagueDBLockedError naming the file; a full disk a
NoSpaceError; an I/O error a LeagueDBError). 4399d8a moved the decorator of
``fail_running`` onto the new read ``running_runs`` above it, so a failed run's status on a
busy or full database raised sqlite3's raw error (the caller logged it as 'cannot record
the failure'): found in the session's diff review."""

import inspect

from populations.db import LeagueDB

WRITES = ("UPDATE ", "INSERT ", "DELETE ")


def test_each_public_method_that_writes_is_retried_and_named_as_a_write():
    unwrapped = []
    for name, fn in vars(LeagueDB).items():
        if name.startswith("_") or not inspect.isfunction(fn):
            continue
        source = inspect.getsource(inspect.unwrap(fn))
        if any(w in source for w in WRITES) and not hasattr(fn, "__wrapped__"):
            unwrapped.append(name)
    assert unwrapped == []
    assert hasattr(LeagueDB.fail_running, "__wrapped__")
