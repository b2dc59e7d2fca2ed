"""A user's model folder that cannot serve is one line, exit 2, no traceback (walk 24).

* A prompt plus ``max_new_tokens`` longer than the model's context (its config's
  ``max_position_embeddings``, GPT-2's ``n_positions``): ``IndexError: index out of range in
  self`` and a traceback at the first iteration. Now ``max_new_tokens`` alone at or over the
  context is refused when the team is built, and a prompt that leaves too little room is named
  (its tokens, ``max_new_tokens`` or its candidate's tokens, the context) at the first one.
* A folder saved without its tokenizer: AutoTokenizer built an empty GPT2Tokenizer (text
  encodes to no ids), then ``RuntimeError: cannot reshape tensor of 0 elements``. A folder
  holding a ``BertModel``: loaded as ``BertLMHeadModel`` with a random head, then an index
  error. Now one line each, on the command line and in the Python API.
* A run resumed after its model folder changed (another model, or another tokenizer of the
  same size): "checkpoint ... does not fit this llm_grpo learner (RuntimeError: Error(s) in
  loading state_dict for GPT2LMHeadModel:); resume with the run's settings" -- whose settings
  had not changed. Now the line names the folder as changed since the checkpoint, and the
  first tensor (or the tokenizer) that differs.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from llm_agents.backends.base import SamplingConfig
from llm_agents.backends.hf import TransformersBackend, load_pretrained
from llm_agents.tiny import TinyModelConfig, build_model, save_model_dir
from tests.populations.test_walk18_cli_more import _train

FAST = ["algo=llm_grpo", "game=kuhn", "llm.iterations=2", "llm.grpo.group_size=2",
        "llm.grpo.groups_per_step=2", "llm.grpo.minibatch_turns=4", "eval_episodes=2",
        "progress=false", "logger=none", "checkpoint_every_s=0"]


def _folder(root: Path, tok, n_positions: int = 512, n_embd: int = 16) -> Path:
    model = build_model(tok, TinyModelConfig(n_layer=1, n_embd=n_embd, n_head=2,
                                             n_positions=n_positions))
    return save_model_dir(root, model, tok)


def _refused(argv: list[str], monkeypatch, tmp_path: Path, capsys) -> str:
    """``selfplay-train argv`` in this process: exit 2 and its one line on stderr."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        _train(argv, monkeypatch, tmp_path)
    err = capsys.readouterr().err
    lines = [x for x in err.strip().splitlines() if x.startswith("selfplay-train: ")]
    assert stop.value.code == 2 and len(lines) == 1, err
    assert "Traceback" not in err, err
    return lines[0]


# ----------------------------------------------------------------------------- context
def test_max_new_tokens_over_the_context_is_refused_when_the_team_is_built(
        tmp_path, monkeypatch, capsys, kuhn_tok):
    folder = _folder(tmp_path / "m64", kuhn_tok, n_positions=64)
    line = _refused([*FAST, "llm=hf", f"llm.model={folder}", f"hydra.run.dir={tmp_path / 'r'}"],
                    monkeypatch, tmp_path, capsys)  # llm=hf: max_new_tokens 256
    assert "llm.grpo.action.sampling.max_new_tokens=256" in line, line
    assert "context of 64 positions" in line and str(folder) in line, line
    assert not (tmp_path / "r" / "checkpoints").exists()


def test_a_prompt_too_long_for_the_context_is_named_at_the_first_one(
        tmp_path, monkeypatch, capsys, kuhn_tok):
    folder = _folder(tmp_path / "m64", kuhn_tok, n_positions=64)
    line = _refused([*FAST, "llm=hf", f"llm.model={folder}",  # the rules alone are longer
                     "llm.grpo.action.sampling.max_new_tokens=8",
                     f"hydra.run.dir={tmp_path / 'r'}"], monkeypatch, tmp_path, capsys)
    assert "a prompt of " in line and " tokens plus max_new_tokens=8 " in line, line
    assert "context of 64 positions" in line and "max_position_embeddings" in line, line
    assert "llm.grpo.prompt" in line, line


def test_a_prompt_too_long_for_a_candidate_in_score_mode_is_named(
        tmp_path, monkeypatch, capsys, kuhn_tok):
    folder = _folder(tmp_path / "m64", kuhn_tok, n_positions=64)
    line = _refused([*FAST, "llm=hf", f"llm.model={folder}", "llm.grpo.action.mode=score",
                     f"hydra.run.dir={tmp_path / 'r'}"], monkeypatch, tmp_path, capsys)
    assert "a prompt of " in line and "candidate action of " in line, line
    assert "context of 64 positions" in line, line


def test_a_tiny_models_short_context_is_named_too(tmp_path, monkeypatch, capsys):
    line = _refused(["experiment=tool_team_llm", "llm.tiny.n_positions=40", "llm.iterations=1",
                     "llm.corpus_episodes=20", "eval_episodes=2", "progress=false",
                     "logger=none", f"hydra.run.dir={tmp_path / 'r'}"],
                    monkeypatch, tmp_path, capsys)
    assert "context of 40 positions" in line and "candidate action of " in line, line
    assert "llm.tiny.n_positions" in line, line  # tool_team_llm scores its actions


def test_the_backend_takes_the_context_exactly_and_refuses_one_more(kuhn_tok):
    model = build_model(kuhn_tok, TinyModelConfig(n_layer=1, n_embd=16, n_head=2, n_positions=12))
    backend = TransformersBackend(model, kuhn_tok, seed=0)
    sampling = SamplingConfig(max_new_tokens=4, stop=(), stop_at_eos=False)
    (gen,) = backend.generate_ids([[3] * 8], sampling)  # 8 + 4 = 12: fits
    assert len(gen.token_ids) == 4
    with pytest.raises(ValueError, match=r"^a prompt of 9 tokens plus max_new_tokens=4 does not "
                                         r"fit the model's context of 12 positions"):
        backend.generate_ids([[3] * 2, [3] * 9], sampling)
    assert backend.score_ids([[3] * 9], [[[4, 4, 4]]])[0].shape == (1,)
    with pytest.raises(ValueError, match=r"^a prompt of 10 tokens plus its candidate action of "
                                         r"3 tokens does not fit the model's context of 12"):
        backend.score_ids([[3] * 10], [[[4], [4, 4, 4]]])


# ----------------------------------------------------------------------- model folders
@pytest.fixture
def no_tokenizer(tmp_path, kuhn_tok):
    folder = _folder(tmp_path / "notok", kuhn_tok)
    for f in folder.iterdir():
        if f.name.startswith(("tokenizer", "special_tokens", "vocab", "chat_template")):
            f.unlink()
    assert sorted(f.name for f in folder.iterdir()) == ["config.json", "generation_config.json",
                                                          "model.safetensors"]
    return folder


@pytest.fixture
def bert(tmp_path, kuhn_tok):
    from transformers import BertConfig, BertModel

    folder = tmp_path / "bert"
    BertModel(BertConfig(vocab_size=len(kuhn_tok), hidden_size=16, num_hidden_layers=1,
                         num_attention_heads=2, intermediate_size=32)).save_pretrained(folder)
    kuhn_tok.save_pretrained(folder)
    return folder


def test_a_folder_without_a_tokenizer_is_one_line(no_tokenizer, tmp_path, monkeypatch, capsys):
    line = _refused([*FAST, "llm=hf", f"llm.model={no_tokenizer}",
                     "llm.grpo.action.sampling.max_new_tokens=8",
                     f"hydra.run.dir={tmp_path / 'r'}"], monkeypatch, tmp_path, capsys)
    # the config's check (a file listing, fix26g), before the run folder and transformers
    assert line.startswith(f"selfplay-train: bad config: llm.model={str(no_tokenizer)!r} could "
                           "not be loaded (it has no tokenizer files: none of tokenizer.json, "
                           ), line
    assert "tokenizer.save_pretrained" in line, line
    assert not (tmp_path / "r").exists()


def test_a_folder_holding_a_bert_model_is_one_line(bert, tmp_path, monkeypatch, capsys):
    line = _refused([*FAST, "llm=hf", f"llm.model={bert}",
                     "llm.grpo.action.sampling.max_new_tokens=8",
                     f"hydra.run.dir={tmp_path / 'r'}"], monkeypatch, tmp_path, capsys)
    assert f"llm.model={str(bert)!r} could not be loaded (it holds a BertModel, not a causal " \
           "language model" in line, line
    assert "ForCausalLM" in line, line


def test_the_python_api_refuses_both_in_one_line(no_tokenizer, bert):
    with pytest.raises(ValueError, match=r"^'.*notok' could not be loaded \(it has no tokenizer "
                                         r"files: none of tokenizer\.json, "):
        load_pretrained(str(no_tokenizer), device="cpu")
    with pytest.raises(ValueError, match=r"^'.*bert' could not be loaded \(it holds a BertModel, "
                                         r"not a causal language model"):
        TransformersBackend.from_pretrained(str(bert), device="cpu")


def test_a_good_folder_still_loads_in_the_python_api(tmp_path, kuhn_tok):
    model, tok = load_pretrained(str(_folder(tmp_path / "ok", kuhn_tok)), device="cpu")
    assert type(model).__name__ == "GPT2LMHeadModel" and len(tok) == len(kuhn_tok)


# --------------------------------------------------------------------------- resume
def _stopped_after_a_checkpoint(argv, monkeypatch, tmp_path):
    """Train ``argv`` until its first checkpoint is written, then Ctrl-C (exit 130)."""
    import populations.single_run as single_run

    real, calls = single_run.save_checkpoint, []

    def save(folder, step, state, keep=3, **kw):
        calls.append(step)
        real(folder, step, state, keep, **kw)
        if len(calls) == 1:
            raise KeyboardInterrupt

    monkeypatch.setattr(single_run, "save_checkpoint", save)
    with pytest.raises(SystemExit) as stop:
        _train(argv, monkeypatch, tmp_path)
    assert stop.value.code == 130
    monkeypatch.setattr(single_run, "save_checkpoint", real)


def _permuted_vocab(folder: Path) -> None:
    """The same tokens under other ids (a tokenizer of the same size): the last two swapped."""
    path = folder / "tokenizer.json"
    data = json.loads(path.read_text())
    vocab = data["model"]["vocab"]
    (a, i), (b, j) = sorted(vocab.items(), key=lambda kv: kv[1])[-2:]
    vocab[a], vocab[b] = j, i
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("change", ["model", "tokenizer", "none"])
def test_a_resume_after_the_model_folder_changed_names_the_folder(
        change, tmp_path, monkeypatch, capsys, kuhn_tok):
    folder = _folder(tmp_path / "m", kuhn_tok)
    argv = [*FAST, f"llm.model={folder}", f"hydra.run.dir={tmp_path / 'r'}"]
    _stopped_after_a_checkpoint(argv, monkeypatch, tmp_path)
    if change == "model":  # another model of the same tokenizer
        shutil.rmtree(folder)
        _folder(folder, kuhn_tok, n_embd=32)
    elif change == "tokenizer":
        _permuted_vocab(folder)
    if change == "none":  # the folder as it was: the run goes on
        _train([*argv, "resume=true"], monkeypatch, tmp_path)
        return
    line = _refused([*argv, "resume=true"], monkeypatch, tmp_path, capsys)
    assert "ckpt_000001.pt" in line and f"llm.model={str(folder)!r}" in line, line
    assert "changed since the checkpoint" in line, line
    assert "resume with the run's settings" not in line, line
    if change == "model":
        assert "[" in line and "in the checkpoint" in line, line  # a tensor and its shapes
    else:
        assert "tokenizer" in line, line


def test_a_league_resume_after_the_model_folder_changed_names_the_model(
        tmp_path, monkeypatch, capsys, kuhn_tok):
    """A league's LLM member: the resume said "does not fit member 'llm' (ModelChangedError:
    ...); resume with the run's settings", though the settings were the run's."""
    import populations.league as league

    folder = _folder(tmp_path / "m", kuhn_tok)
    argv = ["experiment=kuhn_llm_selfplay", "population.generations=2",
            "population.nash_conv=false", "llm=hf", f"llm.model={folder}", "llm.iterations=1",
            "llm.grpo.group_size=2", "llm.grpo.groups_per_step=2", "llm.grpo.minibatch_turns=4",
            "eval_episodes=2", "progress=false", "logger=none", f"hydra.run.dir={tmp_path / 'r'}"]
    real, calls = league.save_checkpoint, []

    def save(folder, step, state, *args, **kw):
        calls.append(step)
        real(folder, step, state, *args, **kw)
        raise KeyboardInterrupt  # stopped once the first checkpoint is on disk

    monkeypatch.setattr(league, "save_checkpoint", save)
    with pytest.raises(SystemExit) as stop:
        _train(argv, monkeypatch, tmp_path)
    assert stop.value.code == 130 and calls
    monkeypatch.setattr(league, "save_checkpoint", real)
    shutil.rmtree(folder)
    _folder(folder, kuhn_tok, n_embd=32)
    line = _refused([*argv, "resume=true"], monkeypatch, tmp_path, capsys)
    assert "holds another model than member 'llm' has now" in line, line
    assert "changed since the checkpoint" in line and "in the checkpoint" in line, line
    assert "resume with the run's settings" not in line, line


def test_a_multimodal_config_whose_type_has_a_causal_lm_class_passes():
    """``Llama4ForConditionalGeneration`` (model_type llama4) loads through
    AutoModelForCausalLM as ``Llama4ForCausalLM``: it was refused as "not a causal language
    model"; a BertModel still is, whatever its model_type maps to (BertLMHeadModel)."""
    from llm_agents.backends.hf import causal_problem

    assert causal_problem(["Llama4ForConditionalGeneration"], "llama4") is None
    assert causal_problem(["BertModel"], "bert") is not None
    assert causal_problem(["LlavaForConditionalGeneration"], "llava") is not None  # no class
