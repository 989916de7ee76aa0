"""The replica's step loop run request by request: discrete events over vLLM's engine steps.

The steady-state table (serving/replica.py) answers what a replica does at a rate it holds for long. A
benchmark client that sends a wave of C prompts, a burst, or a finite run is not a steady state: the running
set fills and drains within the run. This module runs the same engine on such a run, one step at a time,
with the same physics per step (ReplicaModel.step_seconds: t_0 + TP all-reduces + max(weight read,
tokens x k) + the KV read of every decoding sequence's context) and vLLM's scheduler:

- V1 (chunked prefill): every step carries one token for each decoding sequence, then the remaining chunks of
  prompts being prefilled, then waiting prompts FCFS while `max_num_seqs` and the KV cache allow, within the
  step's `max_num_batched_tokens` (vllm/v1/core/sched/scheduler.py `schedule()`). With async scheduling a
  step's batch is formed while the step before it runs, so a request that arrives during step N starts in
  N + 2 (vllm-project/vllm#19970).
- V0 (no chunked prefill, vLLM <= 0.5): a step is prefill-only when a waiting prompt can be admitted (whole
  prompts FCFS, up to the token budget, KV blocks for the whole prompt), else a decode step of every running
  sequence (vllm/core/scheduler.py `_schedule_default`).
- KV cache: blocks of 16 tokens. A decoding sequence that needs a block when none is free preempts the newest
  running sequence (itself if it is the newest), which frees its blocks and waits at the head of the queue to
  recompute its prompt and the tokens it generated (both schedulers' recompute preemption).

A prompt's first token is sampled by the step that finishes its prefill; each later step gives one token. The
API server's per-request time (REQUEST_OVERHEAD_SECONDS) delays the request's arrival at the scheduler.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from llm_platform.simulator.serving.replica import ReplicaModel
from llm_platform.simulator.serving.replica_config import KV_BLOCK_TOKENS, REQUEST_OVERHEAD_SECONDS


@dataclass
class _Seq:
    i: int  # request index
    todo: float  # prompt (or recompute) tokens still to prefill
    context: float  # tokens whose KV the sequence holds
    left: int  # tokens still to generate
    prompt: float
    blocks: int = 0
    running: bool = False


@dataclass(frozen=True)
class Trace:
    """What each request of a run saw (seconds from the run's start)."""

    sent: np.ndarray
    first_token: np.ndarray
    done: np.ndarray
    preemptions: int

    @property
    def ttft(self) -> np.ndarray:
        return self.first_token - self.sent

    @property
    def latency(self) -> np.ndarray:
        return self.done - self.sent


def run(model: ReplicaModel, sent: np.ndarray, prompts: np.ndarray, outputs: np.ndarray) -> Trace:
    """Serve requests sent at `sent` (seconds) with the given prompt and output lengths (module doc)."""
    n = len(sent)
    enter = np.asarray(sent, dtype=np.float64) + REQUEST_OVERHEAD_SECONDS
    order = np.argsort(enter, kind="stable")
    max_seqs, budget = model.limits
    chunked = model.engine.chunked_prefill
    lag = chunked and model.engine.async_scheduling
    hit = model.engine.prefix_hit_rate
    total_blocks = model.kv_capacity_tokens // KV_BLOCK_TOKENS
    free = total_blocks
    first = np.full(n, np.nan)
    done = np.full(n, np.nan)
    waiting: deque[_Seq] = deque()
    running: list[_Seq] = []
    t, formed, nxt, preemptions = 0.0, -math.inf, 0, 0

    def preempt() -> None:
        nonlocal free, preemptions
        victim = running.pop()
        victim.running = False
        free += victim.blocks
        generated = int(outputs[victim.i]) - victim.left
        victim.todo = victim.prompt * (1 - hit) + generated
        victim.context, victim.blocks = victim.prompt * hit, 0
        waiting.appendleft(victim)
        preemptions += 1

    while nxt < n or waiting or running:
        if not waiting and not running:  # idle: the next arrival starts a step at once
            t = max(t, float(enter[order[nxt]]))
            formed = t
        cutoff = formed if lag else t  # async: step N's batch was formed when step N - 1 started
        while nxt < n and enter[order[nxt]] <= cutoff:
            i = int(order[nxt])
            p = float(prompts[i])
            waiting.append(_Seq(i, p * (1 - hit), p * hit, int(outputs[i]), p))
            nxt += 1
        decoding: list[_Seq] = []
        chunks: list[tuple[_Seq, float]] = []
        tokens = 0.0
        prefill_step = False
        if not chunked and waiting:
            prefill_step = _admit_v0(waiting, running, chunks, max_seqs, budget, free, total_blocks)
            for s, c in chunks:
                need = _blocks(s.context + c) - s.blocks
                free -= need
                s.blocks += need
                tokens += c
        if not prefill_step:
            for s in list(running):
                if s.todo > 0 or not s.running:
                    continue
                if s.blocks * KV_BLOCK_TOKENS < s.context + 1:  # the token it decodes needs a new block
                    while free == 0 and s.running:
                        preempt()
                    if not s.running:
                        continue
                    free -= 1
                    s.blocks += 1
                decoding.append(s)
            tokens = float(len(decoding))
            if chunked:
                tokens, free = _chunks_v1(waiting, running, chunks, tokens, max_seqs, budget, free)
        if tokens == 0:  # nothing schedulable until a request arrives
            if nxt >= n:
                raise ValueError("a prompt does not fit in the replica's KV cache")
            t = float(enter[order[nxt]])
            formed = t
            continue
        context = sum(s.context for s in decoding)
        step = model.step_seconds(tokens, 0.0 if prefill_step else context)
        formed, t = t, t + step
        running, freed = _advance(decoding, chunks, running, t, first, done)
        free += freed
    return Trace(np.asarray(sent, dtype=np.float64), first, done, preemptions)


def _chunks_v1(
    waiting: deque[_Seq],
    running: list[_Seq],
    chunks: list[tuple[_Seq, float]],
    tokens: float,
    max_seqs: int,
    budget: int,
    free: int,
) -> tuple[float, int]:
    """V1's chunked prefill after the step's decodes: the rest of the running prompts' prefills, then waiting
    prompts FCFS while `max_seqs` and the KV cache allow, within the token budget (module doc). Appends to
    `chunks` and moves admitted prompts from `waiting` to `running`; the step's tokens and the free blocks."""
    for s in running:
        if s.todo > 0 and tokens < budget:
            c = min(s.todo, budget - tokens)
            need = _blocks(s.context + c) - s.blocks
            if need > free:
                break
            free -= need
            s.blocks += need
            chunks.append((s, c))
            tokens += c
    while waiting and tokens < budget and len(running) < max_seqs:
        s = waiting[0]
        c = min(s.todo, budget - tokens)
        need = _blocks(s.context + c) - s.blocks
        if need > free:
            break
        waiting.popleft()
        running.append(s)
        s.running = True
        free -= need
        s.blocks += need
        chunks.append((s, c))
        tokens += c
    return tokens, free


def _advance(
    decoding: list[_Seq],
    chunks: list[tuple[_Seq, float]],
    running: list[_Seq],
    t: float,
    first: np.ndarray,
    done: np.ndarray,
) -> tuple[list[_Seq], int]:
    """A step ending at `t`: one token per decoding sequence, the chunks prefilled (a finished prefill gives
    the first token), the finished sequences out. The sequences still running and the blocks freed."""
    for s in decoding:
        s.context += 1
        s.left -= 1
    for s, c in chunks:
        s.todo -= c
        s.context += c
        if s.todo <= 1e-9:
            s.todo = 0.0
            s.left -= 1
            if math.isnan(first[s.i]):
                first[s.i] = t
    finished = [s for s in running if s.left <= 0 and s.todo == 0]
    if not finished:
        return running, 0
    for s in finished:
        done[s.i] = t
    return [s for s in running if not (s.left <= 0 and s.todo == 0)], sum(s.blocks for s in finished)


def _blocks(tokens: float) -> int:
    """KV blocks that hold `tokens` tokens."""
    return math.ceil(tokens / KV_BLOCK_TOKENS)


def _admit_v0(
    waiting: deque[_Seq],
    running: list[_Seq],
    chunks: list[tuple[_Seq, float]],
    max_seqs: int,
    budget: int,
    free: int,
    total_blocks: int,
) -> bool:
    """V0's prefill step: whole prompts FCFS within the token budget, the running cap and the KV blocks less
    vLLM's 1 % watermark (vllm/core/block_manager_v1.py `can_allocate`). True if any was admitted."""
    tokens = 0.0
    watermark = 0.01 * total_blocks
    while waiting and len(running) < max_seqs:
        s = waiting[0]
        need = math.ceil((s.context + s.todo) / KV_BLOCK_TOKENS)
        if tokens + s.todo > budget or free - need < watermark:
            break
        waiting.popleft()
        running.append(s)
        s.running = True
        chunks.append((s, s.todo))
        tokens += s.todo
        free -= need
    return bool(chunks)
