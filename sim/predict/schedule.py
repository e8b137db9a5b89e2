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

**Zero bubble, ZB-H1** (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024): the
backward splits into B (the input gradient, what the previous stage waits for) and W (the
weight gradient, which nobody waits for); stage s runs 1F1B's order with its first
stage runs 1F1B's F and B passes and a pending W whenever its next one is not ready yet
(:func:`simulate_zbh1`); the bubble drops from ``(p − 1)(F + B + W)`` to about
``(p − 1)(F + B − W)``, with 1F1B's activation memory (plus the inputs the pending W still
need, small against it).

**User-defined** (``parallel.schedule: custom``, ``parallel.schedule_file``): a YAML file
``stages: [[F0, F1, B0, F2, B1, ...], ...]`` — one list per stage, each token a pass kind
``F`` | ``B`` | ``W`` and a micro-batch, ``.c`` for a model chunk (``F3.1``). It is refused,
naming the stage and token, when it is not a schedule: a stage missing or extra, a token
that does not parse, a pass missing or repeated, a backward before its forward (or a W
before its B) on the same stage, W passes for some micro-batches and not others, or an
order that deadlocks across stages (:func:`validate_orders`). Its activation memory is the
most forwards a stage holds whose backward has not run (:func:`peak_in_flight`).

Example::

    >>> r = simulate_pipeline(p=4, m=8, v=1, fwd_s=[[1.0]] * 4, bwd_s=[[2.0]] * 4, p2p_s=0.0)
    >>> r.makespan_s, (8 + 4 - 1) * 3.0, bubble_fraction(4, 8, 1)
    (33.0, 33.0, 0.375)
    >>> r = simulate_pipeline(p=4, m=8, v=2, fwd_s=[[0.5, 0.5]] * 4, bwd_s=[[1.0, 1.0]] * 4, p2p_s=0.0)
    >>> r.makespan_s, (8 * 2 + 4 - 1) * 3.0 / 2
    (28.5, 28.5)
    >>> zb = simulate_zbh1(4, 8, [1.0] * 4, [2.0] * 4, [1.0] * 4, 0.0)
    >>> zb.makespan_s, 8 * 3.0 + 3 * (1.0 + 1.0 - 1.0)      # (p-1)(F + B - W) of bubble
    (27.0, 27.0)
    >>> validate_orders([["F0", "B0"], ["B0", "F0"]], p=2, m=1, v=1)
    Traceback (most recent call last):
    ...
    ValueError: stage 1: B0 before F0
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Optional


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


def device_order(p: int, m: int, v: int, stage: int, extra_warmup: int = 0) -> list[tuple[str, int, int]]:
    """(kind, chunk, micro-batch) in the order GPU ``stage`` runs them; ``extra_warmup``
    forwards more before the steady phase (Megatron-Core runs one more with the MoE
    all-to-all overlap: :mod:`sim.predict.a2a_overlap`).

    >>> device_order(2, 2, 1, 1), device_order(2, 2, 1, 1, extra_warmup=1)
    ([('F', 0, 0), ('B', 0, 0), ('F', 0, 1), ('B', 0, 1)], [('F', 0, 0), ('F', 0, 1), ('B', 0, 0), ('B', 0, 1)])
    """
    total = m * v

    def unit(k: int, forward: bool) -> tuple[int, int]:
        chunk = (k % (p * v)) // p
        return (chunk if forward else v - 1 - chunk), (k // (p * v)) * p + k % p

    if v == 1:
        warm = min(p - stage - 1 + extra_warmup, m)
    else:
        warm = min(2 * (p - stage - 1) + (v - 1) * p + extra_warmup, total)
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


Order = list[tuple[str, int, int]]


def zbh1_order(p: int, m: int, stage: int) -> Order:
    """The F/B order of ZB-H1 on ``stage`` (1F1B's); its W passes are placed as it runs
    (:func:`simulate_zbh1`)."""
    return device_order(p, m, 1, stage)


def simulate_zbh1(p: int, m: int, fwd_s: list[float], bwd_s: list[float], wgrad_s: list[float],
                  p2p_s: float) -> PipelineResult:
    """ZB-H1 (module docstring): each stage runs 1F1B's F and B passes (B = the input
    gradient, ``bwd − wgrad``); whenever its next F or B is not ready, it runs its oldest
    pending W (weight gradient) instead, and the rest after its last B. Events are taken
    in time order (the stage that is free first), so "not ready" is known exactly."""
    orders = [device_order(p, m, 1, s) for s in range(p)]
    ops: list[PipeOp] = []
    done: dict[tuple[str, int, int], int] = {}
    nxt, last, free = [0] * p, [-1] * p, [0.0] * p
    pending: list[list[int]] = [[] for _ in range(p)]
    heap = [(0.0, s) for s in range(p)]
    waiting: dict[tuple[str, int, int], list[int]] = {}

    def emit(s: int, kind: str, mb: int, start: float, dur: float, pred: int, via: bool) -> None:
        op = PipeOp(s, kind, 0, mb, start, start + dur, pred, via)
        done[(kind, s, mb)] = len(ops)
        last[s] = len(ops)
        ops.append(op)
        free[s] = op.end_s

    while heap:
        t, s = heapq.heappop(heap)
        if t < free[s]:
            continue
        if nxt[s] >= len(orders[s]):
            while pending[s]:
                mb = pending[s].pop(0)
                emit(s, "W", mb, free[s], wgrad_s[s], last[s], False)
            continue
        kind, _, mb = orders[s][nxt[s]]
        dep = (("F", s - 1, mb) if s > 0 else None) if kind == "F" else \
            (("B", s + 1, mb) if s < p - 1 else ("F", s, mb))
        ready, pred, via = free[s], last[s], False
        if dep is not None:
            di = done.get(dep)
            if di is None:
                if pending[s]:
                    emit(s, "W", pending[s].pop(0), free[s], wgrad_s[s], last[s], False)
                    heapq.heappush(heap, (free[s], s))
                else:
                    waiting.setdefault(dep, []).append(s)
                continue
            d = ops[di]
            cross = d.stage != s
            r = d.end_s + (p2p_s if cross else 0.0)
            if r > free[s] and pending[s] and r - free[s] >= wgrad_s[s]:
                emit(s, "W", pending[s].pop(0), free[s], wgrad_s[s], last[s], False)
                heapq.heappush(heap, (free[s], s))
                continue
            if r > ready or last[s] < 0:
                ready, pred, via = r, di, cross
        dur = fwd_s[s] if kind == "F" else bwd_s[s] - wgrad_s[s]
        emit(s, kind, mb, ready, dur, pred, via)
        if kind == "B":
            pending[s].append(mb)
        nxt[s] += 1
        heapq.heappush(heap, (free[s], s))
        for w in waiting.pop((kind, s, mb), []):
            heapq.heappush(heap, (max(free[w], free[s]), w))
    if len(ops) != 3 * p * m:
        raise RuntimeError("the ZB-H1 schedule did not complete (a simulator bug)")
    return PipelineResult(ops, list(free), max(free))


def parse_orders(stages: list[list[str]]) -> list[Order]:
    """Tokens ``F3`` / ``B3.1`` / ``W0`` → (kind, chunk, micro-batch); ``ValueError``
    naming the stage and token when one does not parse."""
    out = []
    for s, tokens in enumerate(stages):
        order: Order = []
        for tok in tokens:
            t = str(tok).strip()
            kind, rest = t[:1], t[1:]
            mb, _, ch = rest.partition(".")
            if kind not in ("F", "B", "W") or not mb.isdigit() or (ch and not ch.isdigit()):
                raise ValueError(f"stage {s}: {t!r} is not a pass (F|B|W, a micro-batch, '.chunk': F3, B3.1)")
            order.append((kind, int(ch or 0), int(mb)))
        out.append(order)
    return out


def validate_orders(stages: list, p: int, m: int, v: int) -> list[Order]:
    """Parse and check a user-defined schedule (module docstring); ``ValueError`` says why.
    Tokens may be strings or already-parsed tuples."""
    if len(stages) != p:
        raise ValueError(f"{len(stages)} stages given, the job has pp {p} (a stage is missing)"
                         if len(stages) < p else f"{len(stages)} stages given, the job has pp {p}")
    orders = parse_orders(stages) if stages and stages[0] and isinstance(stages[0][0], str) else stages
    for s, order in enumerate(orders):
        seen: set[tuple[str, int, int]] = set()
        for kind, c, mb in order:
            if c >= v or mb >= m:
                raise ValueError(f"stage {s}: {kind}{mb}.{c} is beyond {m} micro-batches x {v} chunks")
            if (kind, c, mb) in seen:
                raise ValueError(f"stage {s}: {kind}{mb}{f'.{c}' if v > 1 else ''} twice")
            if kind == "B" and ("F", c, mb) not in seen:
                raise ValueError(f"stage {s}: B{mb}{f'.{c}' if v > 1 else ''} before F{mb}{f'.{c}' if v > 1 else ''}")
            if kind == "W" and ("B", c, mb) not in seen:
                raise ValueError(f"stage {s}: W{mb} before B{mb}")
            seen.add((kind, c, mb))
        for kind in ("F", "B"):
            missing = [(c, mb) for c in range(v) for mb in range(m) if (kind, c, mb) not in seen]
            if missing:
                c, mb = missing[0]
                raise ValueError(f"stage {s}: {kind}{mb}{f'.{c}' if v > 1 else ''} missing "
                                 f"({len(missing)} {kind} passes missing)")
        ws = {(c, mb) for kind, c, mb in order if kind == "W"}
        if ws and len(ws) != m * v:
            raise ValueError(f"stage {s}: W passes for {len(ws)} of {m * v} micro-batch chunks (all or none)")
    try:
        simulate_pipeline(p, m, v, [[1.0] * v] * p, [[2.0] * v] * p, 0.0, orders=orders, wgrad_s=[[1.0] * v] * p)
    except RuntimeError as exc:
        raise ValueError(str(exc)) from None
    return orders


def peak_in_flight(order: Order) -> int:
    """The most forwards a stage holds whose backward has not run yet."""
    held = peak = 0
    for kind, _, _ in order:
        if kind == "F":
            held += 1
            peak = max(peak, held)
        elif kind == "B":
            held -= 1
    return peak


def _dependency(kind: str, s: int, c: int, mb: int, p: int, v: int) -> Optional[tuple[str, int, int, int]]:
    """The pass that op (kind, stage s, chunk c, micro-batch mb) waits for (None: none)."""
    if kind == "F":
        return ("F", s - 1, c, mb) if s > 0 else (("F", p - 1, c - 1, mb) if c > 0 else None)
    if kind == "W":
        return ("B", s, c, mb)
    if s < p - 1:
        return ("B", s + 1, c, mb)
    return ("B", 0, c + 1, mb) if c < v - 1 else ("F", s, c, mb)


def simulate_pipeline(p: int, m: int, v: int, fwd_s: list[list[float]], bwd_s: list[list[float]],
                      p2p_s: float, orders: Optional[list[Order]] = None,
                      wgrad_s: Optional[list[list[float]]] = None,
                      combined_s: Optional[list[list[list[float]]]] = None) -> PipelineResult:
    """Simulate the schedule; ``fwd_s[stage][chunk]`` / ``bwd_s`` are one micro-batch's pass
    times, ``p2p_s`` one send/receive between stages; ``orders``: each stage's
    (kind, chunk, micro-batch) order (default Megatron's, :func:`device_order`); an order
    with W passes runs B as ``bwd − wgrad`` and W as ``wgrad_s`` (the weight gradients).
    ``combined_s[stage][f_chunk][b_chunk]``: Megatron-Core's combined 1F1B (MoE all-to-all
    overlap, :mod:`sim.predict.a2a_overlap`): one more warm-up forward, and every F followed
    by a B in a stage's order runs as one op of that length once both inputs are there (the
    F op spans it, the B op ends with it).

    >>> r = simulate_pipeline(1, 3, 1, [[1.0]], [[2.0]], 0.0, combined_s=[[[2.5]]])
    >>> r.makespan_s, 1.0 + 2 * 2.5 + 2.0          # F0, (F1+B0), (F2+B1), B2
    (8.0, 8.0)
    """
    extra = 1 if combined_s is not None else 0
    orders = orders or [device_order(p, m, v, s, extra) for s in range(p)]
    split = [any(k == "W" for k, _, _ in o) for o in orders]
    wg = wgrad_s or [[0.0] * v for _ in range(p)]
    ops: list[PipeOp] = []
    done: dict[tuple[str, int, int, int], int] = {}
    nxt = [0] * p
    last = [-1] * p
    free = [0.0] * p
    remaining = sum(len(o) for o in orders)
    while remaining:
        progress = False
        for s in range(p):
            order = orders[s]
            i = nxt[s]
            n_s = len(order)
            while i < n_s:
                kind, c, mb = order[i]
                dep = _dependency(kind, s, c, mb, p, v)
                if dep is not None:
                    di = done.get(dep)
                    if di is None:
                        break
                if combined_s is not None and kind == "F" and i + 1 < n_s and order[i + 1][0] == "B":
                    _, bc, bmb = order[i + 1]
                    bdep = _dependency("B", s, bc, bmb, p, v)
                    if bdep is not None and bdep not in done:
                        break
                    deps = [x for x in (dep, bdep) if x is not None]
                    start, pred, via = free[s], last[s], False
                    for x in deps:
                        d = ops[done[x]]
                        ready = d.end_s + (p2p_s if d.stage != s else 0.0)
                        if ready > start or last[s] < 0:
                            start, pred, via = ready, done[x], d.stage != s
                    end = start + combined_s[s][c][bc]
                    done[("F", s, c, mb)] = len(ops)
                    ops.append(PipeOp(s, "F", c, mb, start, end, pred, via))
                    done[("B", s, bc, bmb)] = len(ops)
                    ops.append(PipeOp(s, "B", bc, bmb, end, end, len(ops) - 1, False))
                    last[s] = len(ops) - 1
                    free[s] = end
                    i += 2
                    remaining -= 2
                    progress = True
                    continue
                op = PipeOp(s, kind, c, mb, pred=last[s])
                start = free[s]
                if dep is not None:
                    d = ops[di]
                    cross = d.stage != s
                    ready = d.end_s + (p2p_s if cross else 0.0)
                    if ready > start or last[s] < 0:
                        start, op.pred, op.via_p2p = ready, di, cross
                op.start_s = start
                if kind == "F":
                    dur = fwd_s[s][c]
                elif kind == "W":
                    dur = wg[s][c]
                else:
                    dur = bwd_s[s][c] - (wg[s][c] if split[s] else 0.0)
                op.end_s = start + dur
                done[(kind, s, c, mb)] = len(ops)
                last[s] = len(ops)
                ops.append(op)
                free[s] = op.end_s
                i += 1
                remaining -= 1
                progress = True
            nxt[s] = i
        if not progress:
            waits = [f"stage {s} at {orders[s][nxt[s]][0]}{orders[s][nxt[s]][2]}" for s in range(p) if nxt[s] < len(orders[s])]
            raise RuntimeError(f"the schedule deadlocks: {', '.join(waits[:4])} wait on each other")
    ends = [free[s] for s in range(p)]
    return PipelineResult(ops, ends, max(ends))


__all__ = ["Order", "PipeOp", "PipelineResult", "bubble_fraction", "device_order", "parse_orders", "peak_in_flight",
           "simulate_pipeline", "simulate_zbh1", "validate_orders", "zbh1_order"]
