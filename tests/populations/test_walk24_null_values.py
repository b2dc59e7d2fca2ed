"""``key=null`` for a setting that takes a value printed OmegaConf's words, naming the field
by its path inside the section and nothing accepted (``field 'grpo.adv_norm' is not
Optional``): the line says a value is required and what the setting held."""

import pytest

from tests.populations.test_walk18_cli_more import _train


@pytest.mark.parametrize("override, said", [
    ("llm.grpo.adv_norm=null", "llm.grpo.adv_norm=null: a value is required here (null is not "
                               "accepted); it was 'group_role'"),
    ("mappo.lr=null", "mappo.lr=null: a value is required here (null is not accepted); it was "),
    ("population.matchmaking.rule=null", "population.matchmaking.rule=null: a value is "
                                         "required here (null is not accepted); it was 'pfsp'"),
    ("mappo.net=null", "mappo.net=null: a section, not a value: set its keys "
                       "(mappo.net.<key>=...), or leave it"),
])
def test_null_for_a_value_says_one_is_required(override, said, tmp_path, monkeypatch, capsys):
    with pytest.raises(SystemExit) as exit_:
        _train(["algo=llm_grpo", override], monkeypatch, tmp_path)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and said in err[0], err
    assert "not Optional" not in err[0] and "Traceback" not in err[0]
    assert not any(tmp_path.iterdir())  # refused before any folder
