"""A mistyped key that begins a key of its section names that key first: ``mappo.ent`` said
``nearest: mappo.net`` (difflib's closest spelling), not ``mappo.ent_coef`` (rfix33a)."""

import pytest

from populations.config_checks import check_section_value


@pytest.mark.parametrize("override, nearest", [
    ("mappo.ent=0.1", "nearest: mappo.ent_coef, mappo.net"),
    ("mappo.clip=0.1", "nearest: mappo.clip_coef"),  # as before (test_config_sections)
])
def test_a_key_a_typo_begins_comes_first(override, nearest):
    key, value = override.split("=", 1)
    with pytest.raises(ValueError) as err:
        check_section_value(key, float(value), override)
    assert str(err.value).startswith(f"{key}: Key '{key.split('.')[-1]}' not in "
                                     f"'MAPPOConfig'; {nearest}"), str(err.value)
