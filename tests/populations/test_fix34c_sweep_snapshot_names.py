"""``selfplay-eval``'s names for a sweep's snapshots keep the job number and whole settings
(walk 34a, item 4): ``multirun/gt/*/snapshots/*/v0000.pt`` gave
``ridtag_imports__gridtag__mappo.lr_0.001_seed_0_mappo_v0000`` (the job folder's end, cut
mid-word), and two jobs that differed only in a setting near the folder name's start
(``frames``) got the same name, then ``_2``."""

from __future__ import annotations

import re

from populations.eval_files import policy_names
from populations.store import _NAME

GT = "0_frames=3000,game.name=gridtag,imports=[gridtag],mappo.lr=0.001,seed=0"


def _jobs(*folders: str) -> list[str]:
    return [f"multirun/gt/{f}/snapshots/mappo/v0000.pt" for f in folders]


def test_a_sweeps_snapshots_are_named_by_job_number_and_the_settings_that_differ():
    names = list(policy_names(_jobs(
        GT, GT.replace("0_", "1_", 1).replace("0.001", "0.0003"),
        GT.replace("0_", "2_", 1).replace("seed=0", "seed=1"),
        GT.replace("0_", "3_", 1).replace("0.001", "0.0003").replace("seed=0", "seed=1"))))
    # before: ridtag_imports__gridtag__mappo.lr_0.001_seed_0_mappo_v0000 ...
    assert names == ["0_mappo.lr_0.001_seed_0_mappo_v0000", "1_mappo.lr_0.0003_seed_0_mappo_v0000",
                     "2_mappo.lr_0.001_seed_1_mappo_v0000", "3_mappo.lr_0.0003_seed_1_mappo_v0000"]
    assert all(_NAME.match(n) for n in names)


def test_jobs_differing_only_in_their_first_setting_get_names_of_their_own():
    names = list(policy_names(_jobs(GT, GT.replace("0_frames=3000", "1_frames=6000"))))
    # before: the same name twice, the second with _2
    assert names == ["0_frames_3000_mappo_v0000", "1_frames_6000_mappo_v0000"]


def test_settings_that_do_not_fit_are_left_out_whole_and_the_job_number_stays():
    many = ",".join(f"setting_number_{i}={i}" for i in range(6))
    names = list(policy_names(_jobs(f"0_{many}", "1_" + many.replace("=", "=9"))))
    assert len(set(names)) == 2 and all(len(n) <= 64 and _NAME.match(n) for n in names)
    assert [n.split("_", 1)[0] for n in names] == ["0", "1"]
    for name in names:  # whole settings only: each kept one ends in its value
        kept = name.removesuffix("_mappo_v0000").split("_", 1)[1]
        assert re.fullmatch(r"(setting_number_\d_9?\d_?)+", kept + "_"), name


def test_a_long_folder_that_is_no_sweep_job_is_cut_at_a_word_boundary():
    a = "my_rather_lengthy_experiment_name_about_learning_rates_run_1"
    names = list(policy_names([f"{a}/s/llm/v0002.pt", f"{a[:-1]}2/s/llm/v0002.pt"]))
    # before: ngthy_experiment_name_about_learning_rates_run_1_llm_v0002 ('lengthy' cut)
    assert names == ["experiment_name_about_learning_rates_run_1_llm_v0002",
                     "experiment_name_about_learning_rates_run_2_llm_v0002"]
