"""fix40f L2: a misspelt choice setting (mappo.net.encoder=gnnn) was refused with the choices
but no nearest name, while games, members and algos get one: check_choice, the NetConfig and
MAPPOConfig choice checks and the encoder registry now add '; did you mean ...?'."""

from __future__ import annotations

import pytest

from marl.configs import MAPPOConfig, NetConfig, check_choice


def _one_line(call) -> str:
    with pytest.raises(ValueError) as err:
        call()
    assert "\n" not in str(err.value)
    return str(err.value)


def test_a_misspelt_encoder_gets_the_nearest_name():
    msg = _one_line(lambda: NetConfig(encoder="gnnn"))
    assert msg.startswith("encoder='gnnn' unknown; choose one of ['mlp', 'gnn']; an encoder of "
                          "your own"), msg
    assert msg.endswith("; did you mean 'gnn'?"), msg  # the nearest last, as every site


@pytest.mark.parametrize("call, hint", [
    (lambda: NetConfig(critic="stat"), "critic='stat' unknown; choose one of ['auto', 'state', "
     "'concat', 'local', 'gnn']; did you mean 'state'?"),
    (lambda: MAPPOConfig(optim="jiont"), "optim='jiont' unknown; choose one of ['joint', "
     "'separate']; did you mean 'joint'?"),
    (lambda: check_choice("qmix.loss", "HUBER", ("mse", "huber")),
     "qmix.loss='HUBER' is not supported; accepted: ['mse', 'huber']; did you mean 'huber'?"),
])
def test_choice_settings_name_the_nearest(call, hint):
    assert _one_line(call) == hint


def test_no_hint_when_nothing_is_near():
    assert _one_line(lambda: check_choice("qmix.loss", "l1", ("mse", "huber"))).endswith(
        "accepted: ['mse', 'huber']")
    assert "did you mean" not in _one_line(lambda: MAPPOConfig(optim=3))
