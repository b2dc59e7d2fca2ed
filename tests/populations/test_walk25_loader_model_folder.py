"""``llm_agents.build`` repeated ``llm_agents.settings``' test of a model folder and its
message; it calls the one check now, and a folder gone since the config was made is refused
in the config's own words."""

from __future__ import annotations

import pytest

KUHN = "openspiel/kuhn_poker"


def test_the_loader_refuses_a_model_folder_gone_since_the_config_in_the_configs_words(tmp_path):
    from llm_agents.build import build_team
    from llm_agents.settings import LLMConfig

    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "tokenizer.json").write_text("{}")  # LLMConfig lists the tokenizer's files too
    (folder / "pytorch_model.bin").write_bytes(b"")  # and its weights (a file listing)
    cfg = LLMConfig(model=str(folder))  # a model folder when the config was checked
    (folder / "config.json").unlink()
    with pytest.raises(ValueError) as loader:
        build_team(cfg, [KUHN])
    with pytest.raises(ValueError) as config:
        LLMConfig(model=str(folder))
    assert str(loader.value) == str(config.value) == (
        f"llm.model={str(folder)!r} could not be loaded (no config.json in it); give 'tiny', a "
        "local model directory or a hub name available here")
