"""Hydra config groups shipped with the package (found via ``pkg://configs``).

Hydra imports this package whenever it reads these files, so this is where the schema
that ``config.yaml`` composes over (``defaults: - schema``) is registered: every way of
composing (``selfplay-train``, ``hydra.compose`` in a script or test) finds it, and
``selfplay-train --help`` (which reads the files without importing the package) stays fast.
Registering it imports no torch (:mod:`populations.experiment_config`): a composed config
(``--cfg job``) loads no learner; the learners load when the experiment is made from it.
"""

from populations.train_overrides import register_schema

register_schema()
