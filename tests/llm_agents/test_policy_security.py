"""A crafted LLM snapshot is untrusted input: it may not write outside its temporary folder,
load code, or make the loader allocate far more than the file holds.

The crafted files are real ``torch.save`` dicts of strings and tensors, so
``torch.load(weights_only=True)`` accepts them -- the attack the checks must stop.
"""

import json
import resource

import pytest
import torch

import games
from llm_agents.policy import LLMPolicy
from llm_agents.team import Team
from marl.core import PolicyLoadError, load_policy

from .conftest import COMPACT, KUHN


@pytest.fixture
def saved(tmp_path, kuhn_tok, make_model):
    """A real LLM policy file's dict, and a function saving a changed copy of it."""
    policy = LLMPolicy.from_team(Team.shared(make_model(kuhn_tok), kuhn_tok),
                                 games.make(KUHN).spec, prompt=COMPACT)
    data = torch.load(policy.save(tmp_path / "good.pt"), weights_only=True)

    def save(data, name="crafted.pt"):
        path = tmp_path / name
        torch.save(data, path)
        return path

    return data, save


def _entry(data):
    return data["payload"]["models"]["shared"]


def test_tokenizer_file_names_cannot_escape_the_temp_folder(saved, tmp_path):
    data, save = saved
    targets = {
        "absolute": tmp_path / "outside" / "absolute.pth",
        "dotdot": tmp_path / "outside" / "dotdot.pth",
        "nested": tmp_path / "outside" / "nested.pth",
    }
    names = {
        "absolute": str(targets["absolute"]),
        "dotdot": "../" * 30 + str(targets["dotdot"]).lstrip("/"),
        "nested": "tokenizer/" + "../" * 30 + str(targets["nested"]).lstrip("/"),
    }
    for kind, name in names.items():
        _entry(data)["tokenizer_files"] = {**_entry(data)["tokenizer_files"],
                                           name: "import os; os.system('echo pwned')\n"}
        path = save(data, f"{kind}.pt")
        with pytest.raises(PolicyLoadError, match=r"tokenizer file name .* is not allowed") as err:
            load_policy(path)
        assert str(path) in str(err.value) and "\n" not in str(err.value)
        assert not targets[kind].exists(), f"{kind}: the snapshot wrote {targets[kind]}"
        _entry(data)["tokenizer_files"].pop(name)
    assert not (tmp_path / "outside").exists()


def test_unlisted_tokenizer_file_names_are_refused(saved):
    data, save = saved
    for name in ("sitecustomize.py", "x.pth", ".hidden", "tokenizer.json/../evil.pth",
                 "additional_chat_templates/../../evil.jinja"):
        _entry(data)["tokenizer_files"] = {**_entry(data)["tokenizer_files"], name: "x"}
        with pytest.raises(PolicyLoadError, match="is not allowed"):
            load_policy(save(data))
        _entry(data)["tokenizer_files"].pop(name)


def test_a_valid_name_after_an_invalid_one_writes_nothing_either(saved, tmp_path):
    """The whole payload is checked before the first file is written: a refused snapshot
    whose config would also be bad reports the first problem and writes nothing."""
    data, save = saved
    target = tmp_path / "first.pth"
    files = {str(target): "x", **_entry(data)["tokenizer_files"]}
    _entry(data)["tokenizer_files"] = files
    _entry(data)["config"] = "{not json"
    with pytest.raises(PolicyLoadError):
        load_policy(save(data))
    assert not target.exists()


def test_configs_may_not_load_code_and_tokenizer_configs_may_not_name_files(saved):
    data, save = saved
    config = json.loads(_entry(data)["config"])
    _entry(data)["config"] = json.dumps({**config, "auto_map": {"AutoConfig": "evil.Config"}})
    with pytest.raises(PolicyLoadError, match="'auto_map' is not allowed"):
        load_policy(save(data))
    _entry(data)["config"] = json.dumps(config)
    tok = json.loads(_entry(data)["tokenizer_files"]["tokenizer_config.json"])
    _entry(data)["tokenizer_files"]["tokenizer_config.json"] = json.dumps(
        {**tok, "vocab_file": "/etc/passwd"})
    with pytest.raises(PolicyLoadError, match="'vocab_file' is not allowed"):
        load_policy(save(data))


def _max_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.parametrize("sizes, message", [
    # out of range for one size: refused while reading the JSON
    ({"vocab_size": 2**40}, r"vocab_size=1099511627776 is out of range"),
    ({"n_layer": 10**6}, r"n_layer=1000000 is out of range"),
    # every size allowed, but together about 1.6e13 parameters
    ({"n_layer": 256, "n_embd": 2**16, "n_head": 256}, r"asks for about 1\.\d+e\+13 parameters"),
    # 8e9 parameters (32 GB) is under the cap, but the file holds a few kB of weights: the
    # dry run on the meta device refuses it before anything is allocated
    ({"n_layer": 40, "n_embd": 4096, "n_head": 32}, r"weights do not match the saved config"),
])
def test_a_config_asking_for_a_huge_model_is_refused_without_allocating(saved, sizes, message):
    data, save = saved
    config = json.loads(_entry(data)["config"])
    assert config["model_type"] == "gpt2"
    _entry(data)["config"] = json.dumps({**config, **sizes})
    path = save(data)
    before = _max_rss_mib()
    with pytest.raises(PolicyLoadError, match=message) as err:
        load_policy(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)
    assert _max_rss_mib() - before < 512  # peak memory: nothing of the model's size was built


def test_prompt_templates_may_not_carry_format_specs(saved):
    """``{observation:>999999999}`` would make every prompt a gigabyte."""
    data, save = saved
    data["payload"]["prompt"]["user"] = "{observation:>999999999}"
    with pytest.raises(PolicyLoadError, match=r"prompt user has a bad slot"):
        load_policy(save(data))
    data["payload"]["prompt"]["user"] = "{observation.__class__}"
    with pytest.raises(PolicyLoadError, match=r"prompt user has a bad slot"):
        load_policy(save(data))


@pytest.mark.parametrize("change, message", [
    (lambda p: p.pop("roles"), r"llm payload has \["),
    (lambda p: p.update(seed="0"), r"seed '0' is not an int"),
    (lambda p: p["models"]["shared"].pop("weights"), r"entry is not \{config, weights"),
    (lambda p: p["models"]["shared"].update(weights={"a": "b"}), r"weights are not a dict"),
    (lambda p: p["models"]["shared"]["tokenizer_files"].update(
        {"vocab.txt": torch.zeros(3)}), r"neither text nor a 1-D uint8 tensor"),
    (lambda p: p["roles"].update(x=["nobody", ""]), r"'roles' is not"),
    (lambda p: p["action"].update(mode=3), r"action config field 'mode' has a bad value 3"),
    (lambda p: p["action"]["sampling"].update(max_new_tokens=10**9),
     r"sampling max_new_tokens=1000000000; expected an integer in \[1, 65536\]"),
    (lambda p: p["prompt"].update(evil=1), r"prompt config has unknown fields \['evil'\]"),
])
def test_malformed_payloads_give_one_line_naming_the_file(saved, change, message):
    data, save = saved
    change(data["payload"])
    path = save(data)
    with pytest.raises(PolicyLoadError, match=message) as err:
        load_policy(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_weights_that_do_not_fit_the_config_are_refused_before_building(saved):
    data, save = saved
    weights = _entry(data)["weights"]
    name = next(iter(weights))
    weights[name] = torch.zeros(3, 3)
    with pytest.raises(PolicyLoadError, match=rf"weights do not match .* at '{name}'"):
        load_policy(save(data))
