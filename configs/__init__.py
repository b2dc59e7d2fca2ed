"""Hydra config groups shipped with the package (found via ``pkg://configs``)."""
