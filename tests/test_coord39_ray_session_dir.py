"""Finding the session folder of a local Ray instance whose ``ray.init`` did not return runs
inside the handler of that interrupt or error: a Ray without the private helper it asks
(``ray._common.utils``, absent from older versions the pin allows) gives no folder rather
than an ImportError in place of the Ctrl-C."""

import sys
import types

from populations import runners


def test_a_ray_without_its_temp_dir_helper_gives_no_session_folder(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray._common.utils", None)  # its import fails
    assert runners._our_session_dir(types.SimpleNamespace()) is None
