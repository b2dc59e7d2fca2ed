"""hint40: a misspelt value typed on the command line (llm.grpo.*, population.matchmaking.*,
population.psro.*, logger.*, an algo name) was refused with its choices but no nearest name,
while games, members, algos of the schema and check_choice got one; each refusal now ends in
'; did you mean ...?' (marl.configs.did_you_mean), its existing text and one line kept."""

from __future__ import annotations

import pytest

from tests.populations.test_cli_paths import _refused  # composed, then to_experiment

# (override, the start of the message after "bad config: ", the nearest name)
TYPOS = [
    ("llm.grpo.kl_estimator=k33", "llm.grpo.kl_estimator='k33' unknown; choose one of", "k3"),
    ("llm.grpo.loss_agg=token_man", "llm.grpo.loss_agg='token_man' unknown", "token_mean"),
    ("llm.grpo.action.mode=scor", "llm.grpo.action.mode='scor' unknown", "score"),
    ("llm.grpo.action.fallback=frist", "llm.grpo.action.fallback='frist' unknown", "first"),
    ("llm.grpo.action.on_invalid=ned", "llm.grpo.action.on_invalid='ned' unknown", "end"),
    ("llm.backend=vlm", "llm.backend='vlm' unknown; choose one of", "vllm"),
    ("llm.team=shard", "llm.team='shard' unknown; choose one of", "shared"),
    ("llm.dtype=bfloat15", "llm.dtype='bfloat15' unknown; choose one of", "bfloat16"),
    ("llm.tiny.arch=gpt3", "llm.tiny.arch='gpt3' unknown; choose one of", "gpt2"),
    ("population.matchmaking.rule=pfps", "population.matchmaking.rule='pfps' unknown; choose "
     "one of ['fsp', 'pfsp', 'self_play']; a rule of your own is registered by", "pfsp"),
    ("population.matchmaking.weighting=hrad", "population.matchmaking.weighting='hrad' unknown",
     "hard"),
    # (the list holds what the process registered: other tests register solvers of their own)
    ("population.psro.meta_solver=nsah", "population.psro.meta_solver='nsah' unknown; choose "
     "one of ['auto', 'least_exploitable', 'nash', 'prd', ", "nash"),
    ("population.psro.response_target=exploitr", "population.psro.response_target='exploitr' "
     "unknown; choose one of ['meta', 'exploiter',", "exploiter"),
    ("population.psro.payoffs=exat", "population.psro.payoffs='exat' unknown; choose one of "
     "['auto', 'exact', 'sampled']", "exact"),
    ("population.psro.players=sets", "population.psro.players='sets' unknown; choose one of "
     "['auto', 'seats', 'teams']", "seats"),
    ("logger.kind=csvv", "logger.kind='csvv' unknown; choose one of ['csv', 'none', 'wandb']; "
     "a logger of your own is registered by", "csv"),
    ("logger.mode=onlin", "logger.mode='onlin' unknown; choose one of ['auto', 'online', "
     "'offline']", "online"),
]


@pytest.mark.parametrize("override, start, nearest", TYPOS, ids=[t[0] for t in TYPOS])
def test_a_typo_on_the_command_line_gets_the_nearest_name(override, start, nearest):
    msg = _refused(override)
    assert "\n" not in msg
    assert msg.startswith(f"bad config: {start}"), msg
    assert msg.endswith(f"; did you mean {nearest!r}?"), msg


def test_a_misspelt_algo_name_gets_the_nearest_one():
    from marl.registry import get

    with pytest.raises(ValueError) as err:
        get("mapo")
    assert str(err.value).startswith("algo 'mapo' unknown; choose one of [")
    assert str(err.value).endswith("; did you mean 'mappo'?")


@pytest.mark.parametrize("override", ["llm.team=zzz", "population.psro.payoffs=qqq",
                                      "logger.mode=xyz"])
def test_a_value_near_no_name_gets_no_guess(override):
    assert "did you mean" not in _refused(override)
