"""Pipeline schedules: 1F1B (PipeDream-Flush, Megatron's default) and interleaved 1F1B
(Megatron's virtual stages), simulated op by op so that uneven stages (the embedding on
the first, the LM head on the last) and the send/receive time are accounted, with the
critical path.

Each GPU runs its forward (F) and backward (B) passes of micro-batch chunks in
Megatron's order: 1F1B warms up with ``p − s − 1`` forwards on stage s, then alternates
one forward and one backward, then cools down; interleaved with v chunks warms up with
``2(p − s − 1) + (v − 1)·p`` forwards (chunk ``(k mod p·v) // p`` of micro-batch
``(k // p·v)·p + k mod p`` for the k-th). A forward waits for the same chunk of the
previous stage (the last stage of the previous chunk), a backward for the next stage's,
plus one send/receive time. The ideal bubble is ``(p − 1)/(m·v)`` of the busy time
(:func:`bubble_fraction`); with equal stages the simulation gives exactly
``(m·v + p − 1)·(t_f + t_b)/v``.

Example::

    >>> r = simulate_pipeline(p=4, m=8, v=1, fwd_s=[[1.0]] * 4, bwd_s=[[2.0]] * 4, p2p_s=0.0)
    >>> r.makespan_s, (8 + 4 - 1) * 3.0, bubble_fraction(4, 8, 1)
    (33.0, 33.0, 0.375)
    >>> r = simulate_pipeline(p=4, m=8, v=2, fwd_s=[[0.5, 0.5]] * 4, bwd_s=[[1.0, 1.0]] * 4, p2p_s=0.0)
    >>> r.makespan_s, (8 * 2 + 4 - 1) * 3.0 / 2
    (28.5, 28.5)
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class PipeOp:
    """One forward or backward pass of one chunk of one micro-batch on one stage;
    ``pred`` is the op whose end fixed this one's start (-1: none), ``via_p2p`` whether
    that was a transfer from another stage."""

    stage: int
    kind: str
    chunk: int
    mb: int
    start_s: float = 0.0
    end_s: float = 0.0
    pred: int = -1
    via_p2p: bool = False


@dataclass(slots=True)
class PipelineResult:
    """The simulated schedule: every op, the end of each stage's last op, the makespan."""

    ops: list[PipeOp]
    stage_end_s: list[float]
    makespan_s: float

    def critical_path(self) -> list[PipeOp]:
        """The chain of ops, first to last, whose ends fixed the makespan."""
        if not self.ops:
            return []
        i = max(range(len(self.ops)), key=lambda k: self.ops[k].end_s)
        chain = []
        while i >= 0:
            chain.append(self.ops[i])
            i = self.ops[i].pred
        return chain[::-1]


def bubble_fraction(p: int, m: int, v: int = 1) -> float:
    """Idle share of the ideal pipeline relative to its busy time: ``(p − 1)/(m·v)``."""
    return (p - 1) / (m * v)


def device_order(p: int, m: int, v: int, stage: int) -> list[tuple[str, int, int]]:
    """(kind, chunk, micro-batch) in the order GPU ``stage`` runs them."""
    total = m * v

    def unit(k: int, forward: bool) -> tuple[int, int]:
        chunk = (k % (p * v)) // p
        return (chunk if forward else v - 1 - chunk), (k // (p * v)) * p + k % p

    if v == 1:
        warm = min(p - stage - 1, m)
    else:
        warm = min(2 * (p - stage - 1) + (v - 1) * p, total)
    order: list[tuple[str, int, int]] = []
    f_next = b_next = 0
    for _ in range(warm):
        order.append(("F", *unit(f_next, True)))
        f_next += 1
    for _ in range(total - warm):
        order.append(("F", *unit(f_next, True)))
        f_next += 1
        order.append(("B", *unit(b_next, False)))
        b_next += 1
    while b_next < total:
        order.append(("B", *unit(b_next, False)))
        b_next += 1
    return order


def simulate_pipeline(p: int, m: int, v: int, fwd_s: list[list[float]], bwd_s: list[list[float]],
                      p2p_s: float) -> PipelineResult:
    """Simulate the schedule; ``fwd_s[stage][chunk]`` / ``bwd_s`` are one micro-batch's pass
    times, ``p2p_s`` one send/receive between stages."""
    orders = [device_order(p, m, v, s) for s in range(p)]
    ops: list[PipeOp] = []
    done: dict[tuple[str, int, int, int], int] = {}
    nxt = [0] * p
    last = [-1] * p
    free = [0.0] * p
    remaining = sum(len(o) for o in orders)
    while remaining:
        progress = False
        for s in range(p):
            while nxt[s] < len(orders[s]):
                kind, c, mb = orders[s][nxt[s]]
                if kind == "F":
                    dep = ("F", s - 1, c, mb) if s > 0 else (("F", p - 1, c - 1, mb) if c > 0 else None)
                elif s < p - 1:
                    dep = ("B", s + 1, c, mb)
                else:
                    dep = ("B", 0, c + 1, mb) if c < v - 1 else ("F", s, c, mb)
                if dep is not None and dep not in done:
                    break
                op = PipeOp(s, kind, c, mb, pred=last[s])
                start = free[s]
                if dep is not None:
                    d = ops[done[dep]]
                    cross = d.stage != s
                    ready = d.end_s + (p2p_s if cross else 0.0)
                    if ready > start or last[s] < 0:
                        start, op.pred, op.via_p2p = ready, done[dep], cross
                op.start_s = start
                op.end_s = start + (fwd_s[s][c] if kind == "F" else bwd_s[s][c])
                done[(kind, s, c, mb)] = len(ops)
                last[s] = len(ops)
                ops.append(op)
                free[s] = op.end_s
                nxt[s] += 1
                remaining -= 1
                progress = True
        if not progress:
            raise RuntimeError("pipeline schedule deadlocked (an order bug)")
    ends = [free[s] for s in range(p)]
    return PipelineResult(ops, ends, max(ends))


__all__ = ["PipeOp", "PipelineResult", "bubble_fraction", "device_order", "simulate_pipeline"]
