"""KEDA executor and metrics-server behaviour: activation, cooldown, min floor, cron, fallback, caching."""

from __future__ import annotations

from datetime import UTC, datetime

from llm_platform.simulator.controllers.cron import Cron, active_minutes, window_active
from llm_platform.simulator.controllers.keda import (
    CronTrigger,
    Fallback,
    Keda,
    PrometheusTrigger,
    ScaledObjectSpec,
)

QUEUE = PrometheusTrigger("queue", "waiting_sum", threshold=5, activation_threshold=1)


def const(value):
    return lambda _metric: value


def test_activation_is_strictly_greater_than_threshold():
    keda = Keda(ScaledObjectSpec((QUEUE,), min_replica_count=0))
    assert keda.poll(0, 0, const(1.0)) == 0
    assert keda.poll(10, 0, const(1.5)) == 1


def test_activation_scales_to_min_replica_count_when_set():
    keda = Keda(ScaledObjectSpec((QUEUE,), min_replica_count=0, max_replica_count=5))
    assert keda.poll(0, 0, const(3.0)) == 1
    keda = Keda(ScaledObjectSpec((QUEUE,), min_replica_count=2))
    assert keda.poll(0, 1, const(0.0)) == 2  # inactive below the floor: raised to minReplicaCount


def test_scale_to_zero_waits_for_cooldown_after_last_activity():
    keda = Keda(ScaledObjectSpec((QUEUE,), min_replica_count=0, cooldown_period=300))
    assert keda.poll(0, 3, const(10.0)) == 3
    assert keda.poll(200, 3, const(0.0)) == 3
    assert keda.poll(299, 3, const(0.0)) == 3
    assert keda.poll(301, 3, const(0.0)) == 0


def test_never_active_uses_initial_cooldown():
    keda = Keda(ScaledObjectSpec((QUEUE,), min_replica_count=0, initial_cooldown_period=60), created_at=0)
    assert keda.poll(30, 1, const(0.0)) == 1
    assert keda.poll(61, 1, const(0.0)) == 0


def test_min_at_least_one_never_scales_to_zero():
    keda = Keda(ScaledObjectSpec((QUEUE,), min_replica_count=1, cooldown_period=0))
    assert keda.poll(1000, 1, const(0.0)) == 1
    assert keda.hpa.min_replicas == 1


def test_hpa_bounds_come_from_the_scaled_object():
    keda = Keda(ScaledObjectSpec((QUEUE,), min_replica_count=0, max_replica_count=7))
    assert (keda.hpa.min_replicas, keda.hpa.max_replicas) == (1, 7)
    assert keda.sync_hpa(0, 2, 2, const(100.0)) == 4  # legacy limit max(2*2, 4), no behavior -> nil
    assert keda.sync_hpa(15, 4, 4, const(100.0)) == 7


def test_multiple_triggers_take_the_max():
    kv = PrometheusTrigger("kv", "kv_sum", threshold=0.5)
    keda = Keda(ScaledObjectSpec((QUEUE, kv), min_replica_count=1, max_replica_count=10))
    values = {"waiting_sum": 5.0, "kv_sum": 1.6}
    assert keda.sync_hpa(0, 1, 1, lambda m: values[m]) == 4  # max(ceil(5/5)=1, ceil(1.6/0.5)=4)


def test_fallback_after_failure_threshold():
    spec = ScaledObjectSpec((QUEUE,), min_replica_count=1, max_replica_count=10, fallback=Fallback(3, 6))
    keda = Keda(spec)
    failing = const(None)
    metrics = [keda.hpa_metrics(float(i), failing)[0][0] for i in range(5)]
    assert metrics[:3] == [None, None, None]  # failures 1..3 are not > failureThreshold
    assert metrics[3] == 6 * 5  # fallback.replicas x threshold
    keda2 = Keda(spec)
    for i in range(3):
        assert keda2.sync_hpa(float(i * 15), 2, 2, failing) == 2  # failed metric: no change
    assert keda2.sync_hpa(45.0, 2, 2, failing) == 4  # fallback to 6 asked, legacy rate limit max(4, 2*2)
    assert keda2.sync_hpa(60.0, 4, 4, failing) == 6


def test_failures_reset_on_success():
    keda = Keda(ScaledObjectSpec((QUEUE,), fallback=Fallback(1, 9)))
    keda.hpa_metrics(0, const(None))
    keda.hpa_metrics(1, const(2.0))
    assert keda.hpa_metrics(2, const(None))[0][0] is None


def test_use_cached_metrics_serves_the_last_poll():
    trigger = PrometheusTrigger("queue", "waiting_sum", 5, use_cached_metrics=True)
    keda = Keda(ScaledObjectSpec((trigger,), min_replica_count=1))
    keda.poll(0, 1, const(40.0))
    assert keda.hpa_metrics(5, const(0.0)) == [(40.0, 5)]


def test_cron_trigger_reports_desired_inside_and_one_outside():
    cron = CronTrigger("morning", "0 7 * * *", "0 9 * * *", "UTC", 6)
    keda = Keda(
        ScaledObjectSpec((cron,), min_replica_count=1), cron_active=lambda t, now: 7 * 3600 <= now < 9 * 3600
    )
    assert keda.hpa_metrics(8 * 3600, const(0.0)) == [(6.0, 1.0)]
    assert keda.hpa_metrics(10 * 3600, const(0.0)) == [(1.0, 1.0)]
    assert keda.is_active(8 * 3600, const(0.0))


def test_cron_window_follows_keda_next_start_next_end_rule():
    start, end = Cron.parse("45 6 * * 1-5"), Cron.parse("30 9 * * 1-5")
    tuesday = datetime(2026, 9, 15, 7, 0)
    assert window_active(start, end, tuesday)
    assert not window_active(start, end, tuesday.replace(hour=10))
    assert not window_active(start, end, datetime(2026, 9, 19, 7, 0))  # Saturday


def test_cron_minutes_respect_timezone():
    # prod's window: 06:45-09:30 America/New_York (EDT, UTC-4 in September) -> 10:45-13:30 UTC
    minutes = active_minutes(
        "45 6 * * 1-5", "30 9 * * 1-5", "America/New_York", datetime(2026, 9, 15, tzinfo=UTC), 1440
    )
    assert not minutes[10 * 60 + 44]
    assert minutes[10 * 60 + 45]
    assert minutes[13 * 60 + 29]
    assert not minutes[13 * 60 + 30]
