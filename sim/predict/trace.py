"""Chrome / Perfetto trace of a prediction (the JSON "Trace Event Format" that
chrome://tracing and ui.perfetto.dev open).

One process per pipeline stage (its first GPU: tp 0 of DP replica 0). Threads:
``compute`` — every forward/backward pass of every micro-batch (chunk and micro-batch in
``args``); ``kernels (micro-batch 0)`` — the first forward and backward passes of the
stage expanded into their kernels and collectives, as they run one after another;
``dp + optimizer`` — the gradient reduction (from its start, overlapped or not), the
optimizer step and the ZeRO parameter all-gather. Times in microseconds, complete
events (``"ph": "X"``).

Example::

    >>> ev = [{"ph": "X", "ts": 0.0, "dur": 1.0, "pid": 0, "tid": 0, "name": "F"}]
    >>> sorted(trace_document(ev))
    ['displayTimeUnit', 'traceEvents']
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sim.predict.breakdown import pretty_op
from sim.predict.predict import Prediction

US = 1e6
THREADS = {"compute": 0, "kernels": 1, "dp": 2}


def trace_document(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The JSON object around the events."""
    return {"traceEvents": events, "displayTimeUnit": "ms"}


def _meta(pid: int, stage: int, rank: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"ph": "M", "pid": pid, "name": "process_name",
                                  "args": {"name": f"stage {stage} (rank {rank})"}},
                                 {"ph": "M", "pid": pid, "name": "process_sort_index", "args": {"sort_index": stage}}]
    names = {"compute": "compute", "kernels": "kernels (micro-batch 0)", "dp": "dp + optimizer"}
    for key, tid in THREADS.items():
        out.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_name", "args": {"name": names[key]}})
    return out


def _x(name: str, cat: str, start_s: float, dur_s: float, pid: int, tid: int, **args: Any) -> dict[str, Any]:
    return {"ph": "X", "name": name, "cat": cat, "ts": start_s * US, "dur": max(dur_s, 0.0) * US,
            "pid": pid, "tid": tid, "args": args}


def trace_events(r: Prediction) -> list[dict[str, Any]]:
    """Every event of the trace (module docstring)."""
    j = r.job
    stride = j.parallel.tp * j.parallel.cp * j.parallel.dp
    ev: list[dict[str, Any]] = []
    expanded: set[tuple[int, str]] = set()
    for s in range(j.parallel.pp):
        ev += _meta(s, s, s * stride)
    for op in r.pipeline.ops:
        name = f"{op.kind}{op.mb}" + (f".c{op.chunk}" if j.chunks > 1 else "")
        ev.append(_x(name, "forward" if op.kind == "F" else "backward", op.start_s, op.end_s - op.start_s,
                     op.stage, THREADS["compute"], microbatch=op.mb, chunk=op.chunk))
        key = (op.stage, op.kind)
        if op.mb == 0 and op.chunk == 0 and key not in expanded:
            expanded.add(key)
            sc = r.stages[op.stage]
            t = op.start_s
            for o in (sc.fwd_ops[0] if op.kind == "F" else sc.bwd_ops[0]):
                ev.append(_x(o.name, o.stream, t, o.seconds, op.stage, THREADS["kernels"],
                             kind=o.kind, full_us=o.full_s * US, layer_op=pretty_op(o.name)))
                t += o.seconds
    for s, tail in enumerate(r.tails):
        pid, tid = s, THREADS["dp"]
        if tail.dp_s > 0:
            ev.append(_x("dp gradient reduction", "dp", tail.dp_start_s, tail.dp_s, pid, tid,
                         exposed_us=tail.dp_exposed_s * US))
        opt_start = tail.end_s - tail.param_gather_s - tail.optimizer_s
        ev.append(_x("optimizer step", "compute", opt_start, tail.optimizer_s, pid, tid))
        if tail.param_gather_s > 0:
            ev.append(_x("zero param all-gather (exposed)", "dp", tail.end_s - tail.param_gather_s,
                         tail.param_gather_s, pid, tid))
    return ev


def write_trace(r: Prediction, path: Path) -> Path:
    """Write the trace JSON to ``path``."""
    path.write_text(json.dumps(trace_document(trace_events(r))))
    return path


__all__ = ["trace_document", "trace_events", "write_trace"]
