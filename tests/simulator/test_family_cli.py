"""`python -m llm_platform.simulator family` writes the generated days the stack configs were tuned on, reproducibly."""

from __future__ import annotations

import numpy as np
import pytest

from llm_platform.simulator.commands.cli import main
from llm_platform.simulator.traffic import family
from llm_platform.simulator.traffic.traffic import load


def test_the_family_written_is_the_family_tuned_on(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["family", "--out", str(tmp_path), "--scale", "0.25", "--holdout-seed", "17"]) == 0
    names = {p.name for p in tmp_path.iterdir()}
    assert names == {f"{k}.csv" for k in family.KINDS} | {f"{k}-holdout.csv" for k in family.RANDOM_KINDS}
    for i, kind in enumerate(family.KINDS):
        rates = np.loadtxt(tmp_path / f"{kind}.csv", delimiter=",", skiprows=1)[:, 1]
        assert rates == pytest.approx(family.day(kind, seed=i, scale=0.25), abs=1e-4)
    for kind in family.RANDOM_KINDS:
        holdout = np.loadtxt(tmp_path / f"{kind}-holdout.csv", delimiter=",", skiprows=1)[:, 1]
        training = np.loadtxt(tmp_path / f"{kind}.csv", delimiter=",", skiprows=1)[:, 1]
        assert not np.allclose(holdout, training)  # a day the tuner never saw
    assert len(load(str(tmp_path / "seed.csv")).arrivals) > 0


def test_more_seeds_write_more_days_of_the_random_kinds(tmp_path) -> None:
    assert main(["family", "--out", str(tmp_path), "--kinds", "seed,bursts", "--more-seeds", "1,2"]) == 0
    assert {p.name for p in tmp_path.iterdir()} == {"seed.csv", "bursts.csv", "bursts-1.csv", "bursts-2.csv"}
    for seed in (1, 2):
        rates = np.loadtxt(tmp_path / f"bursts-{seed}.csv", delimiter=",", skiprows=1)[:, 1]
        assert rates == pytest.approx(family.day("bursts", seed=seed), abs=1e-4)


def test_a_missing_folder_is_made_and_a_file_is_one_line_and_exit_2(
    tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The docs' `family --out fam` works in a fresh clone (no mkdir first)."""
    assert main(["family", "--out", str(tmp_path / "fam" / "q"), "--kinds", "seed"]) == 0
    assert (tmp_path / "fam" / "q" / "seed.csv").is_file()
    (tmp_path / "file").write_text("")
    assert main(["family", "--out", str(tmp_path / "file")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "a file, not a folder (see --help)" in err


def test_bursts_are_short_and_in_business_hours_over_the_seed_day() -> None:
    """`bursts` (issue #13's days): the seed profile plus 6-12 bursts of 5-15 minutes, +20-60 req/s each,
    starting 07:00-21:00; `flash` adds +100 req/s for 5 minutes at 14:00. Different seeds, different days."""
    seed = family.day("seed")
    for s in range(5):
        extra = family.day("bursts", s) - seed
        assert extra.min() >= 0 and (extra[: 7 * 60] == 0).all()
        starts = np.flatnonzero(np.diff((extra > 0).astype(int)) == 1) + 1
        assert 1 <= len(starts) <= 12 and 20 <= extra.max() <= 12 * 60
    assert not np.allclose(family.day("bursts", 0), family.day("bursts", 1))
    flash = family.day("flash") - seed
    assert np.flatnonzero(flash).tolist() == list(
        range(14 * 60, 14 * 60 + 5)
    ) and flash.max() == pytest.approx(100)
