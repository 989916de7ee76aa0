"""The day's clients: each attempt's timeout, and the retries of what timed out or was shed (issue #24).

The default client is the OpenAI SDK's (serving/overload.py OPENAI_SDK, where its sources are): an attempt with
no first token after 600 s is given up, and a timeout, 429 or 503 is sent again, up to RETRY_ATTEMPTS in all,
after 0.5 s then 1 s (doubling to 8 s, less up to 25 % jitter), or after the 503's Retry-After when it has one:
the gateway sets it on the routes of a model at zero (plan/zero.py RETRY_AFTER_S, components/specs/zero.py),
and the SDK sleeps a Retry-After of up to 60 s as sent. So the gateway's sheds come back while the pool is still
short, and a queue longer than the timeout sends its oldest requests to its back again.

The picker (llm-d router v0.10.0 flow control, plan/gateway.py): with Ready pods, what the engine sheds on
arrival (what would be held past the TTL) is a 429 the picker answers at the TTL. With none it holds each request
(up to its bound) until a pod is Ready or its TTL ends, then a 503 (`rejected-no-endpoints`, with the gateway's
Retry-After on a model at zero); past the bound it answers that 503 at once. A request still in the picker
(beyond vLLM's Q per Ready pod) at its TTL leaves with a 503, or a 429 when the pool has pods (`evict`).

The loop (`Retries`, fluid at 1 s): what is still queued (not admitted to a replica) in the second its
timeout ends leaves at the start of that second, and what is still in the picker `ttl_deadline` seconds after
it entered leaves then (it has waited at least the TTL: at 1 s the picker's answer is up to 1 s late); each
failed attempt is re-sent after its delay, spread over the seconds the delay falls in, while the request has
attempts left. The re-sent attempts add to their second's arrivals and queue behind it (FIFO).

Per request (`fates`): the first send as the loop served it (the last arrivals of a second are shed, the
queue is FIFO, timeouts and TTL evictions included), then each retry at its own re-send time, in the second it
lands in at a random place among that second's arrivals: shed past the second's room, else queued in FIFO
order. A retry after a shed comes no earlier than the next second (the loop has served the shed's second).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from llm_platform.plan.gateway import FlowControlPlan
from llm_platform.plan.zero import RETRY_AFTER_S
from llm_platform.simulator.serving.overload import JITTER, Client

GRID = 16  # points per uniform (the jitter; where in its second an attempt failed) spreading retries over seconds
LEFTOVER = 1e-6  # queue left at a deadline below this is rounding, not requests


def _spread(fixed: float, backoff: float, jitter: float, within: bool) -> list[tuple[int, float]]:
    """(seconds after the failing second, share) of its re-sent attempts: `fixed` + `backoff` x (1 - jitter x
    U) after failing; `within`: they failed anywhere in their second, and come back the next at the earliest."""
    g = (np.arange(GRID) + 0.5) / GRID
    at = (g if within else np.zeros(1))[:, None] + fixed + backoff * (1 - jitter * g)[None, :]
    offsets = np.floor(at).astype(np.int64).ravel()
    counts = np.bincount(np.maximum(offsets, 1) if within else offsets)
    return [(j, c / offsets.size) for j, c in enumerate(counts.tolist()) if c]


class Retries:
    """The loop's side: attempts re-sent per second by attempt number (0 the first send), the queue's timeouts."""

    def __init__(self, client: Client, fresh: list[float], flow_control: FlowControlPlan | None) -> None:
        self.client = client
        self.deadline = max(1, math.ceil(client.timeout_s))  # seconds after its arrival's second
        self.hold = flow_control.ttl_seconds if flow_control is not None else 0.0
        # still in the picker at the start of this many seconds after its arrival's second: past the TTL
        self.ttl_deadline = math.ceil(self.hold) + 1 if flow_control is not None else None
        at_zero = flow_control is not None and flow_control.from_zero_hold_s is not None
        self.retry_after = float(RETRY_AFTER_S) if at_zero else None
        last = client.max_attempts - 1
        self.after_timeout = [_spread(0.0, client.backoff(k), JITTER, False) for k in range(last)]
        self.after_429 = [_spread(self.hold, client.backoff(k), JITTER, True) for k in range(last)]
        # a 503 with no Ready pod: at once past the bound (within its second), at the TTL (at a second's start)
        self.after_503 = [self._after_503(k, True) for k in range(last)]
        self.after_503_ttl = [self._after_503(k, False) for k in range(last)]
        spreads = (*self.after_timeout, *self.after_429, *self.after_503, *self.after_503_ttl)
        pad = 1 + max((j for spread in spreads for j, _ in spread), default=0)
        self.sent = [fresh, *([0.0] * (len(fresh) + pad) for _ in range(last))]  # sent[k][t]: attempt k in t
        self.resent = [0.0] * (len(fresh) + pad)  # every retry arriving in each second
        self.entered = [0.0]  # requests let into the queue before each second
        self.timed_out = np.zeros(len(fresh))  # left the queue at the start of each second
        self.evicted = np.zeros(len(fresh))  # left the picker at their TTL at the start of each second

    def _after_503(self, k: int, within: bool) -> list[tuple[int, float]]:
        """A 503 is re-sent after the gateway's Retry-After on a model at zero, else after the backoff."""
        if self.retry_after is not None:
            return _spread(self.retry_after, 0.0, 0.0, within)
        return _spread(0.0, self.client.backoff(k), JITTER, within)

    def enter(self, admitted: float) -> None:
        self.entered.append(self.entered[-1] + admitted)

    def time_out(self, t: int, queue: float) -> float:
        """The queued part of the requests of second t - deadline (older ones left before): it leaves now."""
        s = t - self.deadline
        if s < 0:
            return 0.0
        gone = queue - (self.entered[t] - self.entered[s + 1])
        if gone <= LEFTOVER:
            return 0.0
        self._fail(s, t, gone, self.after_timeout)
        self.timed_out[t] = gone
        return gone

    def evict(self, t: int, queue: float, dispatched: float) -> float:
        """The requests of second t - ttl_deadline (and older) still in the picker, beyond the `dispatched`
        at the queue's head (vLLM's Q per Ready pod): the picker answers them now, 503 with no pod, else 429."""
        if self.ttl_deadline is None or t < self.ttl_deadline:
            return 0.0
        s = t - self.ttl_deadline
        gone = queue - (self.entered[t] - self.entered[s + 1]) - dispatched
        if gone <= LEFTOVER:
            return 0.0
        self._fail(s, t, gone, self.after_503_ttl if dispatched == 0 else self.after_timeout)
        self.evicted[t] = gone
        return gone

    def seconds(
        self,
        queue_start: np.ndarray,
        capacity: np.ndarray,
        admitted: np.ndarray,
        room: np.ndarray,
        ready: np.ndarray,
        dispatched: np.ndarray,
    ) -> Seconds:
        """The loop's record with the attempts, timeouts and evictions it saw, for `fates`."""
        again = np.array(self.resent[: len(ready)])
        fresh = np.asarray(self.sent[0], dtype=np.float64)
        return Seconds(
            queue_start, capacity, fresh + again, again, admitted, room, self.timed_out, ready,
            self.evicted, dispatched,
        )  # fmt: skip

    def shed(self, t: int, shed: float, no_replica: bool) -> None:
        self._fail(t, t, shed, self.after_503 if no_replica else self.after_429)

    def _fail(self, s: int, t: int, failed: float, spreads: list[list[tuple[int, float]]]) -> None:
        """`failed` of the attempts arriving in second s failed in second t, each attempt number alike."""
        total = self.sent[0][s] + self.resent[s]
        if total <= 0:
            return
        for k, spread in enumerate(spreads):
            again = failed * self.sent[k][s] / total
            if again > 0:
                for j, share in spread:
                    self.sent[k + 1][t + j] += again * share
                    self.resent[t + j] += again * share


@dataclass(frozen=True)
class Seconds:
    """What the loop recorded each second, which the requests' own attempts read (`fates`)."""

    queue_start: np.ndarray  # waiting at the start of the second, after its timeouts left
    capacity: np.ndarray  # requests/s the Ready replicas admit
    arrived: np.ndarray  # first sends and retries
    resent: np.ndarray  # retries
    admitted: np.ndarray  # let into the queue (not shed)
    room: np.ndarray  # what the gateway lets in (inf without it)
    timed_out: np.ndarray  # left the queue at the start of the second
    ready: np.ndarray
    evicted: np.ndarray  # left the picker at their TTL at the start of the second
    dispatched: np.ndarray  # the queue's head past the picker (vLLM's Q per Ready pod): never evicted


@dataclass(frozen=True)
class Fates:
    # first send to admission to a replica, every attempt's wait and delay included; 0 if failed
    wait: np.ndarray
    failed: np.ndarray  # the last attempt was shed or timed out: no token
    # still waiting, or its retry not yet due, when the simulated time ends (wait: to the end)
    never: np.ndarray
    shed: np.ndarray  # answered 429/503 at least once
    timeouts: int  # attempts given up at the client's timeout
    retries: int  # attempts after the first


class _Fifo:
    """When a request `ahead` others in the queue at time s + u is admitted: the queue drains at the Ready
    replicas' capacity, and by the requests ahead that time out or are evicted (at the start of the next
    second); whether the picker evicts it first, at the start of second s + ttl_deadline."""

    def __init__(self, sec: Seconds, deadline: int, ttl_deadline: int | None) -> None:
        self.removed = sec.timed_out + sec.evicted
        drain = sec.capacity + np.append(self.removed[1:], 0.0)
        self.cum = np.concatenate(([0.0], np.cumsum(drain)))
        self.capacity = sec.capacity
        self.dispatched = sec.dispatched
        self.deadline = deadline
        self.ttl_deadline = ttl_deadline

    def admitted(
        self, send: np.ndarray, s: np.ndarray, u: np.ndarray, ahead: np.ndarray, queued: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(wait, the evicted, the timed out, the never admitted: indices) of attempts sent at `send` (second
        s, u into it); only the `queued` (let in, with requests ahead or no Ready replica) are worked out: most
        find no queue."""
        T = len(self.capacity)
        wait = np.zeros(len(send))
        q = np.flatnonzero(queued)
        if not q.size:
            return wait, q, q, q
        cap, sq = self.capacity, s[q]
        level = self.cum[sq] + cap[sq] * u[q] + ahead[q]
        idx = np.searchsorted(self.cum, level, side="right")  # first boundary with cum > level
        done = np.full(level.shape, np.inf)
        ok = idx <= T
        i = np.clip(idx - 1, 0, T - 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            frac = np.where(cap[i] > 0, np.minimum((level - self.cum[i]) / cap[i], 1.0), 1.0)
        done[ok] = i[ok] + frac[ok]
        wait[q] = np.maximum(done - send[q], 0.0)
        evicted = np.zeros(q.size, dtype=bool)
        if self.ttl_deadline is not None:  # still behind more than the dispatched head at its TTL deadline
            d = sq + self.ttl_deadline
            at = np.minimum(d, T - 1)
            behind = level - (
                self.cum[at] - self.removed[at]
            )  # ahead of it then, before that second's removals
            evicted = (d < T) & (done >= d) & (behind >= self.dispatched[at] - LEFTOVER)
        deadline = sq + self.deadline
        timed = (done >= deadline) & (deadline < T) & ~evicted
        return wait, q[evicted], q[timed], q[~ok & ~timed & ~evicted]


def fates(t_arr: np.ndarray, sec: Seconds, retries: Retries, rng: np.random.Generator) -> Fates:
    """Each request's attempts (module doc), from its first send at t_arr (sorted)."""
    T = len(sec.capacity)
    fifo = _Fifo(sec, retries.deadline, retries.ttl_deadline)
    tick = np.minimum(t_arr.astype(np.int64), T - 1)
    first = np.searchsorted(t_arr, np.arange(T), side="left")
    rank = np.arange(len(t_arr)) - first[tick]  # rank of each request within its second
    u = t_arr - tick
    with np.errstate(divide="ignore", invalid="ignore"):
        resent_in = np.where(sec.arrived > 0, sec.resent * sec.admitted / sec.arrived, 0.0)
    # the gateway sheds the last first sends of a second that finds its queue full
    shed = rank >= np.rint(sec.admitted - resent_in)[tick]
    ahead = sec.queue_start[tick] + rank + (resent_in - sec.capacity)[tick] * u
    queued = ((ahead > 0) | (sec.capacity[tick] == 0)) & ~shed
    wait, evicted_i, timed, never_i = fifo.admitted(t_arr, tick, u, ahead, queued)
    failed, shed_any, never = shed.copy(), shed.copy(), np.zeros(len(t_arr), dtype=bool)
    how = np.where(shed, _SHED, _TIMED)  # how each failed attempt failed
    how[evicted_i] = _EVICTED
    failed[timed], failed[evicted_i], shed_any[evicted_i], never[never_i] = True, True, True, True
    timeouts, resent = len(timed), 0
    who = np.flatnonzero(failed)
    wait[who] = 0.0
    how, sent, s = how[who], t_arr[who], tick[who]
    for k in range(1, retries.client.max_attempts):
        if not who.size:
            break
        jittered = retries.client.backoff(k - 1) * (1 - JITTER * rng.random(who.size))
        r = _resend(how, sent, s, sec, retries, jittered)
        due_later = r >= T  # after the simulated time: no outcome
        failed[who[due_later]], never[who[due_later]] = False, True
        who, r = who[~due_later], r[~due_later]
        resent += who.size
        s = r.astype(np.int64)
        # its place among its second's arrivals: the loop sheds that second's attempts alike, first sends or not
        place = rng.random(who.size)
        shed_k = place * sec.arrived[s] >= sec.room[s]
        ahead = sec.queue_start[s] + (sec.admitted[s] - sec.capacity[s]) * place
        queued = ((ahead > 0) | (sec.capacity[s] == 0)) & ~shed_k
        wait_k, evicted_i, timed_i, never_i = fifo.admitted(r, s, place, ahead, queued)
        how_k = np.where(shed_k, _SHED, _SERVED)
        how_k[timed_i], how_k[evicted_i] = _TIMED, _EVICTED
        unfinished = np.zeros(who.size, dtype=bool)
        unfinished[never_i] = True
        served = (how_k == _SERVED) & ~unfinished
        wait[who[served]] = r[served] + wait_k[served] - t_arr[who[served]]
        failed[who[served | unfinished]], never[who[unfinished]] = False, True
        shed_any[who[(how_k == _SHED) | (how_k == _EVICTED)]] = True
        timeouts += len(timed_i)
        again = (how_k != _SERVED) & ~unfinished
        who, how, sent, s = who[again], how_k[again], r[again], s[again]
    wait[never] = T - t_arr[never]
    return Fates(wait, failed, never, shed_any, timeouts, resent)


_SERVED, _SHED, _EVICTED, _TIMED = range(4)


def _resend(
    how: np.ndarray, sent: np.ndarray, s: np.ndarray, sec: Seconds, retries: Retries, backoff: np.ndarray
) -> np.ndarray:
    """When each failed attempt is sent again. Shed on arrival: with no Ready pod the picker's 503 comes at once
    (past its bound), else its 429 at the TTL; evicted: at its TTL deadline, a 503 if no pod is Ready then;
    timed out: at the client's timeout. A 503 is re-sent after the Retry-After on a model at zero's routes, all
    else after the client's backoff; a shed no earlier than the next second (the loop served the shed's)."""
    evicted_at = s + (retries.ttl_deadline or 0)
    alone = sec.ready[s] == 0
    fail_at = np.select(
        [how == _SHED, how == _EVICTED],
        [np.where(alone, sent, sent + retries.hold), evicted_at],
        s + retries.deadline,
    )
    # nothing dispatched at the eviction: no Ready pod (the loop's test); the day's last second for an eviction
    # due after the day ends (its retry is then due after it too, so it gets no outcome: `fates`)
    empty = sec.dispatched[np.minimum(evicted_at, len(sec.dispatched) - 1)] == 0
    no_pod = np.select([how == _SHED, how == _EVICTED], [alone, empty], False)
    after = np.where(no_pod & (retries.retry_after is not None), retries.retry_after or 0.0, backoff)
    r = fail_at + after
    return np.where(how == _SHED, np.maximum(r, np.floor(sent) + 1), r)
