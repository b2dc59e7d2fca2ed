"""``adv_norm=Role`` names the registered name it differs from only in case (walk38d L2): the
refusal listed the names with no hint, and 'role' is in the list."""

import pytest

from marl.advantages import check_adv_norm


@pytest.mark.parametrize("name, meant", [("Role", "role"), ("GROUP_ROLE", "group_role")])
def test_a_name_in_other_case_is_named(name, meant):
    with pytest.raises(ValueError) as err:
        check_adv_norm(name, {"group", "role", "agent", "trajectory", "turn", "player"})
    line = str(err.value)
    assert line.startswith(f"adv_norm={name!r} unknown; choose one of [")
    assert f"(names are case-sensitive: {meant!r})" in line and "\n" not in line, line


def test_an_unknown_name_still_says_how_to_bring_ones_own():
    with pytest.raises(ValueError, match="registered by @register_adv_norm"):
        check_adv_norm("dr_mas", {"group", "role"})
