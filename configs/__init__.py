"""Hydra config groups shipped with the package (found via ``pkg://configs``).

Hydra imports this package whenever it reads these files, so this is where the schema
that ``config.yaml`` composes over (``defaults: - schema``) is registered: every way of
composing (``selfplay-train``, ``hydra.compose`` in a script or test) finds it, and
``selfplay-train --help`` (which reads the files without importing the package) stays fast.
"""

from populations.train_overrides import register_schema

register_schema()
