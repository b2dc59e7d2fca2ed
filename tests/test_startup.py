"""What a command line loads before it has anything to do: every ``selfplay-train`` child
process of the suite pays it. A refused value loaded PettingZoo and gymnasium (``games``
exported ``to_pettingzoo`` eagerly) and pyspiel (``populations.psro_config``), ~0.1 s CPU of
a refusal's ~0.45 s; an OpenSpiel run loaded PettingZoo too."""

import subprocess
import sys

CHECK = """
import sys
from populations.command_line import CLIError
from populations.train_overrides import check_command_line
for args in (["num_envs=0"], ["mappo.lr=-1"], ["population.psro.meta_solver=x"]):
    try:
        check_command_line(args)
    except CLIError as err:
        print(str(err).split(";")[0])
print(sorted(m for m in ("pettingzoo", "gymnasium", "pyspiel", "torch") if m in sys.modules))
import games
print("to_pettingzoo" in dir(games), "pettingzoo" in sys.modules)
from games import to_pettingzoo
from games.export import to_pettingzoo as exported
print(to_pettingzoo is exported is games.to_pettingzoo, "pettingzoo" in sys.modules)
"""


def test_a_refused_value_loads_no_game_library_and_to_pettingzoo_loads_on_use(tmp_path):
    out = subprocess.run([sys.executable, "-c", CHECK], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120, check=True).stdout
    assert out.splitlines() == [
        "bad config: num_envs=0", "bad config: mappo.lr=-1.0",
        "bad config: population.psro.meta_solver='x' unknown", "[]", "True False", "True True"], out
