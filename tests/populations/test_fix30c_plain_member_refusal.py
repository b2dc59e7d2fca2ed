"""A league member given by name that cannot play the game is refused naming its entry
(fix 30c): ``population.members=[mappo,maddpg]`` on Kuhn said ``algo=maddpg cannot play ...``,
a setting the user never typed; mapping entries already said ``population.members[1]: ...``
(README, "Members with their own settings"), now plain names do too. A league of the default
member (``[algo]``, nothing listed) keeps the ``algo=`` line: that is what was typed."""

from tests.populations.test_walk19_experiment import _refused

KUHN = ["population=pfsp", "game=kuhn", "progress=false"]


def test_a_plain_name_member_refused_names_its_entry(tmp_path, monkeypatch, capsys):
    got = _refused([*KUHN, "population.members=[mappo,maddpg]"], monkeypatch, tmp_path, capsys)
    assert got.startswith("population.members[1]: algo=maddpg cannot play "
                          "openspiel/kuhn_poker: maddpg plays simultaneous-move games only"), got


def test_the_default_member_keeps_the_algo_line(tmp_path, monkeypatch, capsys):
    got = _refused([*KUHN, "algo=maddpg"], monkeypatch, tmp_path, capsys)
    assert got.startswith("algo=maddpg cannot play openspiel/kuhn_poker: "), got
