"""``population.keep_checkpoints`` on a single run (``population=none``) was warned as read
only by a league (``only population.kind=league reads it``), though single runs, LLM teams'
too, keep that many checkpoints since 15f52b8: the warning names the kinds that read a key
(:data:`populations.unread_overrides.READERS`); PSRO, which keeps no checkpoints, still warns."""

from __future__ import annotations


def _notes(kind: str, overrides: list[str]) -> list[str]:
    from populations.experiment import ExperimentConfig, PopulationConfig
    from populations.train_overrides import unused_overrides

    return unused_overrides(ExperimentConfig(population=PopulationConfig(kind=kind)),
                            overrides)


def test_keep_checkpoints_is_not_warned_in_a_single_run_nor_a_league():
    assert _notes("none", ["population.keep_checkpoints=1"]) == []
    assert _notes("league", ["population.keep_checkpoints=1"]) == []


def test_keep_checkpoints_in_psro_names_both_kinds_that_read_it():
    assert _notes("psro", ["population.keep_checkpoints=1"]) == [
        "population.keep_checkpoints=1 is not used with population.kind=psro: only "
        "population.kind=league or population.kind=none reads it (population=fsp, "
        "population=pfsp, population=self_play, population=none)"]


def test_league_settings_still_name_the_league_alone():
    (note,) = _notes("none", ["population.generations=4"])
    assert note.endswith("only population.kind=league reads it (population=fsp, "
                         "population=pfsp, population=self_play)"), note
