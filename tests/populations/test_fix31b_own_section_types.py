"""A registered learner's section refuses a value of the wrong type in the words the built-in
sections use (walk31 L2): ``+my_algo.rollout_steps=abc`` said OmegaConf's "Value 'abc' of type
'str' could not be converted to Integer" where ``mappo.rollout_steps=abc`` says ``expected an
integer ...``."""

from __future__ import annotations

import pytest

from tests.populations.test_walk19_experiment import MODULE as OWN
from tests.populations.test_walk19_experiment import _refused, own_learner  # noqa: F401


@pytest.mark.parametrize(("override", "line"), [
    ("+walk19_algo.batch_episodes=abc", "walk19_algo.batch_episodes=abc; expected an integer"),
    ("+walk19_algo.net.width=abc", "walk19_algo.net.width=abc; expected an integer"),
    ("+walk19_algo.batch_episodes=2e3",
     "walk19_algo.batch_episodes=2000.0; expected an integer (write 2000)"),
    ("+walk19_algo.lr=fast", "walk19_algo.lr=fast; expected a number > 0"),  # its own rule
])
@pytest.mark.usefixtures("own_learner")
def test_an_own_learners_mistyped_value_says_what_it_expects(override, line, tmp_path,
                                                             monkeypatch, capsys):
    said = _refused([f"imports=[{OWN}]", "algo=walk19_algo", override, "game=kuhn",
                     "frames=64", "progress=false"], monkeypatch, tmp_path, capsys)
    assert said == line, said
