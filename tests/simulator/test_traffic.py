from __future__ import annotations

import numpy as np
import pytest

from simulator.traffic import SEED_DAY_KNOTS, from_csv, load, rate_curve, seed_day


def test_seed_day_follows_the_article_profile():
    t = seed_day(0)
    per_hour = np.bincount((t.arrivals // 3600).astype(int), minlength=24) / 3600
    assert per_hour[:7].max() < 3  # ~2 req/s at night
    assert per_hour[8] > 100  # surge up to 120 req/s
    assert per_hour[9:17].min() >= 40 and per_hour[9:17].max() <= 85
    assert per_hour[23] < 5
    assert np.all(np.diff(t.arrivals) >= 0)


def test_seed_day_is_deterministic_per_seed():
    a, b, c = seed_day(3), seed_day(3), seed_day(4)
    assert np.array_equal(a.arrivals, b.arrivals) and np.array_equal(a.input_tokens, b.input_tokens)
    assert len(a) != len(c) or not np.array_equal(a.arrivals, c.arrivals)


def test_rate_curve_interpolates_knots():
    r = rate_curve(SEED_DAY_KNOTS)
    assert r[8 * 3600] == pytest.approx(120, rel=0.01)
    assert r[3 * 3600] == pytest.approx(2)


def test_csv_request_trace(tmp_path):
    f = tmp_path / "trace.csv"
    f.write_text("timestamp,input_tokens,output_tokens\n100.5,10,20\n100.0,30,40\n")
    t = from_csv(f)
    assert list(t.arrivals) == [0.0, 0.5]
    assert list(t.input_tokens) == [30, 10] and list(t.output_tokens) == [40, 20]


def test_csv_rate_per_minute(tmp_path):
    f = tmp_path / "rate.csv"
    f.write_text("minute,requests_per_minute\n" + "".join(f"{m},{600}\n" for m in range(1440)))
    t = from_csv(f)
    assert len(t) == pytest.approx(10 * 86_400, rel=0.01)


def test_unknown_csv_columns_are_named(tmp_path):
    f = tmp_path / "bad.csv"
    f.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="timestamp,input_tokens,output_tokens"):
        load(str(f))
