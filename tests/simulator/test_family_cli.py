"""`python -m simulator family` writes the generated days the stack configs were tuned on, reproducibly."""

from __future__ import annotations

import numpy as np
import pytest

from simulator import family
from simulator.cli import main
from simulator.traffic import load


def test_the_family_written_is_the_family_tuned_on(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["family", "--out", str(tmp_path), "--scale", "0.25", "--holdout-seed", "17"]) == 0
    names = {p.name for p in tmp_path.iterdir()}
    assert names == {f"{k}.csv" for k in family.KINDS} | {"bursty-holdout.csv"}
    for i, kind in enumerate(family.KINDS):
        rates = np.loadtxt(tmp_path / f"{kind}.csv", delimiter=",", skiprows=1)[:, 1]
        assert rates == pytest.approx(family.day(kind, seed=i, scale=0.25), abs=1e-4)
    holdout = np.loadtxt(tmp_path / "bursty-holdout.csv", delimiter=",", skiprows=1)[:, 1]
    training = np.loadtxt(tmp_path / "bursty.csv", delimiter=",", skiprows=1)[:, 1]
    assert not np.allclose(holdout, training)  # a day the tuner never saw
    assert len(load(str(tmp_path / "seed.csv")).arrivals) > 0


def test_a_missing_folder_is_one_line_and_exit_2(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["family", "--out", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not an existing folder" in err
