"""What an LLM run's settings said nothing about (user-path walk, fix26g).

* ``llm.role_prompts`` was passed to the team unchecked: ``+llm.role_prompts.scuot=hi`` ran
  without the prompt and without a word, and so did a preset's prompts for roles the game
  lacks (``experiment=tool_team_llm`` on a user's task with other roles). A key that
  misspells one of the game's roles is refused in one line naming them; keys naming no role
  of the game (a preset's, which Hydra cannot drop from the command line) are named in a
  warning that says how to give the game's own.
* ``llm.model=<dir>`` without ``llm=hf`` trained a real model with the tiny model's preset
  (lr 1e-3, score mode, bare prompts) silently: now one warning line names them and llm=hf.
* ``llm.model=/path/to/model/config.json`` said ``(no such directory)``: it says it is a
  file and gives its folder. A folder without a tokenizer was refused only once torch and
  transformers had loaded (~35 s): the file listing refuses it with the config's checks.
* A GRPO iteration reports its progress (:class:`llm_agents.trainer.StepProgress`): episodes,
  turns and tokens while it plays, minibatches while it updates.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

from llm_agents.build import build_team
from llm_agents.settings import LLMConfig, TinyModelConfig
from llm_agents.tiny import build_model, save_model_dir

from .conftest import COMPACT, KUHN, RELAY

RELAY_GAME = "tool/relay"
SMALL = TinyModelConfig(n_layer=1, n_embd=16, n_head=2)


def _cfg(**kw) -> LLMConfig:
    return LLMConfig(tiny=SMALL, corpus_episodes=5, **kw)


def _compose(overrides: list[str]):
    with initialize_config_module(config_module="configs", version_base=None):
        return OmegaConf.to_object(compose(config_name="config", overrides=overrides))


def _warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING
            and r.name == "llm_agents.build"]


# ------------------------------------------------------------------------- role prompts
def test_a_misspelled_role_prompt_is_refused_naming_the_games_roles():
    cfg = _cfg(team="per_role", role_prompts={"scout": "send A", "solver": "calc",
                                              "scuot": "hi"})
    with pytest.raises(ValueError) as err:
        build_team(cfg, [RELAY_GAME], {RELAY_GAME: RELAY})
    assert str(err.value) == ("llm.role_prompts has role 'scuot' (did you mean 'scout'?); "
                              "tool/relay's roles are scout, solver")


def test_the_shared_team_is_checked_too():
    with pytest.raises(ValueError, match=r"^llm.role_prompts has role 'player_2' \(did you mean "
                                         r"'player_\d'\?\); openspiel/kuhn_poker's roles are "
                                         r"player_0, player_1$"):
        build_team(_cfg(role_prompts={"player_2": "x"}), [KUHN])


def test_prompts_for_another_games_roles_are_named_in_a_warning(caplog):
    """experiment=tool_team_llm on another game: the preset's relay prompts are not used."""
    cfg = _compose(["experiment=tool_team_llm", "game=kuhn"]).llm
    assert dict(cfg.role_prompts) == {"scout": "send A", "solver": "compute with the calculator"}
    with caplog.at_level(logging.WARNING, logger="llm_agents.build"):
        team = build_team(_small(cfg), [KUHN])
    assert _warnings(caplog) == [
        "llm.role_prompts has prompts for scout, solver, roles openspiel/kuhn_poker does not "
        "have: they are not used (openspiel/kuhn_poker's roles are player_0, player_1); give "
        "theirs with '+llm.role_prompts={player_0: ..., player_1: ...}'"]
    assert sorted(team.models) == ["player_0", "player_1"]


def test_the_warnings_way_of_giving_the_games_prompts_works(caplog):
    """The override the warning gives composes (Hydra merges it into the preset's prompts) and
    reaches the game's roles; the preset's are still named, and not refused."""
    cfg = _compose(["experiment=tool_team_llm", "game=kuhn",
                    "+llm.role_prompts={player_0: you deal, player_1: you answer}"]).llm
    with caplog.at_level(logging.WARNING, logger="llm_agents.build"):
        team = build_team(_small(cfg), [KUHN])
    assert team.binding("player_0").prompt == "you deal"
    assert team.binding("player_1").prompt == "you answer"
    (line,) = _warnings(caplog)
    assert line.startswith("llm.role_prompts has prompts for scout, solver, roles ")
    assert "give theirs" not in line  # every role of the game has its prompt


def test_prompts_for_the_games_roles_say_nothing(caplog):
    cfg = _cfg(team="per_role", role_prompts={"scout": "send A", "solver": "calc"})
    with caplog.at_level(logging.WARNING, logger="llm_agents.build"):
        build_team(cfg, [RELAY_GAME], {RELAY_GAME: RELAY})
    assert _warnings(caplog) == []


def _small(cfg: LLMConfig) -> LLMConfig:
    import dataclasses

    return dataclasses.replace(cfg, tiny=SMALL, corpus_episodes=5)


# ------------------------------------------------------------------ a real model, tiny preset
@pytest.fixture
def model_folder(tmp_path, kuhn_tok) -> Path:
    model = build_model(kuhn_tok, TinyModelConfig(n_layer=1, n_embd=16, n_head=2))
    return save_model_dir(tmp_path / "model", model, kuhn_tok)


def test_tiny_prompt_is_the_tiny_presets():
    """TINY_PROMPT is how a config is recognised as llm=tiny's (tiny_kuhn inherits it)."""
    from llm_agents.settings import TINY_PROMPT

    for preset in ("tiny", "tiny_kuhn"):
        prompt = _compose(["algo=llm_grpo", "game=kuhn", f"llm={preset}"]).llm.grpo.prompt
        assert (prompt.system, prompt.user) == TINY_PROMPT
    assert (COMPACT.system, COMPACT.user) == TINY_PROMPT


def test_a_model_of_yours_under_the_tiny_preset_is_named_with_llm_hf(model_folder, caplog):
    cfg = _compose(["algo=llm_grpo", "game=kuhn", f"llm.model={model_folder}"]).llm
    with caplog.at_level(logging.WARNING, logger="llm_agents.build"):
        build_team(cfg, [KUHN])
    assert _warnings(caplog) == [
        f"llm.model={str(model_folder)!r} runs with the tiny model's settings (llm=tiny's lr "
        "0.001, action mode score, bare prompts '{role}' / '{observation} : {legal}'); llm=hf "
        "holds the settings for a real model (lr 1e-6, prompts with the rules, generate mode): "
        "add llm=hf"]
    hf = _compose(["algo=llm_grpo", "game=kuhn", "llm=hf", f"llm.model={model_folder}"]).llm
    assert hf.tiny_settings_note() is None
    assert _compose(["algo=llm_grpo", "game=kuhn"]).llm.tiny_settings_note() is None  # tiny


# ----------------------------------------------------------------------- model paths
def test_a_config_json_path_is_a_file_and_its_folder_is_named(model_folder):
    path = model_folder / "config.json"
    with pytest.raises(ValueError) as err:
        LLMConfig(model=str(path))
    assert str(err.value) == (f"llm.model={str(path)!r} could not be loaded (it is a file, not "
                              f"a model folder); give the folder that holds it: "
                              f"llm.model={str(model_folder)!r}")


def test_a_folder_without_a_tokenizer_is_refused_by_the_config(model_folder):
    """A file listing, as the missing folder's: before torch and transformers load."""
    for f in model_folder.iterdir():
        if f.name.startswith(("tokenizer", "special_tokens", "vocab", "chat_template")):
            f.unlink()
    with pytest.raises(ValueError) as err:
        LLMConfig(model=str(model_folder))
    assert str(err.value) == (
        f"llm.model={str(model_folder)!r} could not be loaded (it has no tokenizer files: none "
        "of tokenizer.json, tokenizer_config.json, vocab.json, tokenizer.model); save the "
        "tokenizer into the model folder too (tokenizer.save_pretrained(folder))")


def test_the_configs_tokenizer_files_are_the_loaders():
    from llm_agents.backends.hf import TOKENIZER_FILES
    from llm_agents.settings import TOKENIZER_FILES as LISTED

    assert LISTED == TOKENIZER_FILES


# ------------------------------------------------------------------------ progress
def test_an_iteration_reports_its_rollout_and_update(kuhn_tok, make_model):
    from llm_agents.actions import ActionConfig
    from llm_agents.team import Team
    from llm_agents.trainer import GRPOConfig, MultiTurnGRPO

    cfg = GRPOConfig(group_size=2, groups_per_step=3, minibatch_turns=4, epochs=2, lr=1e-3,
                     action=ActionConfig(mode="score"), prompt=COMPACT, device="cpu")
    trainer = MultiTurnGRPO(Team.shared(make_model(kuhn_tok), kuhn_tok), KUHN, cfg)
    seen = []
    trainer.on_progress = seen.append
    batch = trainer.collect()  # step()'s two phases
    rollout = list(seen)
    metrics = trainer.update(batch)
    update = seen[len(rollout):]
    assert {p.phase for p in rollout} == {"rollout"} and {p.phase for p in update} == {"update"}
    assert len(rollout) > 1 and all(p.total == 6 for p in rollout)
    assert [p.done for p in rollout] == sorted(p.done for p in rollout)
    last = rollout[-1]
    assert (last.done, last.turns) == (6, len(batch.turns))
    assert last.tokens == sum(len(t.decision.completion_ids) for t in batch.turns)
    minibatches = 2 * -(-int(metrics["charts/trained_turns"]) // 4)
    assert [p.done for p in update] == list(range(minibatches + 1))
    assert {p.total for p in update} == {minibatches}
    assert last.text() == f"rollout 6/6 episodes, {last.turns} turns, {last.tokens} tokens"
    assert update[-1].text() == f"update {minibatches}/{minibatches} minibatches"
    trainer.on_progress = None
    seen.clear()
    trainer.step()
    assert seen == []


def test_a_rollout_actors_copy_of_the_team_leaves_the_warnings_to_the_driver(caplog):
    """Each Ray rollout actor builds the driver's team again: with warn=False (its call) the
    settings' warnings are not repeated once per actor (review)."""
    cfg = _compose(["experiment=tool_team_llm", "game=kuhn"]).llm
    with caplog.at_level(logging.WARNING, logger="llm_agents.build"):
        build_team(_small(cfg), [KUHN], warn=False)
    assert _warnings(caplog) == []
