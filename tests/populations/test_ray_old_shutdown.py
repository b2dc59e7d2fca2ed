"""``ray.shutdown(wait_for_processes=True)`` exists only since Ray 2.60 (mid-2026), and
pyproject allows ``ray[default]>=2.9``: on an older Ray every local run ended with a
``TypeError`` traceback from the exit handler that removes its session folder (review 27).
An older Ray does not install here; its ``shutdown`` signature stands in for it."""

from __future__ import annotations

from populations import runners


class _OldRay:
    """What the exit handler calls of ``ray``: ``shutdown`` as Ray before 2.60 had it."""

    def __init__(self) -> None:
        self.shutdowns = 0

    def shutdown(self, _exiting_interpreter: bool = False) -> None:
        self.shutdowns += 1


def test_an_older_rays_shutdown_still_removes_the_session_folder(tmp_path, monkeypatch):
    handlers = []
    monkeypatch.setattr(runners.atexit, "register", handlers.append)
    session = tmp_path / "session_2026-12-06_05-00-00_123_456"
    (session / "logs").mkdir(parents=True)
    (tmp_path / "session_latest").symlink_to(session)
    ray = _OldRay()
    runners._remove_session_at_exit(ray, str(session))
    (remove,) = handlers
    remove()  # before: TypeError: shutdown() got an unexpected keyword argument
    assert ray.shutdowns == 1
    assert not session.exists() and not (tmp_path / "session_latest").exists()
