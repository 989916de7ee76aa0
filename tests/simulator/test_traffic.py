from __future__ import annotations

import numpy as np
import pytest

from llm_platform.simulator.traffic.traffic import SEED_DAY_KNOTS, from_csv, load, rate_curve, seed_day


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


def test_multi_day_minute_csv_keeps_its_length(tmp_path):
    f = tmp_path / "week.csv"
    f.write_text(
        "minute,requests_per_second\n" + "".join(f"{m},{1 + (m % 1440 > 600)}\n" for m in range(3 * 1440))
    )
    t = from_csv(f)
    assert t.duration == 3 * 86_400 and t.days == 3
    assert len(t) == pytest.approx(86_400 * 3 * (1 + 839 / 1440), rel=0.02)


def test_prometheus_query_range_sums_series_and_keeps_the_real_start(tmp_path):
    import json

    start = 1_760_000_000 - 1_760_000_000 % 86_400 + 9 * 3600  # 09:00 UTC
    values = [[start + 60 * i, "5"] for i in range(120)]
    doc = {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"pod": "a"}, "values": values}, {"metric": {"pod": "b"}, "values": values},
    ]}}  # fmt: skip
    f = tmp_path / "rate.json"
    f.write_text(json.dumps(doc))
    t = load(str(f))
    assert t.duration == 120 * 60
    assert len(t) == pytest.approx(10 * 7200, rel=0.03)
    assert t.start_utc is not None and t.start_utc.hour == 9


def test_token_histogram_from_vllm_buckets(tmp_path):
    import json

    def series(name, le, count):
        return {"metric": {"__name__": name, "le": le}, "value": [0, str(count)]}

    result = [
        series("vllm:request_prompt_tokens_bucket", le, c)
        for le, c in (("100", 0), ("1000", 100), ("+Inf", 100))
    ]
    result += [
        series("vllm:request_generation_tokens_bucket", le, c)
        for le, c in (("10", 50), ("20", 100), ("+Inf", 100))
    ]
    f = tmp_path / "h.json"
    f.write_text(json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}))
    from llm_platform.simulator.traffic.traffic import histogram_mix

    p, o = histogram_mix(f).sample(5000, np.random.default_rng(0))
    assert p.min() >= 100 and p.max() <= 1000
    assert o.max() <= 20 and 0.4 < (o <= 10).mean() < 0.6


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("minute,requests_per_second\n0,1\n1,abc\n", "line 3 requests_per_second: 'abc' is not a number"),
        ("minute,requests_per_second\n0,1\n1,-2\n", "line 3 requests_per_second: -2"),
        ("minute,requests_per_second\n5,1\n2,1\n", "line 3 minute"),
        ("minute,requests_per_second\n", "no rows"),
    ],
)
def test_bad_csv_is_one_line_naming_file_line_field_value(tmp_path, text, message):
    f = tmp_path / "bad.csv"
    f.write_text(text)
    with pytest.raises(ValueError, match=message) as err:
        load(str(f))
    assert str(f) in str(err.value) and "\n" not in str(err.value)


def test_missing_traffic_file_is_named():
    with pytest.raises(ValueError, match="does not exist"):
        load("no/such/day.csv")
